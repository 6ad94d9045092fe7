import { Effect, Schema } from "effect"
import { expectError, expectType } from "tsd"
import { Agent, HumanConfirm, type HumanTrigger, Plan, type SendCapability, Tool, Toolkit } from "@graded/core"
import { CurrentConversation, KnowledgeBase, KbSearch, SendReply, SubmitTicket } from "./fixtures.js"

const QuickTicket = Plan.make("quick-ticket", {
  input: Schema.Struct({ query: Schema.String }),
  writes: [SubmitTicket],
  steps: ({ query }, step) =>
    Effect.gen(function*() {
      const articles = yield* step.read("search", KbSearch, { query })
      yield* step.read("conversation", CurrentConversation, {})
      return yield* step.write("submit", SubmitTicket, { subject: articles[0] ?? query })
    })
})

// Accepted: a plan with write steps needs HumanTrigger and its tools' services,
// not WriteCapability: the plan provides that for its declared writes.
expectType<Effect.Effect<{ readonly id: string }, Plan.PlanError, KnowledgeBase | HumanTrigger>>(
  Plan.run(QuickTicket, { query: "vat" })
)

// Rejected: running a plan with no human trigger.

// error: Type 'HumanTrigger' is not assignable to type 'never'
expectError(
  Effect.runPromise(Plan.run(
    Plan.make("empty", {
      input: Schema.Struct({}),
      writes: [],
      steps: () => Effect.succeed(1)
    }),
    {}
  ))
)

// Rejected: a read tool that runs a plan...

// error: kb.planner is a read tool, but its run needs HumanTrigger
expectError(Tool.read("kb.planner", {
  title: "t",
  description: "d",
  input: Schema.Struct({ query: Schema.String }),
  output: Schema.Struct({ id: Schema.String }),
  run: ({ query }) =>
    Plan.run(QuickTicket, { query }).pipe(
      Effect.provideService(KnowledgeBase, { search: () => Effect.succeed([]) }),
      Effect.mapError(() => "failed" as const)
    )
}))

// ...and, cast past Tool.read, cannot be wired into Agent.run.
declare const Planner: Tool.Tool<"kb.planner", "read", { query: string }, { id: string }, never, HumanTrigger>

// error: Agent.run takes read tools only: kb.planner (read) needs HumanTrigger
expectError(Agent.run({ toolkit: Toolkit.make(KbSearch, Planner), prompt: "?" }))

// A plan with a send step leaves SendCapability in R: a human must confirm.
const Notify = Plan.make("notify", {
  input: Schema.Struct({ text: Schema.String }),
  writes: [],
  steps: ({ text }, step) => step.send("send the reply", SendReply, { text })
})
expectType<Effect.Effect<{ readonly delivered: boolean }, Plan.PlanError, HumanTrigger | SendCapability>>(
  Plan.run(Notify, { text: "Hi" })
)

// error: Type 'SendCapability' is not assignable to type 'never'
expectError(
  Effect.runPromise(
    Plan.run(Notify, { text: "Hi" }).pipe(Effect.provide(HumanConfirm.trigger({ by: "a", via: "cli" })))
  )
)

// Accepted: with the trigger and HumanConfirm, nothing is left.
expectType<Effect.Effect<{ readonly delivered: boolean }, Plan.PlanError, never>>(
  Plan.run(Notify, { text: "Hi" }).pipe(
    Effect.provide(HumanConfirm.trigger({ by: "a", via: "cli" })),
    Effect.provide(HumanConfirm.layer(HumanConfirm.scripted([])))
  )
)
