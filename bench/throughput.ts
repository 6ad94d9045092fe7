// pnpm --dir bench bench:throughput (and bench:runs, after runs.ts):
// end-to-end supervised runs per second, side by side in one run (issue 33's
// targets): start, a write call, the human's approval, the delivery, the run
// finished. On a SQLite file (one process, one run at a time and 8 at once)
// and, when GRADED_PG_URL names a server, on PostgreSQL, from this process
// and from 4 processes at once (child processes of this script, each with 8
// runs at once, on one database); with Agent.supervised, the same loop on
// stores of its own in memory, as the floor. Rounds of all rows are
// interleaved, so a noisy stretch of the machine falls on each; the median
// round is shown. Writes its section of docs/PERFORMANCE.md.
import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Layer, ManagedRuntime, Redacted, Schema } from "effect"
import * as SqlClient from "effect/sql/SqlClient"
import { Agent, Audit, HumanConfirm, Proposal, Runs, ScriptedModel, Tool, Toolkit } from "@graded/core"
import { Sql } from "@graded/sql"
import { execFileSync, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
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
  if (started.status !== "waiting") return yield* Effect.die(new Error(`run ${runId} did not wait`))
  yield* Proposal.approve(desk, started.pending[0]!.id).pipe(Effect.provide(human))
  // The resuming process's model: the run's first turn is stored, not asked again.
  const ended = yield* Runs.resume(runId, { toolkit: desk }).pipe(
    Effect.provide(ScriptedModel.layer([ScriptedModel.text("Filed.")]))
  )
  if (ended.status !== "finished") return yield* Effect.die(new Error(`run ${runId} did not finish`))
})
const supervisedRun = Agent.supervised({ toolkit: desk, prompt: "File it." }).pipe(
  Effect.provide(Layer.merge(script(), human))
)

const many = (runs: number, concurrency: number) =>
  Effect.forEach(Array.from({ length: runs }), () => durableRun, { concurrency, discard: true })

// A child process: builds its store, says "ready", and runs a round on each
// line it reads ("<runs>"), answering "done" after each.
const worker = async (url: string) => {
  const runtime = ManagedRuntime.make(Sql.postgres({ url }))
  await runtime.runPromise(Effect.void)
  process.stdout.write("ready\n")
  let buffer = ""
  for await (const chunk of process.stdin) {
    buffer += String(chunk)
    for (let at = buffer.indexOf("\n"); at !== -1; at = buffer.indexOf("\n")) {
      const line = buffer.slice(0, at)
      buffer = buffer.slice(at + 1)
      if (line === "exit") {
        await runtime.dispose()
        process.exit(0)
      }
      await runtime.runPromise(many(Number(line), 8))
      process.stdout.write("done\n")
    }
  }
}

// Four child processes on one database, driven round by round.
const processes = async (url: string, count: number) => {
  const children = Array.from(
    { length: count },
    () =>
      spawn(process.execPath, [...process.execArgv, fileURLToPath(import.meta.url), "--worker", url], {
        stdio: ["pipe", "pipe", "inherit"]
      })
  )
  const lines = children.map((child) => {
    const waiting: Array<() => void> = []
    let buffer = ""
    child.stdout.on("data", (chunk) => {
      buffer += String(chunk)
      for (let at = buffer.indexOf("\n"); at !== -1; at = buffer.indexOf("\n")) {
        buffer = buffer.slice(at + 1)
        waiting.shift()?.()
      }
    })
    return () => new Promise<void>((resolve) => waiting.push(resolve))
  })
  await Promise.all(lines.map((line) => line()))
  return {
    round: (runs: number) =>
      Promise.all(children.map((child, i) => {
        const done = lines[i]!()
        child.stdin.write(`${Math.ceil(runs / count)}\n`)
        return done
      })),
    stop: () =>
      Promise.all(children.map((child) =>
        new Promise((resolve) => {
          child.on("exit", resolve)
          child.stdin.write("exit\n")
        })
      ))
  }
}

interface Row {
  readonly name: string
  readonly target?: number
  readonly round: (runs: number) => Promise<unknown>
  readonly perSecond: Array<number>
}

const time = async (row: Row, runs: number) => {
  const started = performance.now()
  await row.round(runs)
  row.perSecond.push(runs / ((performance.now() - started) / 1000))
}

const admin = (url: string, statement: string) =>
  Effect.runPromise(Effect.scoped(Effect.flatMap(
    Layer.build(PgClient.layer({ url: Redacted.make(url) })),
    (context) => Context.get(context, SqlClient.SqlClient).unsafe(statement)
  )))

const main = async () => {
  const here = path.dirname(fileURLToPath(import.meta.url))
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "graded-bench-throughput-"))
  const runs = Number(process.env.GRADED_BENCH_RUNS ?? 200)
  const rounds = Number(process.env.GRADED_BENCH_ROUNDS ?? 3)
  const load = () => os.loadavg().map((x) => x.toFixed(1)).join(", ")
  const loadBefore = load()
  const startedAt = Date.now()
  const memory = ManagedRuntime.make(Audit.memory().layer)
  const sqlite = ManagedRuntime.make(Sql.sqlite({ filename: path.join(dir, "graded.db") }))
  const rows: Array<Row> = [
    {
      name: "Agent.supervised (its own stores, memory)",
      round: (n) =>
        memory.runPromise(Effect.forEach(Array.from({ length: n }), () => supervisedRun, { discard: true })),
      perSecond: []
    },
    { name: "SQLite file, one run at a time", round: (n) => sqlite.runPromise(many(n, 1)), perSecond: [] },
    { name: "SQLite file, 8 runs at once", target: 200, round: (n) => sqlite.runPromise(many(n, 8)), perSecond: [] }
  ]
  const stops: Array<() => Promise<unknown>> = [() => memory.dispose(), () => sqlite.dispose()]
  const server = process.env.GRADED_PG_URL
  if (server !== undefined && server !== "") {
    const name = `graded_bench_rate_${process.pid}`
    await admin(server, `CREATE DATABASE ${name}`)
    const url = new URL(server)
    url.pathname = `/${name}`
    const postgres = ManagedRuntime.make(Sql.postgres({ url: url.href }))
    await postgres.runPromise(Effect.void) // migrated before the children start
    const four = await processes(url.href, 4)
    rows.push(
      {
        name: "PostgreSQL server, one process, 8 runs at once",
        round: (n) => postgres.runPromise(many(n, 8)),
        perSecond: []
      },
      { name: "PostgreSQL server, 4 processes, 8 runs at once each", target: 500, round: four.round, perSecond: [] }
    )
    stops.push(() => postgres.dispose(), four.stop, () => admin(server, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`))
  }
  for (const row of rows) await time(row, Math.min(runs, 20)) // warm-up, and migrations
  for (let i = 0; i < rounds; i++) for (const row of rows) await time(row, runs)
  for (const stop of stops) await stop()
  fs.rmSync(dir, { recursive: true, force: true })
  const median = (values: ReadonlyArray<number>) => [...values].sort((x, y) => x - y)[Math.floor(values.length / 2)]!
  const measured = rows.map((row) => ({ ...row, rate: median(row.perSecond.slice(1)) }))
  const table = measured.map((row) =>
    `| ${row.name} | ${row.rate.toFixed(1)} | ${
      row.target === undefined ? "" : `${row.target}: ${row.rate >= row.target ? "met" : "**missed**"}`
    } |`
  ).join("\n")
  console.log(table)
  const section = `## Runs per second

Written by \`pnpm --dir bench bench:runs\` (its second part, bench/throughput.ts; \`bench:throughput\` runs it alone),
all rows side by side in one run of ${Math.round((Date.now() - startedAt) / 1000)} s. A run is a durable run's whole
life: \`Runs.start\` with a scripted model that calls a write, \`Proposal.approve\` by a human who approves at once
(the delivery recorded, the write run, the proposal settled), and \`Runs.resume\` to finished; the Agent.supervised
row is the same life in memory, as the floor. Rounds of ${runs} runs, every row in turn, ${rounds} times after a
warm-up round; the median round. graded runs from its TypeScript sources through tsx. PostgreSQL rows only when
\`GRADED_PG_URL\` names a server (\`.ci/run\` starts Debian's); the 4 processes are child processes of the script
on one database, started before the timed rounds.

- machine: ${os.cpus()[0]?.model ?? "unknown"}, ${os.cpus().length} cores, ${
    Math.round(os.totalmem() / 2 ** 30)
  } GiB, Node ${process.version}; load average (1, 5, 15 min) ${loadBefore} before the run, ${load()} after
- graded: this commit ${execFileSync("git", ["rev-parse", "--short", "HEAD"], { cwd: here, encoding: "utf8" }).trim()}

| runs (start, write call, approval, delivery, finish) | runs/s | target |
|---|---|---|
${table}
`
  const page = path.join(here, "../docs/PERFORMANCE.md")
  const current = fs.readFileSync(page, "utf8")
  const heading = "## Runs per second\n"
  const at = current.indexOf(heading)
  const after = at === -1 ? -1 : current.indexOf("\n## ", at + heading.length)
  fs.writeFileSync(
    page,
    at === -1
      ? `${current.trimEnd()}\n\n${section}`
      : `${current.slice(0, at)}${section}${after === -1 ? "" : current.slice(after)}`
  )
  console.log("wrote its section of docs/PERFORMANCE.md")
}

const workerAt = process.argv.indexOf("--worker")
if (workerAt !== -1) await worker(process.argv[workerAt + 1]!)
else await main()
