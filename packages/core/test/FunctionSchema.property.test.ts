// Function schemas have two paths: a fast one from the schema's AST for the
// common shapes, and the general one through Effect's JSONSchema.make. They
// must give the same text to the model, byte for byte, for every schema the
// fast path accepts; and the fast path must accept the shapes it is for.
// (White-box: the two paths are internal, so this imports them directly.)
import { describe, expect, it } from "@effect/vitest"
import { FastCheck as fc, Schema } from "effect"
import { fastStrict } from "../src/internal/fastSchema.js"
import { general } from "../src/internal/functionSchema.js"
import { propertyRuns } from "../../../test/propertyRuns.js"

type Any = Schema.Schema<any, any>

const descriptions = fc.constantFrom(undefined, "What it is.", "a string", "a number", "Länge 🙂")

const describe_ = (schema: Any, description: string | undefined, title: boolean): Any =>
  description === undefined && !title
    ? schema
    : schema.annotations({ ...(description !== undefined ? { description } : {}), ...(title ? { title: "T" } : {}) })

const leaf = fc.tuple(fc.constantFrom<Any>(Schema.String, Schema.Number, Schema.Boolean), descriptions, fc.boolean())
  .map(([schema, description, title]) => describe_(schema, description, title))

// Shapes the fast path is for: structs of leaves, arrays and structs, with
// required, optional and exact-optional fields, described or not.
const fieldName = fc.constantFrom("a", "b", "query", "limit", "x_y", "constructor")
const { supported } = fc.letrec<{ supported: Any; struct: Any }>((tie) => ({
  supported: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    leaf,
    tie("struct"),
    fc.tuple(tie("supported"), descriptions).map(([item, description]) =>
      describe_(Schema.Array(item), description, false)
    )
  ),
  struct: fc.tuple(
    fc.uniqueArray(fc.tuple(fieldName, tie("supported"), fc.constantFrom("required", "optional", "exact")), {
      minLength: 1,
      maxLength: 4,
      selector: ([name]) => name
    }),
    descriptions
  ).map(([fields, description]) =>
    describe_(
      Schema.Struct(Object.fromEntries(fields.map(([name, schema, kind]) => [
        name,
        kind === "required" ? schema
          : kind === "optional" ? Schema.optional(schema) : Schema.optionalWith(schema, { exact: true })
      ]))),
      description,
      false
    )
  )
}))

const root = (field: fc.Arbitrary<Any>) =>
  fc.uniqueArray(fc.tuple(fieldName, field, fc.boolean()), { minLength: 1, maxLength: 4, selector: ([name]) => name })
    .map((fields) =>
      Schema.Struct(
        Object.fromEntries(
          fields.map(([name, schema, optional]) => [name, optional ? Schema.optional(schema) : schema])
        )
      )
    )

// Shapes the fast path leaves to the general one, mixed in.
const other = fc.constantFrom<Any>(
  Schema.Literal("a", "b"),
  Schema.Int,
  Schema.String.pipe(Schema.minLength(2)),
  Schema.NullOr(Schema.String),
  Schema.Record({ key: Schema.String, value: Schema.Number }),
  Schema.Tuple(Schema.String, Schema.Number),
  Schema.String.annotations({ examples: ["x"] }),
  Schema.NumberFromString
)

describe("function schemas: the fast path and the general path agree", () => {
  it("every supported shape takes the fast path, with the general path's exact text", () => {
    fc.assert(
      fc.property(root(supported), (schema) => {
        const fast = fastStrict(schema.ast)
        const slow = general(schema)
        expect(fast).toBeDefined()
        expect(slow.violations).toEqual([])
        expect(JSON.stringify(fast)).toBe(JSON.stringify(slow.parameters))
      }),
      { numRuns: propertyRuns(150) }
    )
  })

  it("mixed with other shapes, the fast path either declines or agrees", () => {
    let declined = 0
    const runs = propertyRuns(150)
    fc.assert(
      fc.property(
        root(fc.oneof(supported, other, fc.tuple(supported, other).map(([a, b]) => Schema.Struct({ a, b })))),
        (schema) => {
          const fast = fastStrict(schema.ast)
          if (fast === undefined) return void declined++
          expect(JSON.stringify(fast)).toBe(JSON.stringify(general(schema).parameters))
        }
      ),
      { numRuns: runs }
    )
    // At least one case in ten is left to the general path.
    expect(declined).toBeGreaterThan(runs / 10)
  })

  it("nesting deeper than strict mode allows is left to the general path, which says so", () => {
    let schema: Any = Schema.Struct({ leaf: Schema.String })
    for (let level = 0; level < 11; level++) schema = Schema.Struct({ inner: schema })
    expect(fastStrict(schema.ast)).toBeUndefined()
    expect(general(schema).violations.join("\n")).toContain("nested deeper than 10 objects")
  })
})
