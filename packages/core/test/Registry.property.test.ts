// Random invocations (a thousand; GRADED_PROPERTY_SCALE times more in CI): random names (real ones, near misses,
// garbage), random JSON inputs, random contexts, random human decisions. No
// exception escapes, every answer is a valid ToolResult, and nothing writes or
// sends in a context a model is driving. (Effect 4: Effect's own Arbitrary,
// generated from schemas, replaces fast-check.)
import { describe, expect, it } from "@effect/vitest"
import { Arbitrary, Effect, Exit, Layer, Schema } from "effect"
import { HumanConfirm, ProposalStore, Registry, Tool, Toolkit } from "@graded/core"
import { makeDesk } from "./supportDesk.js"
import { propertyRuns } from "../../../test/propertyRuns.js"

const isToolResult = Schema.is(Registry.ToolResult)

const setup = () => {
  const desk = makeDesk()
  const Crm = Tool.read("crm.history", {
    title: "CRM",
    description: "Licensed only with crm.",
    features: ["crm"],
    input: Schema.Struct({ customer: Schema.String }),
    output: Schema.Array(Schema.String),
    run: ({ customer }) => Effect.succeed([customer])
  })
  const Fields = Tool.read("ticket.fields", {
    title: "Fields",
    description: "Ticket page only.",
    pages: ["ticket"],
    input: Schema.Struct({}),
    output: Schema.String,
    run: () => Effect.succeed("subject")
  })
  const Flaky = Tool.read("kb.flaky", {
    title: "Flaky",
    description: "Throws on odd lengths.",
    input: Schema.Struct({ query: Schema.String }),
    output: Schema.String,
    run: ({ query }) => {
      if (query.length % 2 === 1) throw new Error("odd")
      return query.length % 3 === 0 ? Effect.die("thirds") : Effect.succeed(query)
    }
  })
  const toolkit = Toolkit.make(
    ...desk.support.tools,
    Crm,
    Fields,
    Flaky,
    Tool.proposal(desk.SubmitTicket),
    Tool.proposal(desk.SendReply)
  )
  return { desk, toolkit, registry: Registry.make(toolkit, { pages: ["ticket", "order"] }) }
}

type Arb<A> = Arbitrary.Arbitrary<A>

const integer = (minimum: number, maximum: number): Arb<number> =>
  Arbitrary.schema(Schema.Int.check(Schema.isBetween({ minimum, maximum })))

// One of `values`, each as likely.
const constantFrom = <A>(values: ReadonlyArray<A>): Arb<A> =>
  Arbitrary.map(integer(0, values.length - 1), (index) => values[index]!)

// One of the arbitraries, each as likely as its weight says.
const oneOf = <A>(...choices: ReadonlyArray<{ readonly weight: number; readonly arbitrary: Arb<A> }>): Arb<A> => {
  const total = choices.reduce((sum, choice) => sum + choice.weight, 0)
  return Arbitrary.flatMap(integer(0, total - 1), (drawn) => {
    let left = drawn
    for (const choice of choices) {
      if (left < choice.weight) return choice.arbitrary
      left -= choice.weight
    }
    return choices[choices.length - 1]!.arbitrary
  })
}
const even = <A>(...arbitraries: ReadonlyArray<Arb<A>>): Arb<A> =>
  oneOf(...arbitraries.map((arbitrary) => ({ weight: 1, arbitrary })))

const string = Arbitrary.schema(Schema.String)
const json: Arb<unknown> = Arbitrary.schema(Schema.Json)

const realNames = setup().toolkit.tools.map((tool) => tool.name)

const nearMiss = (name: string): Arb<string> =>
  even(
    Arbitrary.Constant(name.replaceAll(".", "__")),
    Arbitrary.Constant(name.toUpperCase()),
    Arbitrary.Constant(`${name} `),
    Arbitrary.Constant(name.slice(0, -1)),
    Arbitrary.Constant(`${name}.now`),
    Arbitrary.Constant(name.replace("e", "е")), // a Cyrillic e
    Arbitrary.map(integer(0, Math.max(0, name.length - 1)), (i) => name.slice(0, i) + name.slice(i + 1))
  )

const names = oneOf(
  { weight: 4, arbitrary: constantFrom(realNames) },
  { weight: 3, arbitrary: Arbitrary.flatMap(constantFrom(realNames), nearMiss) },
  { weight: 1, arbitrary: string },
  { weight: 1, arbitrary: constantFrom(["__proto__", "constructor", "toString", "", ".", "__"]) }
)

const inputs: Arb<unknown> = oneOf<unknown>(
  {
    weight: 2,
    arbitrary: even<unknown>(
      Arbitrary.schema(Schema.Struct({ subject: Schema.String })),
      Arbitrary.schema(Schema.Struct({ text: Schema.String })),
      Arbitrary.schema(Schema.Struct({ query: Schema.String }))
    )
  },
  {
    weight: 3,
    arbitrary: Arbitrary.schema(Schema.Struct({
      query: Schema.optionalKey(Schema.String),
      subject: Schema.optionalKey(Schema.String),
      text: Schema.optionalKey(Schema.String),
      customer: Schema.optionalKey(Schema.String)
    }))
  },
  {
    weight: 1,
    arbitrary: Arbitrary.schema(Schema.Struct({
      query: Schema.String,
      limit: Schema.optionalKey(Schema.NullOr(Schema.Number))
    }))
  },
  { weight: 2, arbitrary: json },
  { weight: 1, arbitrary: Arbitrary.schema(Schema.Record(Schema.String, Schema.Json)) }
)

// A name and an input drawn apart rarely make a call a write or send takes;
// one call in ten is one, so that every run has humans writing and sending.
const calls: Arb<readonly [string, unknown]> = oneOf<readonly [string, unknown]>(
  { weight: 9, arbitrary: Arbitrary.all([names, inputs]) },
  {
    weight: 1,
    arbitrary: even<readonly [string, unknown]>(
      Arbitrary.map(string, (subject) => ["ticket.submit", { subject }] as const),
      Arbitrary.map(string, (text) => ["chat.sendMessage", { text }] as const)
    )
  }
)

const contexts = Arbitrary.schema(Schema.Struct({
  autonomous: Schema.Boolean,
  page: Schema.optionalKey(Schema.Literals(["ticket", "order", "unknown-page"])),
  features: Schema.optionalKey(Schema.Array(Schema.Literals(["crm", "kb"]))),
  actor: Schema.optionalKey(Schema.String)
}))

const decisions = even(
  Arbitrary.Constant(HumanConfirm.approve("human")),
  Arbitrary.Constant(HumanConfirm.approve("human")),
  Arbitrary.Constant(HumanConfirm.reject("human", "no")),
  Arbitrary.map(json, (edit) => HumanConfirm.approve("human", edit))
)

describe("Registry under random invocations", () => {
  it.effect(
    "never throws, always answers a ToolResult, never writes or sends for a model",
    () =>
      Effect.gen(function*() {
        const { desk, registry } = setup()
        let runs = 0
        const count = propertyRuns(1_000)
        const result = yield* Arbitrary.checkEffect(
          Arbitrary.all([calls, contexts, decisions]),
          ([[name, input], context, decision]) =>
            Effect.promise(async () => {
              runs++
              const ui = HumanConfirm.scripted([decision])
              const before = { submitted: desk.effects.submitted.length, delivered: desk.effects.delivered.length }
              // Each call in a root fiber of its own, as an app's handler would run it.
              const exit = await Effect.runPromiseExit(
                registry.invoke(name, input, context).pipe(
                  Effect.provide(Layer.merge(HumanConfirm.layer(ui), ProposalStore.memory))
                )
              )
              if (!Exit.isSuccess(exit) || !isToolResult(exit.value)) return false
              if (!context.autonomous) return true
              return desk.effects.submitted.length === before.submitted &&
                desk.effects.delivered.length === before.delivered &&
                ui.seen.length === 0
            }),
          { runs: count }
        )
        expect(result._tag, Arbitrary.formatCheckFailure(result)).toBe("Passed")
        expect(runs).toBeGreaterThanOrEqual(count)
        // The run exercised both sides: humans did write and send.
        expect(desk.effects.submitted.length + desk.effects.delivered.length).toBeGreaterThan(0)
      }),
    240_000
  )
})
