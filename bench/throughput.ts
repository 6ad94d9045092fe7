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
      const before = process.cpuUsage()
      await runtime.runPromise(many(Number(line), 8))
      const cpu = process.cpuUsage(before)
      process.stdout.write(`done ${cpu.user + cpu.system}\n`)
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
  // Each line a child answers: "ready", or "done <its CPU microseconds for the round>".
  const lines = children.map((child) => {
    const waiting: Array<(line: string) => void> = []
    let buffer = ""
    child.stdout.on("data", (chunk) => {
      buffer += String(chunk)
      for (let at = buffer.indexOf("\n"); at !== -1; at = buffer.indexOf("\n")) {
        const line = buffer.slice(0, at)
        buffer = buffer.slice(at + 1)
        waiting.shift()?.(line)
      }
    })
    return () => new Promise<string>((resolve) => waiting.push(resolve))
  })
  await Promise.all(lines.map((line) => line()))
  return {
    // The children's CPU for the round, in microseconds.
    round: async (runs: number) => {
      const answers = await Promise.all(children.map((child, i) => {
        const done = lines[i]!()
        child.stdin.write(`${Math.ceil(runs / count)}\n`)
        return done
      }))
      return answers.reduce((sum, line) => sum + Number(line.split(" ")[1]), 0)
    },
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
  /** Runs a round; a round in other processes answers their CPU (µs). */
  readonly round: (runs: number) => Promise<unknown>
  readonly perSecond: Array<number>
  /** CPU milliseconds a run: of the processes that ran it, and of the database server. */
  readonly cpu: Array<number>
  readonly serverCpu: Array<number>
}

// The CPU (ms) of every process named postgres this machine shows in /proc:
// a database server on loopback, which on a bench machine is the one here.
const postgresCpu = (): number | undefined => {
  if (!fs.existsSync("/proc/self/stat")) return undefined
  let ticks = 0
  for (const pid of fs.readdirSync("/proc")) {
    if (!/^[0-9]+$/.test(pid)) continue
    try {
      const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8")
      if (!stat.includes("(postgres)")) continue
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
      ticks += Number(fields[11]) + Number(fields[12])
    } catch {
      // The process ended meanwhile.
    }
  }
  return ticks * 10 // at Linux's 100 ticks a second
}

const time = async (row: Row, runs: number) => {
  const cpuBefore = process.cpuUsage()
  const serverBefore = postgresCpu()
  const started = performance.now()
  const children = await row.round(runs)
  row.perSecond.push(runs / ((performance.now() - started) / 1000))
  const own = process.cpuUsage(cpuBefore)
  row.cpu.push((typeof children === "number" ? children : own.user + own.system) / 1000 / runs)
  const serverAfter = postgresCpu()
  if (serverBefore !== undefined && serverAfter !== undefined) row.serverCpu.push((serverAfter - serverBefore) / runs)
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
      perSecond: [],
      cpu: [],
      serverCpu: []
    },
    {
      name: "SQLite file, one run at a time",
      round: (n) => sqlite.runPromise(many(n, 1)),
      perSecond: [],
      cpu: [],
      serverCpu: []
    },
    {
      name: "SQLite file, 8 runs at once",
      target: 200,
      round: (n) => sqlite.runPromise(many(n, 8)),
      perSecond: [],
      cpu: [],
      serverCpu: []
    }
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
        perSecond: [],
        cpu: [],
        serverCpu: []
      },
      {
        name: "PostgreSQL server, 4 processes, 8 runs at once each",
        target: 500,
        round: four.round,
        perSecond: [],
        cpu: [],
        serverCpu: []
      }
    )
    stops.push(() => postgres.dispose(), four.stop, () => admin(server, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`))
  }
  // A warm-up round as long as the others: migrations, connections, and the
  // JIT of every process (each of the 4 children runs a quarter of it).
  for (const row of rows) await time(row, runs)
  for (let i = 0; i < rounds; i++) for (const row of rows) await time(row, runs)
  for (const stop of stops) await stop()
  fs.rmSync(dir, { recursive: true, force: true })
  const median = (values: ReadonlyArray<number>) => [...values].sort((x, y) => x - y)[Math.floor(values.length / 2)]!
  const measured = rows.map((row) => ({
    ...row,
    rate: median(row.perSecond.slice(1)),
    cpuPerRun: median(row.cpu.slice(1)),
    serverPerRun: row.serverCpu.length > 1 ? median(row.serverCpu.slice(1)) : undefined
  }))
  const table = measured.map((row) =>
    `| ${row.name} | ${row.rate.toFixed(1)} | ${row.cpuPerRun.toFixed(2)} | ${
      row.name.startsWith("PostgreSQL") && row.serverPerRun !== undefined ? row.serverPerRun.toFixed(2) : ""
    } | ${row.target === undefined ? "" : `${row.target}: ${row.rate >= row.target ? "met" : "**missed**"}`} |`
  ).join("\n")
  // What the machine's cores can carry at the CPU a run costs, graded's and the server's.
  const four = measured.find((row) => row.target === 500)
  const cores = os.cpus().length
  const ceiling = four === undefined || four.serverPerRun === undefined ? "" : (() => {
    const total = four.cpuPerRun + four.serverPerRun
    return `\nOn PostgreSQL from 4 processes a run costs ${four.cpuPerRun.toFixed(2)} ms of CPU in graded's processes
and ${four.serverPerRun.toFixed(2)} ms in the server's: ${total.toFixed(2)} ms, so ${cores} cores carry at most ${
      Math.round(cores * 1000 / total)
    } runs/s, busy with nothing else. ${four.target} runs/s asks for at most ${(cores * 1000 / 500).toFixed(1)} ms of
CPU a run on this machine, or ${Math.ceil(total * 500 / 1000)} cores at this cost a run.\n`
  })()
  console.log(table)
  const section = `## Runs per second

Written by \`pnpm --dir bench bench:runs\` (its second part, bench/throughput.ts; \`bench:throughput\` runs it alone),
all rows side by side in one run of ${Math.round((Date.now() - startedAt) / 1000)} s. A run is a durable run's whole
life: \`Runs.start\` with a scripted model that calls a write, \`Proposal.approve\` by a human who approves at once
(the delivery recorded, the write run, the proposal settled), and \`Runs.resume\` to finished; the Agent.supervised
row is the same life in memory, as the floor. Rounds of ${runs} runs, every row in turn, ${rounds} times after a
warm-up round of as many; the median round. graded runs from its TypeScript sources through tsx. PostgreSQL rows only when
\`GRADED_PG_URL\` names a server (\`.ci/run\` starts Debian's); the 4 processes are child processes of the script
on one database, started before the timed rounds.

- machine: ${os.cpus()[0]?.model ?? "unknown"}, ${os.cpus().length} cores, ${
    Math.round(os.totalmem() / 2 ** 30)
  } GiB, Node ${process.version}; load average (1, 5, 15 min) ${loadBefore} before the run, ${load()} after
- graded: this commit ${execFileSync("git", ["rev-parse", "--short", "HEAD"], { cwd: here, encoding: "utf8" }).trim()}

| runs (start, write call, approval, delivery, finish) | runs/s | CPU a run, graded (ms) | CPU a run, PostgreSQL server (ms) | target |
|---|---|---|---|---|
${table}

CPU a run: the CPU time of the processes that ran the round (this one, or the 4 children), and of every process
named \`postgres\` on this machine (the server on loopback), over the round, divided by its runs; medians of the
rounds. A SQLite statement runs in this process, so its rows hold the database's CPU too.
${ceiling}`
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
