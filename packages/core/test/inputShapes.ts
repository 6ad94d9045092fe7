// Random input shapes for tools, and inputs for them that are now and then
// bent (an excess key, a wrong type, a missing field, a null where an
// optional field is): shared by the property tests of the registry's paths
// and decoders.
import { FastCheck as fc, Schema } from "effect"

// Input shapes, described so that inputs can be made for them.
export type Shape =
  | {
    readonly kind: "string" | "number" | "boolean" | "literal" | "short" | "int" | "nullable" | "numberFromString"
  }
  | { readonly kind: "struct"; readonly fields: ReadonlyArray<readonly [string, Shape, boolean]> }
  | { readonly kind: "array"; readonly item: Shape }
  | { readonly kind: "union"; readonly members: readonly [Shape, Shape] }

const fieldName = fc.constantFrom("a", "b", "query", "limit", "constructor", "toString")
export const { shape } = fc.letrec<{ shape: Shape; struct: Shape }>((tie) => ({
  shape: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    fc.constantFrom<Shape>(
      { kind: "string" },
      { kind: "number" },
      { kind: "boolean" },
      { kind: "literal" },
      { kind: "short" },
      { kind: "int" },
      { kind: "nullable" },
      { kind: "numberFromString" }
    ),
    tie("struct"),
    tie("shape").map((item): Shape => ({ kind: "array", item })),
    fc.tuple(tie("struct"), tie("struct")).map(([a, b]): Shape => ({ kind: "union", members: [a, b] }))
  ),
  struct: fc.uniqueArray(fc.tuple(fieldName, tie("shape"), fc.boolean()), {
    maxLength: 4,
    selector: ([name]) => name
  }).map((fields): Shape => ({ kind: "struct", fields }))
}))
export const rootShape = fc.uniqueArray(fc.tuple(fieldName, shape, fc.boolean()), {
  maxLength: 4,
  selector: ([name]) => name
})
  .map((fields): Shape => ({ kind: "struct", fields }))

export const schemaOf = (shape: Shape): Schema.Schema<any, any> => {
  switch (shape.kind) {
    case "string":
      return Schema.String
    case "number":
      return Schema.Number
    case "boolean":
      return Schema.Boolean
    case "literal":
      return Schema.Literal("x", "y")
    case "short":
      return Schema.String.pipe(Schema.maxLength(2))
    case "int":
      return Schema.Int
    case "nullable":
      return Schema.NullOr(Schema.String)
    case "numberFromString":
      return Schema.NumberFromString
    case "array":
      return Schema.Array(schemaOf(shape.item))
    case "union":
      return Schema.Union(schemaOf(shape.members[0]), schemaOf(shape.members[1]))
    case "struct":
      return Schema.Struct(
        Object.fromEntries(shape.fields.map(([name, field, optional]) => {
          const schema = schemaOf(field)
          return [name, optional ? Schema.optional(schema) : schema]
        }))
      )
  }
}

// A value for the shape, bent by `dice` now and then: an excess key, a wrong
// type, a missing field, a null where an optional field is.
export const valueOf = (shape: Shape, dice: () => number): unknown => {
  const roll = dice()
  if (roll < 4) return roll < 2 ? 42 : "wrong"
  switch (shape.kind) {
    case "string":
      return "s"
    case "number":
      return roll % 3
    case "boolean":
      return roll % 2 === 0
    case "literal":
      return roll % 2 === 0 ? "x" : "y"
    case "short":
      return roll % 5 === 0 ? "long" : "ok"
    case "int":
      return roll % 5 === 0 ? 1.5 : roll
    case "nullable":
      return roll % 2 === 0 ? null : "n"
    case "numberFromString":
      return String(roll)
    case "array":
      return Array.from({ length: roll % 3 }, () => valueOf(shape.item, dice))
    case "union":
      return valueOf(shape.members[roll % 2]!, dice)
    case "struct": {
      const value: Record<string, unknown> = {}
      for (const [name, field, optional] of shape.fields) {
        const skip = dice()
        if (optional && skip < 25) continue
        if (optional && skip < 35) value[name] = null
        else if (skip < 3) continue
        else value[name] = valueOf(field, dice)
      }
      if (roll < 12) value[roll < 8 ? "password" : "extra"] = "hunter2"
      return value
    }
  }
}

export const inputFor = (shape: Shape) =>
  fc.array(fc.nat({ max: 99 }), { minLength: 64, maxLength: 64 }).map((rolls) => {
    let i = 0
    return valueOf(shape, () => rolls[i++ % rolls.length]!)
  })
