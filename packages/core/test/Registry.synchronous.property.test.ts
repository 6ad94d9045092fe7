// A read tool whose run is synchronous is called in one fiber step (the
// registry's synchronous path); every other call takes the general path, a
// chain of effects. Both must give the same result and the same audit
// entries, byte for byte, for every tool and input: random tools (input
// shapes, runs that succeed, fail, die, throw, or need an effect; labels,
// limits), random inputs (valid, with excess keys at any depth, wrong types),
// random sinks (memory, an effect per entry, an asynchronous one, none).
// The fast way also decodes plain inputs in one pass (internal/plainDecode.ts),
// the general way through Effect's decoder: their results must agree too.
// The strict key check is checked the same way: the set of allowed keys and
// the default decode give what the strict decode gives, error text included.
// (White-box: the switch between the paths and the key check are internal.)
import { describe, expect, it } from "@effect/vitest"
import { Clock, Data, Effect, Either, FastCheck as fc, Layer, Schema } from "effect"
import { Agent, Audit, Registry, ScriptedModel, Tool, Toolkit, ToolError } from "@graded/core"
import { excessKeyCheck } from "../src/internal/keyCheck.js"
import { type Dispatched, make as makeInternal, paths } from "../src/internal/registry.js"
import { inputFor, rootShape, schemaOf, type Shape, valueOf } from "./inputShapes.js"

class Unavailable extends Data.TaggedError("Unavailable")<{}> {}

type Behaviour = "succeed" | "sync" | "fail" | "die" | "throw" | "async" | "suspend" | "badOutput" | "yield"
const behaviours: ReadonlyArray<Behaviour> = [
  "succeed",
  "sync",
  "fail",
  "die",
  "throw",
  "async",
  "suspend",
  "badOutput",
  "yield"
]

interface Spec {
  readonly shape: Shape
  readonly behaviour: Behaviour
  readonly output: "string" | "struct" | "list" | "shout"
  readonly tags: boolean
  readonly openWorld: boolean
  readonly maxChars: number | undefined
  readonly maxItems: number | undefined
}

const spec: fc.Arbitrary<Spec> = fc.record({
  shape: rootShape,
  behaviour: fc.constantFrom(...behaviours),
  output: fc.constantFrom("string", "struct", "list", "shout"),
  tags: fc.boolean(),
  openWorld: fc.boolean(),
  maxChars: fc.option(fc.integer({ min: 20, max: 80 }), { nil: undefined }),
  maxItems: fc.option(fc.integer({ min: 1, max: 3 }), { nil: undefined })
})

// Encoding upper-cases the text, asynchronously: an output that needs an effect.
const Shout = Schema.transformOrFail(Schema.String, Schema.String, {
  decode: (text) => Effect.succeed(text.toLowerCase()),
  encode: (text) => Effect.promise(async () => text.toUpperCase())
})

const makeTool = (s: Spec) => {
  const runs = { count: 0 }
  const outputSchema = s.output === "struct" ? Schema.Struct({ text: Schema.String, n: Schema.Number })
    : s.output === "list" ? Schema.Array(Schema.String)
    : s.output === "shout" ? Shout
    : Schema.String
  const outputOf = (input: unknown): unknown => {
    const text = JSON.stringify(input)
    if (s.behaviour === "badOutput") return 17
    return s.output === "struct" ? { text, n: text.length }
      : s.output === "list" ? Array.from({ length: 5 }, (_, i) => `${i}:${text}`)
      : text
  }
  const tool = Tool.read("t.random", {
    title: "Random",
    description: "A random tool.",
    input: schemaOf(s.shape),
    output: outputSchema as Schema.Schema<any, any>,
    failureMessages: { Unavailable: "The service is down." },
    ...(s.tags ? { tags: ["pii"], sideEffects: ["reads a thing"] } : {}),
    ...(s.openWorld ? { openWorld: true } : {}),
    ...(s.maxChars !== undefined || s.maxItems !== undefined
      ? { limits: { maxChars: s.maxChars, maxItems: s.maxItems } }
      : {}),
    run: (input: unknown): Effect.Effect<any, Unavailable> => {
      runs.count++
      switch (s.behaviour) {
        case "succeed":
        case "badOutput":
          return Effect.succeed(outputOf(input))
        case "sync":
          return Effect.sync(() => outputOf(input))
        case "fail":
          return Effect.fail(new Unavailable())
        case "die":
          return Effect.die(new Error("broken"))
        case "throw":
          throw new Error("thrown")
        case "async":
          return Effect.promise(async () => outputOf(input))
        case "suspend":
          return Effect.suspend(() => Effect.succeed(outputOf(input)))
        case "yield":
          return Effect.as(Effect.yieldNow(), outputOf(input))
      }
    }
  })
  return { tool, runs }
}

// The same instant for every entry of both paths.
const fixedClock: Clock.Clock = {
  [Clock.ClockTypeId]: Clock.ClockTypeId,
  unsafeCurrentTimeMillis: () => 1_767_225_600_000,
  unsafeCurrentTimeNanos: () => 1_767_225_600_000_000_000n,
  currentTimeMillis: Effect.succeed(1_767_225_600_000),
  currentTimeNanos: Effect.succeed(1_767_225_600_000_000_000n),
  sleep: () => Effect.void
}

type SinkKind = "memory" | "effect" | "async" | "ring" | "none"

const sinkOf = (kind: SinkKind) => {
  if (kind === "ring") {
    const ring = Audit.ring(1000)
    return { entries: () => ring.entries(), layer: ring.layer }
  }
  const entries: Array<Audit.Entry> = []
  const layer = kind === "memory" ? Audit.memory() : undefined
  return {
    entries: () => layer !== undefined ? layer.entries : entries,
    layer: layer !== undefined ? layer.layer
      : kind === "effect" ? Audit.layer((entry) => Effect.sync(() => void entries.push(entry)))
      : kind === "async" ? Audit.layer((entry) => Effect.promise(async () => void entries.push(entry)))
      : Layer.empty
  }
}

// Stack frames name where a throw was caught, which differs between the
// paths: the message and the rest of the text must not.
const comparable = (entries: ReadonlyArray<Audit.Entry>) =>
  JSON.stringify(entries.map((entry) =>
    "cause" in entry && typeof entry.cause === "string"
      ? { ...entry, cause: entry.cause.split("\n").filter((line) => !/^\s+at /.test(line)).join("\n") }
      : entry
  ))

const context = fc.record({
  actor: fc.option(fc.constantFrom("agent:7", "user:ana"), { nil: undefined }),
  traceId: fc.option(fc.constantFrom("t-1", "t-2"), { nil: undefined }),
  autonomous: fc.option(fc.constant(true as const), { nil: undefined })
}).map((c) => Object.fromEntries(Object.entries(c).filter(([, v]) => v !== undefined)))

// Everything the calls need is provided; the registry's own dispatch says `any`.
// The fast way (the synchronous path, plain inputs decoded in one pass),
// then the general way (a chain of effects, every input through Effect's decoder).
const both = async <A>(make: () => Effect.Effect<A, unknown, any>): Promise<readonly [A, A]> => {
  const was = { ...paths }
  try {
    paths.synchronous = true
    paths.plain = true
    const synchronous = await Effect.runPromise(make() as Effect.Effect<A, unknown>)
    paths.synchronous = false
    paths.plain = false
    const general = await Effect.runPromise(make() as Effect.Effect<A, unknown>)
    return [synchronous, general]
  } finally {
    Object.assign(paths, was)
  }
}

describe("the registry's synchronous path and its general path agree", () => {
  it("for random tools, inputs, contexts and sinks: results and audit entries, byte for byte", async () => {
    const cases = fc.tuple(spec, fc.constantFrom<SinkKind>("memory", "effect", "async", "ring", "none"), context)
      .chain(([s, sink, ctx]) =>
        fc.tuple(fc.constant(s), fc.constant(sink), fc.constant(ctx), fc.array(inputFor(s.shape), { maxLength: 3 }))
      )
    await fc.assert(
      fc.asyncProperty(cases, async ([s, sinkKind, ctx, inputs]) => {
        const { runs, tool } = makeTool(s)
        const registry = Registry.make(Toolkit.make(tool))
        // The registry's own dispatch, as the agent loop calls it: what it
        // keeps of a success (input, output, text) is compared too.
        const internal = makeInternal(Toolkit.make(tool), {})
        const sinks = [sinkOf(sinkKind), sinkOf(sinkKind)] as const
        const counts: Array<number> = []
        let round = 0
        const [fast, general] = await both(() => {
          const sink = sinks[round++]!
          return Effect.forEach(inputs, (input) =>
            Effect.all([
              registry.invoke("t.random", input, ctx),
              registry.invoke("t.random", input),
              Effect.map(
                internal.dispatch("t.random", input),
                ({ result, success, text }) => ({ result, success, text })
              )
            ])).pipe(
              Effect.withClock(fixedClock),
              Effect.provide(sink.layer),
              Effect.tap(() => Effect.sync(() => counts.push(runs.count)))
            )
        })
        expect(JSON.stringify(fast)).toBe(JSON.stringify(general))
        expect(comparable(sinks[0].entries())).toBe(comparable(sinks[1].entries()))
        // Each path ran the tool as often as the other: once a call that decoded.
        expect(counts[0]).toBe(counts[1]! - counts[0]!)
      }),
      { numRuns: 400 }
    )
  })

  it("in the agent loop: the same answer, calls and entries", async () => {
    await fc.assert(
      fc.asyncProperty(
        spec,
        fc.array(fc.integer({ min: 0, max: 99 }), { minLength: 64, maxLength: 64 }),
        async (s, rolls) => {
          const { tool } = makeTool(s)
          let i = 0
          const input = valueOf(s.shape, () => rolls[i++ % rolls.length]!)
          const sinks = [sinkOf("memory"), sinkOf("memory")] as const
          let round = 0
          const [fast, general] = await both(() => {
            const sink = sinks[round++]!
            return Agent.run({ toolkit: Toolkit.make(tool), prompt: "?", maxRounds: 4, context: { traceId: "t-1" } })
              .pipe(
                Effect.provide(ScriptedModel.layer([
                  ScriptedModel.calls(ScriptedModel.call("t.random", input)),
                  ScriptedModel.calls(ScriptedModel.call("t.random", input)),
                  ScriptedModel.text("done")
                ])),
                Effect.withClock(fixedClock),
                Effect.provide(sink.layer)
              )
          })
          expect(JSON.stringify(fast)).toBe(JSON.stringify(general))
          expect(comparable(sinks[0].entries())).toBe(comparable(sinks[1].entries()))
        }
      ),
      { numRuns: 100 }
    )
  })
})

describe("the strict key check", () => {
  const strict = (schema: Schema.Schema<any, any>) => Schema.decodeUnknownEither(schema, ToolError.parseOptions)

  it("a set of allowed keys and the default decode give what the strict decode gives", () => {
    fc.assert(
      fc.property(rootShape.chain((shape) => fc.tuple(fc.constant(shape), inputFor(shape))), ([shape, input]) => {
        const schema = schemaOf(shape)
        const check = excessKeyCheck(schema.ast)
        const expected = strict(schema)(input)
        if (check === undefined) return
        const got = check(input)
          ? Either.orElse(Schema.decodeUnknownEither(schema)(input), () => strict(schema)(input))
          : strict(schema)(input)
        expect(Either.isRight(got)).toBe(Either.isRight(expected))
        if (Either.isRight(got) && Either.isRight(expected)) {
          expect(JSON.stringify(got.right)).toBe(JSON.stringify(expected.right))
        }
        // An input the check passes decodes by default exactly as strictly.
        if (check(input)) {
          const loose = Schema.decodeUnknownEither(schema)(input)
          expect(Either.isRight(loose)).toBe(Either.isRight(expected))
        }
      }),
      { numRuns: 3000 }
    )
  })

  it("covers structs, nested structs, arrays of them and optional or nullable structs; leaves the rest to the strict decode", () => {
    const Inner = Schema.Struct({ city: Schema.String })
    expect(excessKeyCheck(Schema.Struct({ a: Schema.String, b: Schema.Number }).ast)).toBeDefined()
    expect(excessKeyCheck(Schema.Struct({ a: Inner, b: Schema.Array(Inner), c: Schema.optional(Inner) }).ast))
      .toBeDefined()
    expect(excessKeyCheck(Schema.Struct({ a: Schema.NullOr(Inner) }).ast)).toBeDefined()
    expect(excessKeyCheck(Schema.Struct({ a: Schema.NumberFromString }).ast)).toBeUndefined()
    expect(excessKeyCheck(Schema.Struct({ a: Schema.Union(Inner, Schema.Struct({ zip: Schema.String })) }).ast))
      .toBeUndefined()
    expect(excessKeyCheck(Schema.Record({ key: Schema.String, value: Schema.String }).ast)).toBeUndefined()
  })

  it("refuses keys the strict decode refuses that JSON cannot carry: symbols, non-enumerable keys, accessors", () => {
    const check = excessKeyCheck(Schema.Struct({ a: Schema.String, inner: Schema.Struct({ b: Schema.String }) }).ast)!
    expect(check({ a: "x", inner: { b: "y" } })).toBe(true)
    expect(check({ a: "x", inner: { b: "y" }, [Symbol("s")]: 1 })).toBe(false)
    expect(check(Object.defineProperty({ a: "x", inner: { b: "y" } }, "hidden", { value: 1, enumerable: false })))
      .toBe(false)
    expect(check(Object.defineProperty({ a: "x" }, "inner", { get: () => ({ b: "y" }), enumerable: true })))
      .toBe(false)
  })
})

describe("the text a call keeps", () => {
  it("is the JSON of its result, whatever the output (a toJSON, undefined, nested values)", async () => {
    class Stamp {
      toJSON(key: string) {
        return `stamp under ${JSON.stringify(key)}`
      }
    }
    const outputs = fc.oneof(
      fc.jsonValue(),
      fc.constant(undefined),
      fc.constant(new Stamp()),
      fc.jsonValue().map((value) => ({ value, stamp: new Stamp() }))
    )
    await fc.assert(
      fc.asyncProperty(outputs, async (output) => {
        const tool = Tool.read("t.any", {
          title: "Any",
          description: "Returns what it was made with.",
          input: Schema.Struct({}),
          output: Schema.Unknown,
          limits: { maxChars: 1_000_000 },
          run: () => Effect.succeed(output)
        })
        const dispatched = makeInternal(Toolkit.make(tool), {}).dispatch("t.any", {}) as Effect.Effect<Dispatched>
        const { result, text } = await Effect.runPromise(dispatched)
        expect(text).toBe(JSON.stringify(result))
      }),
      { numRuns: 500 }
    )
  })
})
