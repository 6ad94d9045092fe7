// The support desk after a restart: a new process that knows the run only by
// its id and the database file (supervised.ts starts it). Alice decides the
// waiting reply, scripted or on the web confirm page, and the run is resumed
// from its stored state to the model's answer. Nothing of the first process's
// memory is here: only the file.
import { Effect, Layer } from "effect"
import { HumanConfirm, Invocation, Proposal, Runs, ScriptedModel, type Toolkit } from "@graded/core"
import { WebConfirm } from "@graded/confirm"
import { Sql } from "@graded/sql"
import * as Desk from "./desk.js"
import { fromEnv } from "./model.js"
import { edited, type Restart, restartVariable, resumeScript } from "./supervised.js"
import { desk } from "./tools.js"

// The first process holds the other end of stdin: if it dies, so does this one.
process.stdin.on("close", () => process.exit(1)).resume()

const restart = JSON.parse(process.env[restartVariable] ?? "null") as Restart
const say = (line: string) => console.log(`   [restarted app, pid ${process.pid}] ${line}`)
const show = (value: unknown) => JSON.stringify(value)
const outbox = Desk.empty()
const model = fromEnv(process.env).layer ?? ScriptedModel.layer(resumeScript)

// Each turn's outcome, once nothing waits for a human any more.
const finish = (outcome: Runs.Outcome<Toolkit.Tools<typeof desk>>) => {
  if (outcome.status === "finished") {
    say(`Runs.resume: the run finished after ${outcome.result.rounds} rounds. The model's answer:`)
    say(`  ${outcome.result.answer ?? "(no answer)"}`)
  } else if (outcome.status === "cancelled") say(`The run was cancelled by ${outcome.by}: ${outcome.reason}`)
}

// A scripted Alice: she opens the waiting card, edits the reply and approves it.
const scripted = Effect.gen(function*() {
  const [waiting] = yield* Proposal.list({ status: "pending", runId: restart.runId })
  if (waiting === undefined) return say("Nothing waits for Alice.")
  const alice = HumanConfirm.scripted([(view) => {
    say(`Alice's confirm card: ${view.title} (${view.grade}) ${show(view.payload)}`)
    say("Alice edits the reply and approves it.")
    return HumanConfirm.approve("agent:alice", { to: "c-42", text: edited })
  }])
  const approved = yield* Proposal.approve(desk, waiting.id).pipe(
    Invocation.within({ actor: "agent:alice", traceId: waiting.traceId }),
    Effect.provide(HumanConfirm.layer(alice))
  )
  for (const message of outbox.messages) {
    say(
      `Delivered ${approved.proposal.id} once, to ${message.to}, with idempotency key ${message.idempotencyKey}: ` +
        show(message.text)
    )
  }
  finish(yield* Runs.resume(restart.runId, { toolkit: desk }))
})

// People on the web page: the card waits there; the run is resumed every half second until it no longer waits.
const web = (users: Readonly<Record<string, string>>, port: number) =>
  Effect.gen(function*() {
    const server = yield* WebConfirm.WebConfirm
    for (const [token, person] of Object.entries(users)) say(`Confirm page for ${person}: ${server.link(token)}`)
    say("The drafted reply waits on the confirm page: approve, edit or reject it there.")
    const resume = Runs.resume(restart.runId, { toolkit: desk })
    let outcome = yield* resume
    while (outcome.status === "waiting") outcome = yield* Effect.andThen(Effect.sleep("500 millis"), resume)
    for (const message of outbox.messages) {
      say(`Delivered once, to ${message.to}, with idempotency key ${message.idempotencyKey}: ${show(message.text)}`)
    }
    finish(outcome)
  }).pipe(Effect.provide(WebConfirm.layer({ users, port, proposals: { toolkit: desk } })))

const program = Effect.gen(function*() {
  say(`Opened ${restart.database}: the run ${restart.runId} is only there.`)
  // On start, settle whatever a process that died left half way.
  yield* Proposal.recover
  yield* restart.human._tag === "scripted" ? scripted : web(restart.human.users, restart.human.port)
})

Effect.runPromise(
  program.pipe(
    Effect.provide(model),
    Effect.provide(
      Layer.merge(Sql.sqlite({ filename: restart.database }), Desk.layer(outbox, { chatFile: restart.chatFile }))
    )
  )
).then(
  () => process.exit(0),
  (error: unknown) => {
    console.error("The restarted app failed:", error)
    process.exit(1)
  }
)
