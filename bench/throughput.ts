// pnpm --dir bench bench:throughput: end-to-end supervised runs per second,
// side by side in one run (issue 33's targets): start, a write call, the
// human's approval, the delivery, the run finished. On a SQLite file (one
// process, one run at a time and 8 at once) and, when GRADED_PG_URL names a
// server, on PostgreSQL; with Agent.supervised, the same loop on stores of
// its own in memory, as the floor. Rounds of all rows are interleaved, so a
// noisy stretch of the machine falls on each; the median round is shown.
// Prints a table; nothing is written to the docs.
import { Effect, Layer, ManagedRuntime, Schema } from "effect"
import { Agent, Audit, HumanConfirm, Proposal, Runs, ScriptedModel, Tool, Toolkit } from "@graded/core"
import { Sql } from "@graded/sql"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"

const Submit = Tool.write("ticket.submit", {
  title: "Submit a ticket",
  description: "File a support ticket.",
  input: Schema.Struct({ subject: Schema.String }),
  output: Schema.Struct({ id: Schema.String }),
  run: () => Effect.succeed({ id: "T-1" })
})
const desk = Toolkit.make(Submit)
const script = () =>
  ScriptedModel.layer([
    ScriptedModel.calls(ScriptedModel.call("ticket.submit", { subject: "VAT" })),
    ScriptedModel.text("Filed.")
  ])
// A human who approves every card at once.
const human = HumanConfirm.layer({ confirm: () => Effect.succeed(HumanConfirm.approve("agent:alice")) })

let next = 0
const durableRun = Effect.gen(function*() {
  const runId = `r-${process.pid}-${++next}`
  const started = yield* Runs.start({ toolkit: desk, prompt: "File it.", runId }).pipe(Effect.provide(script()))
  if (started.status !== "waiting") return yield* Effect.dieMessage(`run ${runId} did not wait`)
  yield* Proposal.approve(desk, started.pending[0]!.id).pipe(Effect.provide(human))
  // The resuming process's model: the run's first turn is stored, not asked again.
  const ended = yield* Runs.resume(runId, { toolkit: desk }).pipe(
    Effect.provide(ScriptedModel.layer([ScriptedModel.text("Filed.")]))
  )
  if (ended.status !== "finished") return yield* Effect.dieMessage(`run ${runId} did not finish`)
})
const supervisedRun = Agent.supervised({ toolkit: desk, prompt: "File it." }).pipe(
  Effect.provide(Layer.merge(script(), human))
)

interface Row {
  readonly name: string
  readonly runtime: ManagedRuntime.ManagedRuntime<any, unknown>
  readonly run: Effect.Effect<void, unknown, any>
  readonly concurrency: number
  readonly perSecond: Array<number>
}

const round = async (row: Row, runs: number) => {
  const started = performance.now()
  await row.runtime.runPromise(
    Effect.forEach(Array.from({ length: runs }), () => row.run, { concurrency: row.concurrency, discard: true })
  )
  row.perSecond.push(runs / ((performance.now() - started) / 1000))
}

const main = async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "graded-bench-throughput-"))
  const runs = Number(process.env.GRADED_BENCH_RUNS ?? 100)
  const rounds = Number(process.env.GRADED_BENCH_ROUNDS ?? 3)
  const sqlite = ManagedRuntime.make(Sql.sqlite({ filename: path.join(dir, "graded.db") }))
  const rows: Array<Row> = [
    {
      name: "Agent.supervised (its own stores, memory)",
      runtime: ManagedRuntime.make(Audit.memory().layer),
      run: Effect.asVoid(supervisedRun),
      concurrency: 1,
      perSecond: []
    },
    { name: "SQLite file, one run at a time", runtime: sqlite, run: durableRun, concurrency: 1, perSecond: [] },
    { name: "SQLite file, 8 runs at once", runtime: sqlite, run: durableRun, concurrency: 8, perSecond: [] }
  ]
  const pg = process.env.GRADED_PG_URL
  if (pg !== undefined && pg !== "") {
    const postgres = ManagedRuntime.make(Sql.postgres({ url: pg }))
    rows.push(
      {
        name: "PostgreSQL server, one run at a time",
        runtime: postgres,
        run: durableRun,
        concurrency: 1,
        perSecond: []
      },
      { name: "PostgreSQL server, 8 runs at once", runtime: postgres, run: durableRun, concurrency: 8, perSecond: [] }
    )
  }
  for (const row of rows) await round(row, Math.min(runs, 10)) // warm-up, and migrations
  for (let i = 0; i < rounds; i++) for (const row of rows) await round(row, runs)
  const median = (values: ReadonlyArray<number>) => [...values].sort((x, y) => x - y)[Math.floor(values.length / 2)]!
  console.log(
    `| runs (start, write call, approval, delivery, finish) | runs/s, median of ${rounds} rounds of ${runs} |`
  )
  console.log("|---|---|")
  for (const row of rows) console.log(`| ${row.name} | ${median(row.perSecond.slice(1)).toFixed(1)} |`)
  for (const runtime of new Set(rows.map((row) => row.runtime))) await runtime.dispose()
  fs.rmSync(dir, { recursive: true, force: true })
}

main()
