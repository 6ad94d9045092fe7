// Random invocations (a thousand; GRADED_PROPERTY_SCALE times more in CI): random names (real ones, near misses,
// garbage), random JSON inputs, random contexts, random human decisions. No
// exception escapes, every answer is a valid ToolResult, and nothing writes or
// sends in a context a model is driving.
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, FastCheck as fc, Layer, Schema } from "effect"
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

const realNames = setup().toolkit.tools.map((tool) => tool.name)

const nearMiss = (name: string) =>
  fc.oneof(
    fc.constant(name.replaceAll(".", "__")),
    fc.constant(name.toUpperCase()),
    fc.constant(`${name} `),
    fc.constant(name.slice(0, -1)),
    fc.constant(`${name}.now`),
    fc.constant(name.replace("e", "е")), // a Cyrillic e
    fc.nat({ max: Math.max(0, name.length - 1) }).map((i) => name.slice(0, i) + name.slice(i + 1))
  )

const names = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...realNames) },
  { weight: 3, arbitrary: fc.constantFrom(...realNames).chain(nearMiss) },
  { weight: 1, arbitrary: fc.string() },
  { weight: 1, arbitrary: fc.constantFrom("__proto__", "constructor", "toString", "", ".", "__") }
)

const inputs = fc.oneof(
  {
    weight: 2,
    arbitrary: fc.oneof(
      fc.record({ subject: fc.string() }),
      fc.record({ text: fc.string() }),
      fc.record({ query: fc.string() })
    )
  },
  {
    weight: 3,
    arbitrary: fc.record({ query: fc.string(), subject: fc.string(), text: fc.string(), customer: fc.string() }, {
      requiredKeys: []
    })
  },
  {
    weight: 1,
    arbitrary: fc.record({ query: fc.string(), limit: fc.oneof(fc.constant(null), fc.double()) }, {
      requiredKeys: ["query"]
    })
  },
  { weight: 2, arbitrary: fc.jsonValue() },
  { weight: 1, arbitrary: fc.dictionary(fc.string(), fc.jsonValue()) }
)

const contexts = fc.record({
  autonomous: fc.boolean(),
  page: fc.option(fc.constantFrom("ticket", "order", "unknown-page"), { nil: undefined }),
  features: fc.option(fc.subarray(["crm", "kb"]), { nil: undefined }),
  actor: fc.option(fc.string(), { nil: undefined })
}, { requiredKeys: ["autonomous"] })

const decisions = fc.oneof(
  fc.constant(HumanConfirm.approve("human")),
  fc.constant(HumanConfirm.approve("human")),
  fc.constant(HumanConfirm.reject("human", "no")),
  fc.jsonValue().map((edit) => HumanConfirm.approve("human", edit))
)

describe("Registry under random invocations", () => {
  it("never throws, always answers a ToolResult, never writes or sends for a model", async () => {
    const { desk, registry } = setup()
    let runs = 0
    const count = propertyRuns(1_000)
    await fc.assert(
      fc.asyncProperty(names, inputs, contexts, decisions, async (name, input, context, decision) => {
        runs++
        const ui = HumanConfirm.scripted([decision])
        const before = { submitted: desk.effects.submitted.length, delivered: desk.effects.delivered.length }
        const exit = await Effect.runPromiseExit(
          registry.invoke(name, input, context).pipe(
            Effect.provide(Layer.merge(HumanConfirm.layer(ui), ProposalStore.memory))
          )
        )
        expect(Exit.isSuccess(exit)).toBe(true)
        if (Exit.isSuccess(exit)) expect(isToolResult(exit.value)).toBe(true)
        if (context.autonomous) {
          expect(desk.effects.submitted.length).toBe(before.submitted)
          expect(desk.effects.delivered.length).toBe(before.delivered)
          expect(ui.seen).toEqual([])
        }
      }),
      { numRuns: count }
    )
    expect(runs).toBeGreaterThanOrEqual(count)
    // The run exercised both sides: humans did write and send.
    expect(desk.effects.submitted.length + desk.effects.delivered.length).toBeGreaterThan(0)
  }, 240_000)
})
