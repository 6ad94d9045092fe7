// The run state's JSON codec (white-box: internal/stateJson.ts) against
// Effect's `Schema.parseJson`, which it skips where that would change nothing:
// whatever text it decodes, Effect decodes to an equal value or fails with the
// same error; whatever state it encodes, Effect encodes to the same JSON (key
// order aside) or throws too. States are random, then bent the ways a database
// row or a caller's object can be; a few small schemas cover the unions where
// more than one member fits.
import { describe, expect, it } from "@effect/vitest"
import { Arbitrary, Effect, Either, FastCheck as fc, Schema } from "effect"
import { RunStore } from "@graded/core"
import { stateJson } from "../src/internal/stateJson.js"

type Json = null | boolean | number | string | Array<Json> | { [key: string]: Json }

// One change somewhere in a JSON value: a key added, dropped or renamed, a
// value swapped for another kind, `__proto__` added, an array made an object.
const Bend = fc.record({
  at: fc.nat(),
  kind: fc.constantFrom("add", "drop", "swap", "proto", "unwrap", "null"),
  key: fc.constantFrom("role", "ok", "status", "content", "extra", "call", "proposal", "toString", "0"),
  value: fc.jsonValue({ maxDepth: 2 }) as fc.Arbitrary<Json>
})
type Bend = typeof Bend extends fc.Arbitrary<infer A> ? A : never

// Every object and array in `value`, depth first.
const containers = (value: Json, found: Array<Json> = []): Array<Json> => {
  if (typeof value === "object" && value !== null) {
    found.push(value)
    for (const child of Object.values(value)) containers(child, found)
  }
  return found
}

const bend = (text: string, bends: ReadonlyArray<Bend>): string => {
  const root = { root: JSON.parse(text) as Json }
  for (const bent of bends) {
    const { at, key, kind } = bent
    // A copy: fast-check may hand two bends one object, and putting it inside
    // itself made a cycle the walk below never left (seed 383718407).
    const value = JSON.parse(JSON.stringify(bent.value)) as Json
    // The wrapper itself only when nothing else is left to bend.
    const places = containers(root.root)
    if (places.length === 0) places.push(root)
    const place = places[at % places.length] as Record<string, Json>
    const keys = Object.keys(place)
    const some = keys[at % Math.max(1, keys.length)] ?? key
    if (kind === "add") place[key] = value
    else if (kind === "drop") delete place[some]
    else if (kind === "swap") place[some] = value
    else if (kind === "null") place[some] = null
    else if (kind === "unwrap") place[some] = { ...(place[some] as object) } as Json
    else Object.defineProperty(place, "__proto__", { value, enumerable: true, configurable: true, writable: true })
  }
  return JSON.stringify(root.root)
}

// `decode` answers with an effect that needs nothing and ends at once.
const runEither = <A, E>(self: Effect.Effect<A, E>) => Effect.runSync(Effect.either(self))

// Effect's answer and the fast codec's for the same text: the same value, or
// the same error.
// Effect's own parser throws on some objects (one whose `toString` is an
// object, seed 383718407): then the fast codec must throw the same.
const sameDecode = <A>(schema: Schema.Schema<A, A>, text: string) => {
  const effects = caught(() => Either.mapLeft(Schema.decodeEither(Schema.parseJson(schema))(text), String))
  const codecs = caught(() => Either.mapLeft(runEither(stateJson(schema).decode(text)), String))
  expect(codecs).toStrictEqual(effects)
}

const caught = <A>(f: () => A): A | { readonly threw: string } => {
  try {
    return f()
  } catch (error) {
    return { threw: String(error) }
  }
}

const encodeOrThrow = (encode: () => string): Either.Either<unknown, string> => {
  try {
    return Either.right(JSON.parse(encode()))
  } catch (error) {
    return Either.left(String(error))
  }
}

const sameEncode = <A>(schema: Schema.Schema<A, A>, value: A) => {
  const { encode } = stateJson(schema)
  expect(encodeOrThrow(() => encode(value))).toStrictEqual(
    encodeOrThrow(() => Schema.encodeSync(Schema.parseJson(schema))(value))
  )
}

// An object JSON cannot give: a class with its own idea of its JSON.
class Usage {
  toJSON() {
    return "usage"
  }
}

const States = Arbitrary.make(RunStore.State)
const stateText = (state: RunStore.State) => Schema.encodeSync(Schema.parseJson(RunStore.State))(state)

describe("a run state's JSON text", () => {
  it("a state Effect wrote and can read back is decoded the fast way, to what Effect decodes", () =>
    fc.assert(
      fc.property(States, (state) => {
        const text = stateText(state)
        // (A number JSON cannot write, such as Infinity, comes back null, which no decode takes.)
        if (Either.isRight(Schema.decodeEither(Schema.parseJson(RunStore.State))(text))) {
          expect(stateJson(RunStore.State).vouches(JSON.parse(text))).toBe(true)
        }
        sameDecode(RunStore.State, text)
      }),
      { numRuns: 300 }
    ))

  it("a bent state decodes as Effect decodes it: the same value or the same error", () =>
    fc.assert(
      fc.property(States, fc.array(Bend, { minLength: 1, maxLength: 3 }), (state, bends) => {
        sameDecode(RunStore.State, bend(stateText(state), bends))
      }),
      { numRuns: 1000 }
    ))

  it("a state in memory encodes as Effect encodes it, bent or not", () =>
    fc.assert(
      fc.property(
        States,
        fc.array(Bend, { maxLength: 2 }),
        fc.constantFrom("as is", "class", "undefined", "getter"),
        (state, bends, odd) => {
          const value = JSON.parse(bend(stateText(state), bends)) as Record<string, unknown>
          // What JSON cannot give but a caller's object can.
          if (odd === "class") value.usage = Object.assign(new Usage(), value.usage)
          if (odd === "undefined") value.ended = undefined
          if (odd === "getter") Object.defineProperty(value, "round", { get: () => 1, enumerable: true })
          sameEncode(RunStore.State, value as unknown as RunStore.State)
        }
      ),
      { numRuns: 1000 }
    ))

  it("a state the run loop makes, with fields left undefined, is encoded the fast way", () => {
    const state: RunStore.State = {
      maxRounds: 10,
      maxCallsPerRound: 4,
      maxArgumentChars: 1000,
      context: { page: undefined },
      round: 1,
      messages: [{ role: "assistant", content: undefined, toolCalls: [] }],
      calls: [],
      usage: { inputTokens: 1, outputTokens: 2 },
      untrusted: [],
      refusedBefore: [],
      turn: undefined,
      facts: { plan: "gold" },
      ended: { status: "finished", stopped: "answer", answer: undefined }
    }
    expect(stateJson(RunStore.State).vouches(state)).toBe(true)
    sameEncode(RunStore.State, state)
  })
})

// Unions whose members overlap: Effect takes the first member that fits, and
// drops what it does not know.
const Overlapping = Schema.Union(
  Schema.Struct({ a: Schema.String }),
  Schema.Struct({ a: Schema.String, b: Schema.String })
)
// Effect tries members with a matching literal tag before the others, so the
// first member declared is not always the one it takes.
const TagFirst = Schema.Union(
  Schema.Struct({ k: Schema.String, extra: Schema.String }),
  Schema.Struct({ k: Schema.Literal("x") })
)
const Tagged = Schema.Struct({
  items: Schema.Array(Schema.Union(
    Schema.Struct({ kind: Schema.Literal("x"), n: Schema.Number }),
    Schema.Struct({ kind: Schema.Literal("x", "y"), s: Schema.optional(Schema.String) }),
    Schema.Record({ key: Schema.String, value: Schema.Boolean })
  )),
  rest: Schema.optional(Schema.Unknown)
})

describe("the fast codec on other schemas: overlapping unions, inherited names", () => {
  it("a value two members fit is left to Effect, which takes the first", () => {
    sameDecode(Overlapping, JSON.stringify({ a: "1", b: "2" }))
    expect(runEither(stateJson(Overlapping).decode(JSON.stringify({ a: "1", b: "2" })))).toStrictEqual(
      Either.right({ a: "1" })
    )
    sameEncode(Overlapping, { a: "1", b: "2" })
  })

  it("a value that fits a member declared first but also a tagged one is decoded as Effect does: the tagged one", () => {
    const text = JSON.stringify({ k: "x", extra: "e" })
    sameDecode(TagFirst, text)
    expect(runEither(stateJson(TagFirst).decode(text))).toStrictEqual(Either.right({ k: "x" }))
    sameEncode(TagFirst, { k: "x", extra: "e" })
  })

  it("a field named like one of Object.prototype's, missing from the text, is read as Effect reads it", () => {
    // Effect reads a missing field through the prototype: here, Object.prototype.toString.
    const Inherited = Schema.Struct({ toString: Schema.Unknown, a: Schema.String })
    sameDecode(Inherited, JSON.stringify({ a: "x" }))
    sameDecode(Inherited, JSON.stringify({ a: "x", toString: 1 }))
    sameEncode(Inherited, { a: "x", toString: 1 })
  })

  it("random JSON decodes as Effect decodes it, for each schema", () =>
    fc.assert(
      fc.property(
        fc.constantFrom<Schema.Schema<any, any>>(Overlapping, TagFirst, Tagged),
        fc.oneof(
          fc.jsonValue({ maxDepth: 3 }),
          fc.record({ a: fc.string(), b: fc.option(fc.string(), { nil: undefined }) }, { requiredKeys: ["a"] }),
          fc.record({ k: fc.constantFrom("x", "y"), extra: fc.string() }, { requiredKeys: ["k"] }),
          fc.record({
            items: fc.array(fc.oneof(
              fc.record({ kind: fc.constantFrom("x", "y", "z"), n: fc.double(), s: fc.string() }, {
                requiredKeys: ["kind"]
              }),
              fc.dictionary(fc.constantFrom("kind", "n", "on", "__proto__"), fc.boolean())
            )),
            rest: fc.jsonValue({ maxDepth: 1 })
          }, { requiredKeys: ["items"] })
        ),
        (schema, value) => {
          sameDecode(schema, JSON.stringify(value) ?? "null")
          sameEncode(schema, value)
        }
      ),
      { numRuns: 2000 }
    ))
})
