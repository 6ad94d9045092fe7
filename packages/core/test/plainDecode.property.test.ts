// The one-pass decoder for plain inputs (white-box: internal/plainDecode.ts),
// which also encodes plain outputs, against the registry's full path (what JSON cannot carry, nulls dropped from
// optional fields, Effect's strict decode): whenever it takes an input, the
// full path accepts it with the same value, keys in the same order. Inputs are
// random and then bent in the ways JSON cannot but a caller's object can;
// outputs are compared with Effect's encoder the same way.
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, FastCheck as fc, Schema } from "effect"
import { Audit, Registry, Tool, Toolkit, ToolError } from "@graded/core"
import { jsonIssue } from "../src/internal/jsonData.js"
import { compile } from "../src/internal/functionSchema.js"
import { notPlain, plainDecoder } from "../src/internal/plainDecode.js"
import { inputFor, rootShape, schemaOf } from "./inputShapes.js"

const toolFor = (input: Schema.Schema<any, any>) =>
  Tool.read("t.plain", {
    title: "Plain",
    description: "Takes anything.",
    input,
    output: Schema.String,
    run: () => Effect.succeed("")
  })

// What the registry does with an input when the one-pass decoder is not used.
const fullPath = (tool: ReturnType<typeof toolFor>) => (input: unknown): Either.Either<unknown, unknown> =>
  jsonIssue(input) !== undefined
    ? Either.left("not JSON")
    : Schema.decodeUnknownEither(tool.input, ToolError.parseOptions)(compile(tool).normalize(input))

// Equal values with keys in the same order, `undefined` values included.
const same = (a: unknown, b: unknown): boolean => {
  if (typeof a !== "object" || a === null || typeof b !== "object" || b === null) return Object.is(a, b)
  if (Array.isArray(a) !== Array.isArray(b)) return false
  const keysA = Object.keys(a)
  const keysB = Object.keys(b)
  return keysA.length === keysB.length &&
    keysA.every((key, i) =>
      key === keysB[i] && same((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key])
    )
}

class Box {
  constructor(readonly a: string) {}
}

// Ways to bend a value that JSON cannot carry, applied to it or to an object
// or array inside it.
const bends = ["none", "hidden", "symbol", "getter", "nullProto", "inherited", "instance", "hole", "proto"] as const
type Bend = typeof bends[number]

const bent = (value: unknown, bend: Bend, depth: number): unknown => {
  if (typeof value !== "object" || value === null) return value
  if (Array.isArray(value)) {
    const items = value.map((item) => bent(item, depth === 0 ? bend : "none", depth + 1))
    if (bend === "hole" && items.length > 0) delete items[0]
    return items
  }
  const entries = Object.entries(value).map(([key, item]) => [key, bent(item, bend, depth + 1)] as const)
  const plain = Object.fromEntries(entries)
  if (depth > 1) return plain
  switch (bend) {
    case "hidden":
      return entries.length === 0 ? plain : Object.defineProperty(
        Object.fromEntries(entries.slice(1)),
        entries[0]![0],
        { value: entries[0]![1], enumerable: false }
      )
    case "symbol":
      return Object.assign(plain, { [Symbol("s")]: 1 })
    case "getter": {
      if (entries.length === 0) return plain
      const [key, item] = entries[0]!
      const out = Object.fromEntries(entries.slice(1))
      return Object.defineProperty(out, key, { get: () => item, enumerable: true })
    }
    case "nullProto":
      return Object.assign(Object.create(null), plain)
    case "inherited":
      return Object.assign(Object.create(plain), {})
    case "instance":
      return Object.assign(new Box("x"), plain)
    case "proto":
      return JSON.parse(`{"__proto__": {"a": "x"}, ${JSON.stringify(plain).slice(1)}`.replace(", }", "}"))
    default:
      return plain
  }
}

describe("the one-pass decoder for plain inputs", () => {
  it("takes an input only when the full path accepts it, with the same value and key order", () => {
    let taken = 0
    let accepted = 0
    fc.assert(
      fc.property(
        rootShape.chain((shape) => fc.tuple(fc.constant(shape), inputFor(shape), fc.constantFrom(...bends))),
        ([shape, raw, bend]) => {
          const tool = toolFor(schemaOf(shape))
          const plain = plainDecoder(tool.input.ast)
          const input = bent(raw, bend, 0)
          const expected = fullPath(tool)(input)
          if (Either.isRight(expected) && bend === "none") accepted++
          if (plain === undefined) return
          const got = plain(input)
          if (got === notPlain) return
          taken++
          expect(Either.isRight(expected), JSON.stringify(raw)).toBe(true)
          if (Either.isRight(expected)) expect(same(got, expected.right)).toBe(true)
        }
      ),
      { numRuns: 5000 }
    )
    // Not a decoder that never answers: most valid plain inputs are taken.
    expect(taken).toBeGreaterThan(accepted / 3)
  })

  it("as an output's encoder: takes a value only when Effect's encoder gives the same", () => {
    let taken = 0
    fc.assert(
      fc.property(
        rootShape.chain((shape) => fc.tuple(fc.constant(shape), inputFor(shape), fc.constantFrom(...bends))),
        ([shape, raw, bend]) => {
          const schema = schemaOf(shape)
          const plain = plainDecoder(schema.ast)
          if (plain === undefined) return
          const output = bent(raw, bend, 0)
          const got = plain(output)
          if (got === notPlain) return
          taken++
          const expected = Schema.encodeEither(schema)(output)
          expect(Either.isRight(expected)).toBe(true)
          if (Either.isRight(expected)) expect(same(got, expected.right)).toBe(true)
        }
      ),
      { numRuns: 3000 }
    )
    expect(taken).toBeGreaterThan(20)
  })

  it("covers structs of strings, numbers, booleans and literals, refined or optional, nested and in arrays", () => {
    const Inner = Schema.Struct({ city: Schema.String.pipe(Schema.maxLength(40)) })
    const covered = Schema.Struct({
      q: Schema.String,
      n: Schema.optional(Schema.Int),
      on: Schema.Boolean,
      kind: Schema.Literal("open", "closed"),
      v: Schema.Literal(2),
      at: Inner,
      stops: Schema.Array(Inner)
    })
    const plain = plainDecoder(covered.ast)!
    const input = { q: "x", on: true, kind: "open", v: 2, at: { city: "Oslo" }, stops: [{ city: "Bergen" }] }
    expect(plain(input)).toStrictEqual(input)
    expect(plain({ ...input, n: 1.5 })).toBe(notPlain)
    expect(plain({ ...input, n: null })).toBe(notPlain)
    expect(plain({ ...input, extra: 1 })).toBe(notPlain)
    expect(plain({ ...input, at: { city: "x".repeat(41) } })).toBe(notPlain)
    // A null in an optional field means "absent" to the registry, even where null is allowed.
    const nullable = toolFor(Schema.Struct({ a: Schema.optional(Schema.Literal(null)) }))
    expect(plainDecoder(nullable.input.ast)!({ a: null })).toBe(notPlain)
    expect(fullPath(nullable)({ a: null })).toStrictEqual(Either.right({}))
    for (
      const other of [
        Schema.Struct({ a: Schema.NumberFromString }),
        Schema.Struct({ a: Schema.Union(Inner, Schema.Struct({ zip: Schema.String })) }),
        Schema.Struct({ a: Schema.NullOr(Schema.String) }),
        Schema.Record({ key: Schema.String, value: Schema.String }),
        Schema.Struct({}),
        Schema.Struct({ a: Schema.Date })
      ]
    ) {
      expect(plainDecoder(other.ast)).toBeUndefined()
    }
  })

  it("reads each value once: what was checked is what the tool runs with", async () => {
    const seen: Array<unknown> = []
    const tool = Tool.read("t.once", {
      title: "Once",
      description: "Keeps what it was given.",
      input: Schema.Struct({ a: Schema.String }),
      output: Schema.String,
      run: (input) => Effect.sync(() => (seen.push(input.a), input.a))
    })
    let reads = 0
    // A getter that shows a string first and something else after.
    const input = Object.defineProperty({}, "a", { get: () => reads++ === 0 ? "ok" : { evil: true }, enumerable: true })
    const result = await Effect.runPromise(
      Registry.make(Toolkit.make(tool)).invoke("t.once", input).pipe(Effect.provide(Audit.memory().layer))
    )
    expect(result).toStrictEqual({ ok: true, data: "ok" })
    expect(seen).toStrictEqual(["ok"])
  })
})
