// Audit sinks, side by side: the same entries recorded through the Audit
// service (`Audit.record`, stamped with the invocation context, as every tool
// call records them) into a JSON Lines file, a SQLite file (`Sql.sqlite`, on
// node:sqlite) and
// PostgreSQL (`Sql.postgres`: PGlite behind its wire server on 127.0.0.1, and
// the server GRADED_PG_URL names when it is set), with the memory sink as the
// floor. Each sample records for a fixed time, from one fiber (each entry
// waits for the one before, as in one run) and from 16 at once (many runs in
// one process); samples of all sinks are interleaved, so a noisy stretch of
// the machine falls on all of them. Afterwards every sink is counted: a sink
// drops what it cannot store rather than fail the call, so a rate is only
// reported with the number of entries that were actually kept.
//
// `pnpm --dir bench bench:audit` runs this alone and rewrites its section of
// docs/PERFORMANCE.md; `pnpm bench` runs it with the rest.
import { PGlite } from "@electric-sql/pglite"
import { PGLiteSocketServer } from "@electric-sql/pglite-socket"
import { NodeFileSystem } from "@effect/platform-node"
import { PgClient } from "@effect/sql-pg"
import { Audit, Invocation } from "@graded/core"
import { Sql } from "@graded/sql"
import { Context, Effect, Exit, Layer, Redacted, Scope } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { execFileSync } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { DatabaseSync } from "node:sqlite"
import { writeChart } from "./charts.js"
import { loadedFrom } from "./loaded.js"

// One tool call's worth of entries, a send a human approved, and a refusal.
const events: ReadonlyArray<Audit.Event> = [
  { type: "called", tool: "chat.sendMessage", input: { text: "Your invoice is attached." } },
  {
    type: "confirm-requested",
    tool: "chat.sendMessage",
    grade: "send",
    payload: { to: "customer:42", text: "Your invoice is attached." }
  },
  { type: "decided", tool: "chat.sendMessage", by: "web:alice", decision: "approved", edited: false },
  { type: "delivered", tool: "chat.sendMessage", by: "web:alice" },
  { type: "completed", tool: "chat.sendMessage", chars: 17 },
  { type: "refused", tool: "ticket.submit", gate: "autonomous", reason: "a model may not run a write tool" }
]

interface Sink {
  readonly name: string
  readonly layer: Layer.Layer<Audit.Audit, unknown>
  /** How many entries the sink holds once its layer is closed. */
  readonly stored: () => Promise<number>
}

const median = (values: ReadonlyArray<number>) => [...values].sort((x, y) => x - y)[Math.floor(values.length / 2)]!

// Records for `millis`, `fibers` at once; returns entries per second and how many were recorded.
const sample = async (audit: Context.Context<Audit.Audit>, fibers: number, millis: number, trace: string) => {
  let recorded = 0
  const started = performance.now()
  const deadline = started + millis
  const worker = (id: number) =>
    Effect.gen(function*() {
      while (performance.now() < deadline) {
        for (const event of events) yield* Audit.record(event)
        recorded += events.length
      }
    }).pipe(Invocation.within({ traceId: `${trace}-${id}`, actor: "agent:bench", autonomous: false }))
  await Effect.runPromise(
    Effect.forEach(Array.from({ length: fibers }, (_, i) => i), worker, { concurrency: "unbounded" }).pipe(
      Effect.provide(audit)
    )
  )
  return { perSecond: recorded / ((performance.now() - started) / 1000), recorded }
}

// Counted with a client of the bench's own: `Sql.sqlite` and `Sql.postgres` keep theirs.
const countSqliteRows = (filename: string) => async () => {
  const db = new DatabaseSync(filename, { readOnly: true })
  try {
    return Number((db.prepare("SELECT count(*) AS n FROM graded_audit").get() as { readonly n: unknown }).n)
  } finally {
    db.close()
  }
}
const countRows = (layer: Layer.Layer<SqlClient, unknown>) => () =>
  Effect.runPromise(Effect.scoped(Effect.gen(function*() {
    const sql = Context.get(yield* Layer.build(layer), SqlClient)
    const [row] = yield* sql<{ readonly n: unknown }>`SELECT count(*) AS n FROM graded_audit`
    return Number(row?.n)
  })))

export interface AuditResult {
  readonly rows: ReadonlyArray<{
    readonly sink: string
    readonly oneFiber: number
    readonly sixteenFibers: number
    readonly recorded: number
    readonly stored: number
  }>
  readonly millis: number
  readonly repetitions: number
}

/** Measures every sink; `log` says what it is doing. */
export const measureAudit = async (
  options: { readonly repetitions: number; readonly millis: number; readonly log: (line: string) => void }
): Promise<AuditResult> => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "graded-bench-audit-"))
  const pglite = await PGlite.create()
  const server = new PGLiteSocketServer({ db: pglite, host: "127.0.0.1", port: 0, maxConnections: 50 })
  await server.start()
  const pgliteUrl = `postgres://postgres@${server.getServerConn()}/postgres`
  const memory = Audit.memory()
  const jsonl = path.join(dir, "audit.jsonl")
  const sqlite = path.join(dir, "graded.db")
  const sinks: Array<Sink> = [
    { name: "memory (`Audit.memory`)", layer: memory.layer, stored: async () => memory.entries.length },
    {
      name: "JSON Lines file (`Audit.jsonl`)",
      layer: Audit.jsonl(jsonl).pipe(Layer.provide(NodeFileSystem.layer)),
      stored: async () => readFileSync(jsonl, "utf8").split("\n").filter((line) => line !== "").length
    },
    {
      name: "SQLite file (`Sql.sqlite`)",
      layer: Sql.sqlite({ filename: sqlite }),
      stored: countSqliteRows(sqlite)
    },
    {
      name: "PostgreSQL: PGlite's wire server on 127.0.0.1 (`Sql.postgres`)",
      layer: Sql.postgres({ url: pgliteUrl }),
      stored: countRows(PgClient.layer({ url: Redacted.make(pgliteUrl) }))
    }
  ]
  const real = process.env.GRADED_PG_URL
  if (real !== undefined && real !== "") {
    // Its own table: the audit of whatever else uses this database is left alone.
    await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      // Migrated first (the table may not exist yet), then cleared with the bench's own client.
      yield* Layer.build(Sql.postgres({ url: real }))
      const sql = Context.get(yield* Layer.build(PgClient.layer({ url: Redacted.make(real) })), SqlClient)
      yield* sql`DELETE FROM graded_audit WHERE actor = 'agent:bench'`
    })))
    sinks.push({
      name: "PostgreSQL: the server GRADED_PG_URL names (`Sql.postgres`)",
      layer: Sql.postgres({ url: real }),
      stored: () =>
        Effect.runPromise(Effect.scoped(Effect.gen(function*() {
          const sql = Context.get(yield* Layer.build(PgClient.layer({ url: Redacted.make(real) })), SqlClient)
          const [row] = yield* sql<{ readonly n: unknown }>`SELECT count(*) AS n FROM graded_audit
            WHERE actor = 'agent:bench'`
          return Number(row?.n)
        })))
    })
  }
  try {
    // Each sink stays open for the whole run (as in an app): its layer, its
    // migrations and its pool are not part of a sample.
    const scope = Effect.runSync(Scope.make())
    const opened = []
    for (const sink of sinks) {
      opened.push(await Effect.runPromise(Layer.buildWithScope(sink.layer, scope)))
    }
    const one = sinks.map(() => [] as Array<number>)
    const many = sinks.map(() => [] as Array<number>)
    const recorded = sinks.map(() => 0)
    // Warm up: JIT, prepared statements, the pool's connections.
    for (const [i, audit] of opened.entries()) recorded[i]! += (await sample(audit, 16, 200, "warm")).recorded
    for (let r = 0; r < options.repetitions; r++) {
      for (const [i, audit] of opened.entries()) {
        const single = await sample(audit, 1, options.millis, `one-${r}`)
        const concurrent = await sample(audit, 16, options.millis, `many-${r}`)
        one[i]!.push(single.perSecond)
        many[i]!.push(concurrent.perSecond)
        recorded[i]! += single.recorded + concurrent.recorded
        options.log(
          `  ${sinks[i]!.name}: ${Math.round(single.perSecond)} entries/s from one fiber, ${
            Math.round(concurrent.perSecond)
          } from 16`
        )
      }
    }
    await Effect.runPromise(Scope.close(scope, Exit.void))
    const rows = []
    for (const [i, sink] of sinks.entries()) {
      rows.push({
        sink: sink.name,
        oneFiber: median(one[i]!),
        sixteenFibers: median(many[i]!),
        recorded: recorded[i]!,
        stored: await sink.stored()
      })
    }
    return { rows, millis: options.millis, repetitions: options.repetitions }
  } finally {
    await server.stop()
    await pglite.close()
    rmSync(dir, { recursive: true, force: true })
  }
}

const rate = (x: number) => Math.round(x).toLocaleString("en")

/** The section of docs/PERFORMANCE.md, from `## Audit sinks` to the next `## `. */
/** The section's picture, beside the page: entries per second of each sink, from 16 fibers. */
export const auditChart = (result: AuditResult, images: string): void =>
  writeChart(path.join(images, "bench-audit.svg"), {
    title: "Audit sinks: thousand entries per second, 16 fibers at once (median; longer is faster)",
    unit: "k/s",
    digits: 0,
    bars: result.rows.map((row) => ({ label: row.sink.replace(/`/g, ""), value: row.sixteenFibers / 1000, ours: true }))
  })

export const auditSection = (result: AuditResult): string => {
  const jsonl = result.rows.find((row) => row.sink.startsWith("JSON Lines"))!
  const sqlite = result.rows.find((row) => row.sink.startsWith("SQLite"))!
  return `## Audit sinks

Entries per second recorded through the Audit service (\`Audit.record\`, stamped with the invocation context, as a tool
call records them) into each sink, the same entries in the same run (bench/audit.ts; \`pnpm --dir bench bench:audit\`
runs it alone). Each sample records for ${result.millis} ms, from one fiber (each entry waits for the one before, as in
one run) and from 16 fibers at once (many runs in one process); medians of ${result.repetitions} interleaved samples.
Six entries a round: a call, a confirmation asked, approved and delivered, its completion, and a refusal. The SQL
sinks write one row per entry (entries recorded at the same time share a statement), with the columns and indexes of
[durability.md](durability.md#the-audit-in-sql); PostgreSQL's pool holds 10 connections. ${loadedFrom()}, for every
sink alike. "kept" counts what each sink holds afterwards: a sink
drops what it cannot store rather than fail the call, so a rate without it would prove nothing.

- machine: ${os.cpus()[0]?.model ?? "unknown"}, ${os.cpus().length} cores, ${
    Math.round(os.totalmem() / 2 ** 30)
  } GiB, Node ${process.version}, ${os.platform()}; load average (1, 5, 15 min) ${
    os.loadavg().map((x) => x.toFixed(1)).join(", ")
  } after the run (a shared machine: rates move by tens of percent between runs)
- this commit: ${execFileSync("git", ["rev-parse", "--short", "HEAD"], { encoding: "utf8" }).trim()}

![Audit sinks, entries per second from 16 fibers](images/bench-audit.svg)

| sink | entries/s, one fiber | entries/s, 16 fibers | vs JSON Lines (16 fibers) | kept / recorded |
|---|---|---|---|---|
${
    result.rows.map((row) =>
      `| ${row.sink} | ${rate(row.oneFiber)} | ${rate(row.sixteenFibers)} | ${
        (row.sixteenFibers / jsonl.sixteenFibers).toFixed(2)
      } × | ${row.stored.toLocaleString("en")} / ${row.recorded.toLocaleString("en")} |`
    ).join("\n")
  }

Issue 33's target: a SQLite file keeps at least 20,000 entries/s from 16 fibers: ${rate(sqlite.sixteenFibers)}, ${
    sqlite.sixteenFibers >= 20_000 ? "met" : "**missed**"
  }${sqlite.stored === sqlite.recorded ? "" : " (but it did not keep every entry)"}.

Where the time goes. The JSON Lines sink appends under a lock, one write a line, without fsync. \`Sql.sqlite\` is
graded's own effect/sql client over Node's built-in \`node:sqlite\` (one connection, its statements prepared once),
with its default \`synchronous = "normal"\` (docs/durability.md says what that risks against \`"full"\`): a commit
writes the WAL and does not wait for an fsync. Entries recorded at the same time share one statement and one commit
(a group commit); from one fiber each entry waits for the one before, so each is its own statement; from 16 fibers
they go in groups of up to 16. \`node:sqlite\` runs a statement synchronously, on the process's one thread: a
statement's time is this process's CPU, as PGlite's is below. PGlite is one PostgreSQL backend in WebAssembly in
this same Node process, behind a socket: its rows also cost this process's CPU, which a separate server's do not: a
row there costs more than the group saves.
`
}

// Run alone: measure, print, and put the section into docs/PERFORMANCE.md.
if (import.meta.url === `file://${process.argv[1]}`) {
  const { writeFileSync } = await import("node:fs")
  const { fileURLToPath } = await import("node:url")
  const millis = Number(process.env.BENCH_AUDIT_MILLIS ?? 1200)
  const repetitions = Number(process.env.BENCH_REPETITIONS ?? 3)
  console.log(`Audit sinks, ${repetitions} repetitions of ${millis} ms each:`)
  const result = await measureAudit({ repetitions, millis, log: console.log })
  const section = auditSection(result)
  console.log(section)
  auditChart(result, path.join(path.dirname(fileURLToPath(import.meta.url)), "../docs/images"))
  const doc = path.join(path.dirname(fileURLToPath(import.meta.url)), "../docs/PERFORMANCE.md")
  const text = readFileSync(doc, "utf8")
  // Where run.ts puts it: before the notes on the peer rows.
  const found = text.indexOf("## Audit sinks")
  const start = found !== -1 ? found : text.indexOf("## What the peer rows measure")
  const end = found === -1 ? start : text.indexOf("\n## ", found + 1) + 1
  writeFileSync(
    doc,
    start === -1 ? `${text.trimEnd()}\n\n${section}` : `${text.slice(0, start)}${section}\n${text.slice(end)}`
  )
  console.log("wrote the Audit sinks section of docs/PERFORMANCE.md")
}
