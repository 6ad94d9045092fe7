// Function schemas have two paths: a fast one from the schema's AST for the
// common shapes, and the general one through the schema's JSON Schema
// (internal/jsonSchema.ts) made strict. They must give the same text to the
// model, byte for byte, for every schema the fast path accepts; and the fast
// path must accept the shapes it is for.
// (White-box: the two paths are internal, so this imports them directly.)
import { describe, expect, it } from "@effect/vitest"
import { Arbitrary, Effect, Schema } from "effect"
import { fastStrict } from "../src/internal/fastSchema.js"
import { general } from "../src/internal/functionSchema.js"
import { propertyRuns } from "../../../test/propertyRuns.js"

type Any = Schema.Top

// One of `values`, each as likely.
const pick = <A>(values: ReadonlyArray<A>): Arbitrary.Arbitrary<A> =>
  Arbitrary.map(
    Arbitrary.schema(Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: values.length - 1 }))),
    (i) => values[i]!
  )
const oneOf = <A>(arbitraries: ReadonlyArray<Arbitrary.Arbitrary<A>>): Arbitrary.Arbitrary<A> =>
  Arbitrary.flatMap(pick(arbitraries), (arbitrary) => arbitrary)
const boolean = Arbitrary.schema(Schema.Boolean)

// Fields with names once each (the first of a name is kept).
const fieldsOf = <F extends readonly [string, ...Array<unknown>]>(
  field: Arbitrary.Arbitrary<F>
): Arbitrary.Arbitrary<ReadonlyArray<F>> =>
  Arbitrary.map(
    Arbitrary.array(field, { minLength: 1, maxLength: 4 }),
    (fields) => fields.filter(([name], i) => fields.findIndex(([other]) => other === name) === i)
  )

const structOf = (fields: ReadonlyArray<readonly [string, Any]>): Any =>
  Schema.Struct(Object.fromEntries(fields) as Schema.Struct.Fields)

const descriptions = pick([undefined, "What it is.", "a string", "a number", "Länge 🙂"])

const describe_ = (schema: Any, description: string | undefined, title: boolean): Any =>
  description === undefined && !title
    ? schema
    : schema.annotate({ ...(description !== undefined ? { description } : {}), ...(title ? { title: "T" } : {}) })

const leaf = Arbitrary.map(
  Arbitrary.all([pick<Any>([Schema.String, Schema.Number, Schema.Boolean]), descriptions, boolean]),
  ([schema, description, title]) => describe_(schema, description, title)
)

// Shapes the fast path is for: structs of leaves, arrays and structs, with
// required, optional and exact-optional fields, described or not; `depth`
// more levels at most.
const fieldName = pick(["a", "b", "query", "limit", "x_y", "constructor"])
const supported = (depth: number): Arbitrary.Arbitrary<Any> =>
  depth === 0 ? leaf : oneOf([
    leaf,
    leaf,
    struct(depth - 1),
    Arbitrary.map(
      Arbitrary.all([supported(depth - 1), descriptions]),
      ([item, description]) => describe_(Schema.Array(item), description, false)
    )
  ])
const struct = (depth: number): Arbitrary.Arbitrary<Any> =>
  Arbitrary.map(
    Arbitrary.all([
      fieldsOf(Arbitrary.all([fieldName, supported(depth), pick(["required", "optional", "exact"] as const)])),
      descriptions
    ]),
    ([fields, description]) =>
      describe_(
        structOf(fields.map(([name, schema, kind]) => [
          name,
          kind === "required" ? schema : kind === "optional" ? Schema.optional(schema) : Schema.optionalKey(schema)
        ])),
        description,
        false
      )
  )

const root = (field: Arbitrary.Arbitrary<Any>) =>
  Arbitrary.map(
    fieldsOf(Arbitrary.all([fieldName, field, boolean])),
    (fields) => structOf(fields.map(([name, schema, optional]) => [name, optional ? Schema.optional(schema) : schema]))
  )

// Shapes the fast path leaves to the general one, mixed in.
const other = pick<Any>([
  Schema.Literals(["a", "b"]),
  Schema.Int,
  Schema.String.check(Schema.isMinLength(2)),
  Schema.NullOr(Schema.String),
  Schema.Record(Schema.String, Schema.Number),
  Schema.Tuple([Schema.String, Schema.Number]),
  Schema.String.annotate({ examples: ["x"] }),
  Schema.NumberFromString
])

const mixed = root(
  oneOf([
    supported(3),
    other,
    Arbitrary.map(Arbitrary.all([supported(3), other]), ([a, b]) => Schema.Struct({ a, b }))
  ])
)

describe("function schemas: the fast path and the general path agree", () => {
  it.prop(
    "every supported shape takes the fast path, with the general path's exact text",
    [root(supported(3))],
    ([schema]) => {
      const fast = fastStrict(schema.ast)
      const slow = general(schema)
      expect(fast).toBeDefined()
      expect(slow.violations).toEqual([])
      expect(JSON.stringify(fast)).toBe(JSON.stringify(slow.parameters))
    },
    { arbitrary: { runs: propertyRuns(150) } }
  )

  it.prop("mixed with other shapes, the fast path either declines or agrees", [mixed], ([schema]) => {
    const fast = fastStrict(schema.ast)
    if (fast !== undefined) expect(JSON.stringify(fast)).toBe(JSON.stringify(general(schema).parameters))
  }, { arbitrary: { runs: propertyRuns(150) } })

  it("mixed with other shapes, at least one case in ten is left to the general path", () => {
    const runs = propertyRuns(150)
    const schemas = Effect.runSync(Arbitrary.sampleEffect(mixed, { count: runs }))
    const declined = schemas.filter((schema) => fastStrict(schema.ast) === undefined).length
    expect(declined).toBeGreaterThan(runs / 10)
  })

  it("nesting deeper than strict mode allows is left to the general path, which says so", () => {
    let schema: Any = Schema.Struct({ leaf: Schema.String })
    for (let level = 0; level < 11; level++) schema = Schema.Struct({ inner: schema })
    expect(fastStrict(schema.ast)).toBeUndefined()
    expect(general(schema).violations.join("\n")).toContain("nested deeper than 10 objects")
  })
})
