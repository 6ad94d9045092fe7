// One process of postgresProcesses.test.ts: connects to the PostgreSQL
// database given, says "ready", waits for "go" on stdin, then tries to approve
// every proposal whose id is in the JSON file given, as a human at this
// process would (a scripted HumanConfirm approving each), several at once.
// Prints, as JSON, the ids it delivered, the ids it lost (with the error's
// tag and the status it found) and anything else that went wrong.
import { PgClient } from "@effect/sql-pg"
import { Effect, Result, Layer, Redacted } from "effect"
import { HumanConfirm, Invocation, Proposal, ProposalStore } from "@graded/core"
import { Sql } from "@graded/sql"
import * as fs from "node:fs"
import * as readline from "node:readline"
import { outbox } from "./outbox.js"

const [url, idsFile] = process.argv.slice(2)
const actor = `process:${process.pid}`

const go = new Promise<void>((resolve) => {
  readline.createInterface({ input: process.stdin }).on("line", (line) => line === "go" && resolve())
})

const approveOne = (id: string) =>
  Proposal.approve(outbox, id).pipe(
    Effect.provide(HumanConfirm.layer(HumanConfirm.scripted([HumanConfirm.approve(actor)]))),
    // Each attempt its own trace, named for the proposal and this process,
    // so that the test finds each attempt's audit entries.
    Invocation.within({ autonomous: false, actor, traceId: `approve:${id}:${process.pid}` }),
    Effect.result
  )

const program = Effect.gen(function*() {
  console.log("ready")
  yield* Effect.promise(() => go)
  const ids = JSON.parse(fs.readFileSync(idsFile!, "utf8")) as Array<string>
  const outcomes = yield* Effect.forEach(ids, (id) => Effect.map(approveOne(id), (outcome) => ({ id, outcome })), {
    concurrency: 8
  })
  const won: Array<string> = []
  const lost: Array<{ id: string; status: string; by: string }> = []
  const errors: Array<string> = []
  for (const { id, outcome } of outcomes) {
    if (Result.isSuccess(outcome)) won.push(id)
    else if (outcome.failure instanceof ProposalStore.AlreadyDecided) {
      lost.push({ id, status: outcome.failure.status, by: outcome.failure.by ?? "" })
    } else errors.push(`${id}: ${String(outcome.failure)}`)
  }
  return { won, lost, errors }
})

// The outbox's deliver writes with a pool of its own, as an app's own
// queries do: Sql.postgres keeps its pool to graded.
const app = Layer.merge(Sql.postgres({ url: url! }), PgClient.layer({ url: Redacted.make(url!), maxConnections: 2 }))

Effect.runPromise(program.pipe(Effect.provide(app))).then(
  (result) => {
    console.log(JSON.stringify(result))
    process.exit(0)
  },
  (error) => {
    console.error(error)
    process.exit(1)
  }
)
