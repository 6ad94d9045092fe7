// One process of crash.test.ts, on the SQLite file given: it does one thing
// and stops where a crash is to hit it, writing a marker file (atomically)
// when it gets there; the test then kills it with SIGKILL.
//
//   start-and-wait <db> <outside> <marker>
//     starts run "run-crash" (a read, then a send the model asks for), which
//     waits for a decision, and polls it with Runs.resume until killed; the
//     marker holds the outcome and how many polls answered waiting.
//   start-and-think <db> <outside> <marker>
//     starts run "run-think" (lease 1 second): the model's first turn reads,
//     its second never answers (the marker says it was asked).
//   approve <db> <outside> <marker> <proposal> <ui | decided | deliver>
//     approves the proposal as agent:alice (lease 1 second) and stops:
//     ui: in the HumanConfirm UI, once the human pressed approve;
//     decided: once the approval is decided and audited, before the delivery
//       is recorded;
//     deliver: in the tool's deliver, after its line reached the outside file.
import { Audit, HumanConfirm, Invocation, LanguageModel, Proposal, Runs, ScriptedModel } from "@graded/core"
import { Sql } from "@graded/sql"
import { Context, Effect, Layer } from "effect"
import * as fs from "node:fs"
import { makeOutsideDesk, nestedDesk, untilKilled } from "./outsideDesk.js"

const [mode, filename, outside, marker, proposal, point] = process.argv.slice(2) as Array<string>
const { call, calls } = ScriptedModel

const mark = (value: unknown) =>
  Effect.sync(() => {
    fs.writeFileSync(`${marker}.tmp`, JSON.stringify(value))
    fs.renameSync(`${marker}.tmp`, marker!)
  })

const startAndWait = Effect.gen(function*() {
  const desk = makeOutsideDesk(outside!)
  const started = yield* Runs.start({
    toolkit: desk.support,
    prompt: "Tell the customer the refund is on its way.",
    runId: "run-crash",
    context: { actor: "agent:alice", traceId: "t-crash" }
  }).pipe(
    Effect.provide(ScriptedModel.layer([
      calls(call("kb.search", { query: "refund" }), call("chat.sendMessage", { text: "Your refund is on its way." }))
    ]))
  )
  let polls = 0
  yield* mark({ started, polls })
  // The app asks again and again whether a human decided, until it is killed.
  return yield* Effect.forever(Effect.gen(function*() {
    const now = yield* Runs.resume("run-crash", { toolkit: desk.support }).pipe(
      Effect.provide(ScriptedModel.layer([]))
    )
    if (now.status !== "waiting") return yield* Effect.die(new Error(`the run is ${now.status}`))
    yield* mark({ started, polls: ++polls })
    yield* Effect.sleep("20 millis")
  }))
})

const startAndThink = Effect.gen(function*() {
  const desk = makeOutsideDesk(outside!)
  let turns = 0
  const model = Layer.succeed(LanguageModel.LanguageModel, {
    generate: () =>
      turns++ === 0
        ? Effect.succeed(calls(call("kb.search", { query: "refund" }, "call_read")))
        : Effect.andThen(mark({ asked: turns }), untilKilled)
  })
  return yield* Runs.start({
    toolkit: desk.support,
    prompt: "Tell the customer the refund is on its way.",
    runId: "run-think",
    lease: "1 second",
    context: { actor: "agent:alice", traceId: "t-think" }
  }).pipe(Effect.provide(model))
})

// Nested: the run's one tool is agent.desk, a sub-agent holding the desk's
// tools; its call runs as a nested durable run ("run-nested:1:call_desk").
// The outer model calls the desk; the desk's model reads, then never answers.
const startNestedAndThink = Effect.gen(function*() {
  const desk = makeOutsideDesk(outside!)
  let inner = 0
  const model = Layer.succeed(LanguageModel.LanguageModel, {
    generate: (request) =>
      request.messages[0]?.role !== "system"
        ? Effect.succeed(calls(call("agent.desk", { issue: "refund" }, "call_desk")))
        : inner++ === 0
        ? Effect.succeed(calls(call("kb.search", { query: "refund" }, "call_read")))
        : Effect.andThen(mark({ asked: inner }), untilKilled)
  })
  return yield* Runs.start({
    toolkit: nestedDesk(desk),
    prompt: "Tell the customer the refund is on its way.",
    runId: "run-nested",
    lease: "1 second",
    context: { actor: "agent:alice", traceId: "t-nested" }
  }).pipe(Effect.provide(model))
})

const approve = Effect.gen(function*() {
  const desk = makeOutsideDesk(outside!, { hang: point === "deliver" ? "after-effect" : undefined })
  const context = yield* Layer.build(Sql.sqlite({ filename: filename! }))
  const sink = Context.get(context, Audit.Audit)
  // The database's audit, and, for `decided`, a stop right after the approval is recorded.
  const audit = Audit.layer((entry) =>
    Effect.andThen(
      sink.write(entry),
      point === "decided" && entry.type === "decided" && entry.decision === "approved"
        ? Effect.andThen(mark({ stopped: "decided" }), untilKilled)
        : Effect.void
    )
  )
  const ui: HumanConfirm.UI = {
    confirm: () =>
      point === "ui"
        // The human pressed approve; the answer never gets back.
        ? Effect.andThen(mark({ stopped: "ui" }), untilKilled)
        : Effect.succeed(HumanConfirm.approve("agent:alice"))
  }
  yield* Invocation.within({ actor: "agent:alice" })(Proposal.approve(desk.support, proposal!, { lease: "1 second" }))
    .pipe(Effect.provide(HumanConfirm.layer(ui)), Effect.provide(audit), Effect.provide(context))
  return yield* Effect.die(new Error("the approval finished; it was to stop before"))
})

const programs: Record<string, Effect.Effect<unknown, unknown, never>> = {
  "start-and-wait": Effect.provide(startAndWait, Sql.sqlite({ filename: filename! })),
  "start-and-think": Effect.provide(startAndThink, Sql.sqlite({ filename: filename! })),
  "start-nested-and-think": Effect.provide(startNestedAndThink, Sql.sqlite({ filename: filename! })),
  approve: Effect.scoped(approve)
}

const program = programs[mode!] ?? Effect.die(new Error(`no mode ${mode}`))
Effect.runPromise(program).then(
  () => process.exit(0),
  (error) => {
    console.error(error)
    process.exit(1)
  }
)
