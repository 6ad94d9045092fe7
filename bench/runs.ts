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
//     take about as long;
// (d) in memory: the bytes a pending confirmation card keeps (its run, its
//     proposal, its audit entries), and (a) and (b) with 2,000 cards pending
//     in the store against an empty one.
// (e) in memory, the proposal store of this commit against the one before
//     issue #18's last indexes (bench/runsBefore.ts, a copy kept for this),
//     each holding the same 2,000 cards pending with an expiry: (b), a
//     run's resume, whose `Proposal.recover` expires what lapsed; `recover`
//     alone; `list({ status })` without a run; and `Tool.proposal`'s propose
//     under a trace of its own (it counts the trace's pending proposals).
//
// Nothing here polls or sleeps: each figure is the time from a call to its
// answer. The memory store does no I/O, so its rows are CPU (shown beside
// them) and need a warmed JIT: it gets 200 warm-up runs and 20 timed runs a
// turn where a database store gets one.
//
// On memory, a SQLite file, PostgreSQL (PGlite's wire server, started here on
// 127.0.0.1) and, when GRADED_PG_URL names a server, a database of its own on
// it. graded runs from its TypeScript sources through tsx here (unlike
// `pnpm bench`, which measures the compiled build): these figures are
// milliseconds of database round trips, where tsx's wrappers do not show.
import { PGlite } from "@electric-sql/pglite"
import { PGLiteSocketServer } from "@electric-sql/pglite-socket"
import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Layer, ManagedRuntime, Redacted, Schema } from "effect"
import * as SqlClient from "effect/sql/SqlClient"
import {
  Audit,
  HumanConfirm,
  Invocation,
  Proposal,
  ProposalStore,
  Registry,
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
import { DatabaseSync } from "node:sqlite"
import { fileURLToPath } from "node:url"
import { memoryBefore } from "./runsBefore.js"

const here = path.dirname(fileURLToPath(import.meta.url))
const repetitions = Number(process.env.BENCH_RUNS_REPETITIONS ?? 15)
const deepRepetitions = Number(process.env.BENCH_RUNS_DEEP_REPETITIONS ?? 10)
const deepSteps = Number(process.env.BENCH_RUNS_STEPS ?? 200)
const memoryPerTurn = Number(process.env.BENCH_RUNS_MEMORY_PER_TURN ?? 20)
const memoryWarmup = Number(process.env.BENCH_RUNS_MEMORY_WARMUP ?? 200)
// A database store's runs are mostly waits on its database, but its path is
// graded's code too: warmed as an app that has run a while is.
const dbPerTurn = Number(process.env.BENCH_RUNS_DB_PER_TURN ?? 3)
const dbWarmup = Number(process.env.BENCH_RUNS_DB_WARMUP ?? 30)
const pendingCards = Number(process.env.BENCH_RUNS_PENDING ?? 2000)
const indexTurns = Number(process.env.BENCH_RUNS_INDEX_TURNS ?? 200)
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
  // The same file setting every commit synced, as before delivery records alone were (docs/durability.md).
  add("SQLite file, synchronous full", Sql.sqlite({ filename: path.join(tmp, "runs-full.db"), synchronous: "full" }))
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
        (context) => Context.get(context, SqlClient.SqlClient).unsafe(statement)
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
      Effect.map(
        Context.get(context, SqlClient.SqlClient)<{ server_version: string }>`SHOW server_version`,
        (rows) => rows[0]!.server_version
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
  const cardCpuBefore = process.cpuUsage()
  const card = await timed(() =>
    store.runtime.runPromise(Effect.gen(function*() {
      const started = yield* Runs.start({ toolkit: desk, prompt: "Help the customer.", runId, maxRounds: reads + 2 })
        .pipe(Effect.provide(ScriptedModel.layer(turns)))
      // The page's query.
      const pending = yield* Proposal.list({ status: "pending", runId })
      if (started.status !== "waiting" || pending.length !== 1) {
        return yield* Effect.die(new Error(`${store.name}: the run did not wait on one proposal`))
      }
      return pending[0]!.id
    }))
  )
  const cardCpu = process.cpuUsage(cardCpuBefore)
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
    cardCpu: (cardCpu.user + cardCpu.system) / 1000,
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
// Each store's runs 4 to 18 are kept apart: what 3 warm-up runs and 15 timed
// ones measure of a path the JIT has barely seen (an app's first runs).
const cold = stores.map(() => ({ card: [] as Array<number>, resume: [] as Array<number> }))
for (const [s, store] of stores.entries()) {
  const warmup = store.name === "memory" ? memoryWarmup : dbWarmup
  for (let i = 0; i < Math.max(warmup, 18); i++) {
    const one = await lifecycle(store, 1)
    if (i >= 3 && i < 18) {
      cold[s]!.card.push(one.card)
      cold[s]!.resume.push(one.resume)
    }
  }
}
const samples = stores.map(() => ({
  card: [] as Array<number>,
  cardCpu: [] as Array<number>,
  approve: [] as Array<number>,
  resume: [] as Array<number>,
  resumeCpu: [] as Array<number>
}))
for (let r = 0; r < repetitions; r++) {
  for (const [i, store] of stores.entries()) {
    const turn = store.name === "memory" ? memoryPerTurn : dbPerTurn
    for (let k = 0; k < turn; k++) {
      const one = await lifecycle(store, 1)
      samples[i]!.card.push(one.card)
      samples[i]!.cardCpu.push(one.cardCpu)
      samples[i]!.approve.push(one.approve)
      samples[i]!.resume.push(one.resume)
      samples[i]!.resumeCpu.push(one.resumeCpu)
    }
  }
}
const rows = stores.map((store, i) => {
  const s = samples[i]!
  const row = {
    store: store.name,
    card: median(s.card),
    cardP90: p90(s.card),
    cardCpu: median(s.cardCpu),
    approve: median(s.approve),
    resume: median(s.resume),
    resumeP90: p90(s.resume),
    resumeCpu: median(s.resumeCpu),
    runs: s.card.length
  }
  console.log(
    `  ${row.store} (${row.runs} runs): write call → card ${ms(row.card)} ms (p90 ${ms(row.cardP90)}, CPU ${
      ms(row.cardCpu)
    }), approve ${ms(row.approve)} ms, decision → finished ${ms(row.resume)} ms (p90 ${ms(row.resumeP90)}, CPU ${
      ms(row.resumeCpu)
    })`
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
const shallowCard: Array<number> = []
const deepCard: Array<number> = []
await lifecycle(sqlite, deepSteps - 1)
for (let r = 0; r < deepRepetitions; r++) {
  const few = await lifecycle(sqlite, 1)
  const many = await lifecycle(sqlite, deepSteps - 1)
  shallow.push(few.resume)
  shallowCpu.push(few.resumeCpu)
  deep.push(many.resume)
  deepCpu.push(many.resumeCpu)
  shallowCard.push(few.card)
  deepCard.push(many.card)
}
// What one synced commit costs on this file system: the floor under every
// write of the "synchronous full" store, on a connection of the bench's own
// (`Sql.sqlite` keeps its connection), straight on node:sqlite.
const commit = (() => {
  const db = new DatabaseSync(path.join(tmp, "runs.db"))
  try {
    db.exec("PRAGMA synchronous = FULL")
    db.exec("CREATE TABLE bench_commit (x TEXT)")
    const insert = db.prepare("INSERT INTO bench_commit (x) VALUES (?)")
    const times: Array<number> = []
    for (let i = 0; i < 20; i++) {
      const start = performance.now()
      insert.run("x".repeat(100))
      times.push(performance.now() - start)
    }
    return median(times)
  } finally {
    db.close()
  }
})()
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
  deepCpu: median(deepCpu),
  shallowCard: median(shallowCard),
  deepCard: median(deepCard)
}
const ratio = deepRow.deep / deepRow.shallow
console.log(
  `  2 steps: ${ms(deepRow.shallow)} ms; ${deepSteps} steps: ${ms(deepRow.deep)} ms (p90 ${
    ms(deepRow.deepP90)
  }); ratio ${ratio.toFixed(2)}; CPU ${ms(deepRow.shallowCpu)} ms against ${ms(deepRow.deepCpu)} ms; one commit ${
    ms(commit)
  } ms; start to the card ${ms(deepRow.shallowCard)} ms against ${ms(deepRow.deepCard)} ms`
)

// (d) What a pending card keeps, in memory: runs started on fresh memory
// stores, each waiting on one write (one read before it, as above), the heap
// measured after a full collection before and after. Once with the memory
// audit sink (it keeps every entry) and once with `Audit.ring(0)` (it keeps
// none), alternating, three times each.
const gc = (globalThis as { gc?: () => void }).gc
if (gc === undefined) throw new Error("bench:runs needs node --expose-gc")
const heap = () => {
  for (let i = 0; i < 3; i++) gc()
  return process.memoryUsage().heapUsed
}
const memoryStore = (name: string, audit: Layer.Layer<Audit.Audit>): Store => {
  const runtime = ManagedRuntime.make(Layer.mergeAll(ProposalStore.memory, RunStore.memory, audit))
  return { name, runtime, stop: () => runtime.dispose() }
}
const waitOn = (store: Store, runId: string, i: number) =>
  store.runtime.runPromise(
    Runs.start({ toolkit: desk, prompt: "Help the customer.", runId, maxRounds: 3 }).pipe(
      Effect.provide(ScriptedModel.layer([
        calls(call("kb.search", { query: `question ${i}` })),
        calls(call("ticket.submit", { subject: `ticket ${i}` }))
      ]))
    )
  )
console.log(`Bytes kept per pending card, ${pendingCards.toLocaleString("en")} cards a store, 3 stores per sink:`)
const perCard = { memory: [] as Array<number>, ring: [] as Array<number> }
let loaded: { store: Store; entries: ReadonlyArray<Audit.Entry> } | undefined
for (let r = 0; r < 3; r++) {
  for (const sink of ["memory", "ring"] as const) {
    const audit = sink === "memory" ? Audit.memory() : undefined
    const store = memoryStore(
      `memory, ${pendingCards.toLocaleString("en")} cards pending`,
      audit?.layer ?? Audit.ring(0).layer
    )
    await waitOn(store, `pending-${r}-warm`, -1)
    const before = heap()
    for (let i = 0; i < pendingCards; i++) {
      const outcome = await waitOn(store, `pending-${r}-${i}`, i)
      if (outcome.status !== "waiting") throw new Error("a run did not wait on its write")
    }
    perCard[sink].push((heap() - before) / pendingCards)
    // The last memory-sink store stays, loaded, for the timing below.
    if (sink === "memory" && r === 2) loaded = { store, entries: audit!.entries }
    else await store.stop()
  }
}
// One card as JSON: its run, its proposal and its audit entries.
const oneCard = await loaded!.store.runtime.runPromise(Effect.gen(function*() {
  const runs = yield* RunStore.RunStore
  const run = yield* runs.get("pending-2-0")
  const proposals = yield* Proposal.list({ runId: "pending-2-0" })
  return { run: JSON.stringify(run).length, proposal: JSON.stringify(proposals[0]).length }
}))
const entriesPerCard = loaded!.entries.length / (pendingCards + 1)
const entryJson = JSON.stringify(loaded!.entries).length / (pendingCards + 1)
const memoryRow = {
  withAudit: median(perCard.memory),
  withAuditRange: [Math.min(...perCard.memory), Math.max(...perCard.memory)],
  storesOnly: median(perCard.ring),
  storesOnlyRange: [Math.min(...perCard.ring), Math.max(...perCard.ring)],
  json: oneCard.run + oneCard.proposal + entryJson
}
const bytes = (x: number) => Math.round(x).toLocaleString("en")
console.log(
  `  run + proposal + ${entriesPerCard.toFixed(0)} audit entries: ${bytes(memoryRow.withAudit)} bytes (${
    memoryRow.withAuditRange.map(bytes).join("–")
  }); run + proposal: ${bytes(memoryRow.storesOnly)} (${memoryRow.storesOnlyRange.map(bytes).join("–")}); as JSON ${
    bytes(memoryRow.json)
  }`
)

// (a) and (b) with the cards pending against an empty memory store,
// alternating run by run.
const empty = memoryStore("memory, empty", Audit.memory().layer)
const full = loaded!.store
for (let i = 0; i < 50; i++) {
  await lifecycle(empty, 1)
  await lifecycle(full, 1)
}
const scale = {
  empty: { card: [] as Array<number>, resume: [] as Array<number> },
  full: { card: [] as Array<number>, resume: [] as Array<number> }
}
for (let i = 0; i < 200; i++) {
  for (const [which, store] of [["empty", empty], ["full", full]] as const) {
    const one = await lifecycle(store, 1)
    scale[which].card.push(one.card)
    scale[which].resume.push(one.resume)
  }
}
await empty.stop()
await full.stop()
const scaleRow = {
  emptyCard: median(scale.empty.card),
  emptyResume: median(scale.empty.resume),
  fullCard: median(scale.full.card),
  fullResume: median(scale.full.resume)
}
const cardRatio = scaleRow.fullCard / scaleRow.emptyCard
const resumeRatio = scaleRow.fullResume / scaleRow.emptyResume
console.log(
  `  with ${pendingCards.toLocaleString("en")} cards pending against none: card ${ms(scaleRow.fullCard)} against ${
    ms(scaleRow.emptyCard)
  } ms (${cardRatio.toFixed(2)} ×), decision → finished ${ms(scaleRow.fullResume)} against ${
    ms(scaleRow.emptyResume)
  } ms (${resumeRatio.toFixed(2)} ×)`
)

// (e) The store of this commit against the one before it, side by side: two
// memory stores, each with the same cards pending, each card's proposal
// expiring in a day (a run's `decisionTimeout`), so that every one of them
// has a deadline `expire` may have to look at. Run by run, the two
// alternating (which goes first alternating too).
const sides = [["before", memoryBefore], ["now", ProposalStore.memory]] as const
const timedStores = sides.map(([side, layer]) => {
  const runtime = ManagedRuntime.make(Layer.mergeAll(layer, RunStore.memory, Audit.memory().layer))
  return { side, store: { name: `memory (${side})`, runtime, stop: () => runtime.dispose() } satisfies Store }
})
const proposer = Registry.make(Toolkit.make(Tool.proposal(Submit)))
let traces = 0
const indexed = {
  resume: [[], []] as [Array<number>, Array<number>],
  card: [[], []] as [Array<number>, Array<number>],
  recover: [[], []] as [Array<number>, Array<number>],
  listInDoubt: [[], []] as [Array<number>, Array<number>],
  listPending: [[], []] as [Array<number>, Array<number>],
  propose: [[], []] as [Array<number>, Array<number>]
}
// Microseconds a call, over a batch of calls one after another.
const perCall = async (store: Store, calls: number, effect: Effect.Effect<unknown, unknown, Provided>) => {
  const start = performance.now()
  await store.runtime.runPromise(Effect.forEach(Array.from({ length: calls }), () => effect, { discard: true }))
  return (performance.now() - start) * 1000 / calls
}
const propose = Effect.flatMap(
  Effect.sync(() => `bench-trace-${++traces}`),
  (traceId) =>
    Effect.flatMap(
      proposer.invoke("ticket.submit.propose", { subject: "a ticket" }, { traceId, autonomous: true }),
      (result) => result.ok ? Effect.void : Effect.die(new Error(`propose: ${result.error}`))
    )
)
const indexLoadBefore = load()
for (const { store } of timedStores) {
  await store.runtime.runPromise(Effect.void)
  for (let i = 0; i < pendingCards; i++) {
    const outcome = await store.runtime.runPromise(
      Runs.start({
        toolkit: desk,
        prompt: "Help the customer.",
        runId: `timed-${i}`,
        maxRounds: 3,
        decisionTimeout: "1 day"
      })
        .pipe(Effect.provide(ScriptedModel.layer([
          calls(call("kb.search", { query: `question ${i}` })),
          calls(call("ticket.submit", { subject: `ticket ${i}` }))
        ])))
    )
    if (outcome.status !== "waiting") throw new Error("a run did not wait on its write")
  }
}
const timedPending = await timedStores[1]!.store.runtime.runPromise(
  Effect.map(Proposal.list({ status: "pending" }), (pending) => pending.filter((p) => p.expiresAt !== undefined).length)
)
for (let i = 0; i < 50; i++) for (const { store } of timedStores) await lifecycle(store, 1)
for (let i = 0; i < indexTurns; i++) {
  const order = i % 2 === 0 ? [0, 1] as const : [1, 0] as const
  for (const k of order) {
    const { store } = timedStores[k]!
    const one = await lifecycle(store, 1)
    indexed.resume[k].push(one.resume)
    indexed.card[k].push(one.card)
    if (i % 5 === 0) {
      indexed.recover[k].push(await perCall(store, 50, Proposal.recover))
      indexed.listInDoubt[k].push(await perCall(store, 50, Proposal.list({ status: "in-doubt" })))
      indexed.listPending[k].push(await perCall(store, 5, Proposal.list({ status: "pending" })))
      indexed.propose[k].push(await perCall(store, 20, propose))
    }
  }
}
const indexLoadAfter = load()
const heldAtEnd = await timedStores[1]!.store.runtime.runPromise(Effect.all({
  all: Proposal.list(),
  pending: Proposal.list({ status: "pending" })
}))
for (const { store } of timedStores) await store.stop()
// Two decimals, or two significant digits under 0.1 (a ratio of 0.004 is not 0.00).
const ratio2 = (x: number) => (x >= 0.1 ? x.toFixed(2) : x.toPrecision(2))
const spread = (values: ReadonlyArray<number>, digits: (x: number) => string) =>
  `${digits(median(values))} (${digits(Math.min(...values))}–${digits(Math.max(...values))})`
const us = (x: number) => x.toFixed(x < 10 ? 1 : 0)
const indexRows = [
  { what: "decision → run finished (`Runs.resume`, ms)", key: "resume", unit: ms },
  { what: "write call → pending card (ms)", key: "card", unit: ms },
  { what: "`Proposal.recover`, nothing lapsed (µs)", key: "recover", unit: us },
  { what: "`Proposal.list({ status: \"in-doubt\" })`, none (µs)", key: "listInDoubt", unit: us },
  {
    what: `\`Proposal.list({ status: "pending" })\`, ${pendingCards.toLocaleString("en")} growing to ${
      heldAtEnd.pending.length.toLocaleString("en")
    } (µs)`,
    key: "listPending",
    unit: us
  },
  { what: "`Tool.proposal`'s propose under a new trace (µs)", key: "propose", unit: us }
] as const
const indexTable = indexRows.map(({ key, unit, what }) => {
  const [before, now] = indexed[key]
  // Ratios run by run (or batch by batch): each pair ran back to back.
  const ratios = now.map((x, j) => x / before[j]!)
  const row = `| ${what} | ${spread(before, unit)} | ${spread(now, unit)} | ${spread(ratios, ratio2)} |`
  console.log(
    `  ${what}: before ${spread(before, unit)}, now ${spread(now, unit)}, now / before ${spread(ratios, ratio2)}`
  )
  return row
}).join("\n")

for (const store of stores) await store.stop()
fs.rmSync(tmp, { recursive: true, force: true })
const seconds = Math.round((Date.now() - startedAt) / 1000)
const loadAfter = load()

const verdict = (met: boolean) => (met ? "met" : "**missed**")
const memory = rows.find((row) => row.store === "memory")!
const sqliteRow = rows.find((row) => row.store === "SQLite file")!
const coldRows = stores.map((store, s) => ({
  store: store.name,
  card: median(cold[s]!.card),
  resume: median(cold[s]!.resume)
}))
const section = `## Supervised runs

Written by \`pnpm --dir bench bench:runs\` (bench/runs.ts), which rewrites only this section; all figures from one
run of ${seconds} s on the machine below. A run's life on each store, in ${repetitions} turns after the warm-up runs,
the stores taking turns so that a noisy stretch falls on all of them: a database store runs ${dbPerTurn} times a turn
after ${dbWarmup} warm-up runs; the memory store, whose work is CPU alone, ${memoryPerTurn} times a turn after
${memoryWarmup} warm-up runs (a few runs would time a path the JIT has not compiled yet; the first runs are below). Medians, and the 90th percentile where the tail
matters. One process: the store's layer is built once, as an app holds it (a \`ManagedRuntime\`), with the store's
audit sink (memory's keeps entries in an array). graded runs from its TypeScript sources through tsx. Nothing polls
or sleeps: each figure is the time from the call to its answer, and the CPU columns (medians of this process's CPU
over the same span, all its threads, the collector's helpers included) show where that time went: in memory, all
of it is CPU. The memory rows' 90th percentiles follow the machine's load (on effect 3.22, with a load average of 5
to 6 on the 2 cores, they were 2.4 to 4.2 ms to the card and 0.7 to 1.4 ms to the run finished, the process waiting
for a core now and then).

- machine: ${os.cpus()[0]?.model ?? "unknown"}, ${os.cpus().length} cores, ${
  Math.round(os.totalmem() / 2 ** 30)
} GiB, Node ${process.version}; load average (1, 5, 15 min) ${loadBefore} before the run, ${loadAfter} after${
  Number(loadBefore.split(",")[0]) > os.cpus().length ? " (shared, busy: other work ran meanwhile)" : ""
}
- graded: this commit ${execFileSync("git", ["rev-parse", "--short", "HEAD"], { cwd: here, encoding: "utf8" }).trim()}
- PGlite (PostgreSQL in WebAssembly) serves its wire protocol from this same process and runs one statement at a
  time; a real server, when \`GRADED_PG_URL\` names one, gets its own row.

| store | runs | write call → pending card (ms) | p90 | CPU (ms) | approve: the human's click → delivered (ms) | decision → run finished (ms) | p90 | CPU (ms) |
|---|---|---|---|---|---|---|---|---|
${
  rows.map((r) =>
    `| ${r.store} | ${r.runs} | ${ms(r.card)} | ${ms(r.cardP90)} | ${ms(r.cardCpu)} | ${ms(r.approve)} | ${
      ms(r.resume)
    } | ${ms(r.resumeP90)} | ${ms(r.resumeCpu)} |`
  ).join("\n")
}

Issue 33's target on a SQLite file: a write call to a pending card in at most 3 ms (median): ${
  ms(sqliteRow.card)
} ms, ${verdict(sqliteRow.card <= 3)}.

- **write call → pending card**: \`Runs.start\` with a scripted model whose first turn calls \`kb.search\` (a read,
  run at once) and whose second calls \`ticket.submit\` (a write), until the page's query,
  \`Proposal.list({ status: "pending", runId })\`, returns the proposal: the run created, the read run and audited,
  the run saved, the write proposed and audited, the run saved \`waiting\`.
- **approve**: \`Proposal.approve\` with a scripted \`HumanConfirm\` that approves at once: claim, the delivery recorded
  under its key, the write run, the proposal settled \`delivered\`, audited.
- **decision → run finished**: \`Runs.resume\` once the approval has settled: lapsed proposals expired, the run read
  and claimed, the decision read and given to the model, one more (scripted) turn, the run saved \`finished\`.

Each store's runs 4 to 18 of its warm-up (what 3 warm-up runs and 15 timed ones used to measure) took, from the
write call to the card and from the decision to the run finished (medians): ${
  coldRows.map((row) => `${row.store} ${ms(row.card)} and ${ms(row.resume)} ms`).join("; ")
}. A path run a handful of times is still interpreted or half compiled, and an app's first runs after it starts see
those times.

### In memory: what a pending card keeps, and many cards pending

${pendingCards.toLocaleString("en")} runs on a fresh memory store, each waiting on its write (a read, then the write, as
above); the heap after a full collection (\`--expose-gc\`) before and after, divided by the cards. Three stores
with the memory audit sink, which keeps every entry, and three with \`Audit.ring(0)\`, which keeps none,
alternating; medians, least and greatest in brackets. Each card is one stored run (its state: the conversation, the
read's call, the waiting turn), one proposal, and ${entriesPerCard.toFixed(0)} audit entries; as JSON they take ${
  bytes(memoryRow.json)
} bytes (the run ${bytes(oneCard.run)}, the proposal ${bytes(oneCard.proposal)}, the entries ${bytes(entryJson)}).

| kept per pending card | bytes |
|---|---|
| run + proposal + its ${entriesPerCard.toFixed(0)} audit entries (memory sink) | ${bytes(memoryRow.withAudit)} (${
  memoryRow.withAuditRange.map(bytes).join("–")
}) |
| run + proposal (\`Audit.ring(0)\`) | ${bytes(memoryRow.storesOnly)} (${
  memoryRow.storesOnlyRange.map(bytes).join("–")
}) |
| its audit entries (the difference) | ${bytes(memoryRow.withAudit - memoryRow.storesOnly)} |

Then, on the last memory-sink store (its ${
  pendingCards.toLocaleString("en")
} cards still pending) and on an empty memory store, a run's life as above, the two stores alternating run by run, 50 warm-up runs and 200 timed runs each:

| memory store | write call → pending card (ms) | decision → run finished (ms) |
|---|---|---|
| empty | ${ms(scaleRow.emptyCard)} | ${ms(scaleRow.emptyResume)} |
| ${pendingCards.toLocaleString("en")} cards pending | ${ms(scaleRow.fullCard)} | ${ms(scaleRow.fullResume)} |
| ratio | ${cardRatio.toFixed(2)} × | ${resumeRatio.toFixed(2)} × |

| target (memory store) | measured | verdict |
|---|---|---|
| write call → pending card under 1 ms (median) | ${ms(memory.card)} ms | ${verdict(memory.card < 1)} |
| write call → pending card under 2 ms (p90) | ${ms(memory.cardP90)} ms | ${verdict(memory.cardP90 < 2)} |
| decision → run finished under 1 ms (median) | ${ms(memory.resume)} ms | ${verdict(memory.resume < 1)} |
| decision → run finished under 2 ms (p90) | ${ms(memory.resumeP90)} ms | ${verdict(memory.resumeP90 < 2)} |
| approve under 1 ms (median) | ${ms(memory.approve)} ms | ${verdict(memory.approve < 1)} |
| as fast with ${pendingCards.toLocaleString("en")} cards pending as with none (within 1.25 ×) | ${
  cardRatio.toFixed(2)
} × and ${resumeRatio.toFixed(2)} × | ${verdict(cardRatio < 1.25 && resumeRatio < 1.25)} |
| a pending card keeps at most twice its JSON (run, proposal, audit entries) | ${
  (memoryRow.withAudit / memoryRow.json).toFixed(2)
} × (${bytes(memoryRow.withAudit)} of ${bytes(memoryRow.json)} bytes) | ${
  verdict(memoryRow.withAudit <= 2 * memoryRow.json)
} |

Why these targets. In memory nothing waits on a disk or a network, and the work of a turn is a few store calls,
a handful of audit entries and one registry dispatch, each a few microseconds (see the Runtime section): a model
call takes hundreds of milliseconds, and the library's bookkeeping around it should stay below a millisecond, so
that a test suite of thousands of supervised runs, or a demo on a laptop, never waits on graded; the 90th
percentile gets 2 ms because a collection of the young generation lands on some runs. The memory store is for
single-process apps as well as tests, where cards pile up while people are away: the time of a call must not grow
with the cards already waiting. And a pending card should keep its data and little else (no fiber, closure or copy
per card): V8 objects of this kind of data take about twice its JSON (a run read back with \`JSON.parse\` does), so
twice the JSON is the bound.

What changed to get here (on effect 3.22 and Node 20, before #37; profiled with \`node --cpu-prof\`, 3,000 and 10,000
runs on one memory store, and with heap snapshots). Nothing on this path polls, sleeps or waits on a timer: the wall time of each row is its CPU. The
memory rows this section showed before, 1.43 ms to the card and 0.80 ms to the run finished, timed runs 4 to 18 of a
cold path (see above) at load 10 on 2 cores. What did grow, with the cards waiting and every proposal decided
before, was \`ProposalStore.memory\`: \`list\` by run, \`beginDelivery\`'s check that no other proposal holds its key,
and \`expire\` (each \`Runs.resume\` calls it, through \`Proposal.recover\`) each read every proposal the store had
ever held. In a run of this bench before the change (load 4.9), with 2,000 cards pending the card took 1.56 ms
against 0.51 ms on an empty store (3.09 ×) and the resume 1.70 against 0.30 ms (5.68 ×); with 10,000 pending (a script
doing the same), 9 to 12 ms and 11 to 14 ms. The store now keeps indexes (each run's proposals in the order added, the holders of each
delivery key, the deadlines of leases and expiries: see below), and answers every call as it did (a property test drives it
side by side with the scanning store through random sequences of calls); they add a few tens of bytes to a
pending card's 3,927 (that run, memory sink). What remains, at steady state, is spread over the Effect interpreter (fiber
steps, \`FiberRef\` reads, generators) and young-generation collections (about 12 % of the CPU), with no function
of graded's own above 1.5 % of the profile. The inspector's sampling heap profiler counts about 280 kB allocated by a
write call to its card and 170 kB by a resume, two thirds of it in the Effect interpreter's own frames (exits,
continuations, generator steps, \`FiberRef\` updates); with the stores and the memory sink keeping every card, each
young-generation collection copies what survived, and its pause (several ms) lands on the run it interrupts. A structured clone of a stored run and its proposal takes 3.1 kB of heap:
the store keeps the data, and the data is the size it is (the conversation holds the read's result as the model saw
it, and the call record holds it again, encoded with the tool's schema: see below).

### In memory: the proposal store's indexes, before and after

Two memory stores side by side, each with the same ${pendingCards.toLocaleString("en")} cards pending (${
  timedPending.toLocaleString("en")
} with an expiry: runs started with \`decisionTimeout: "1 day"\`, so each proposal is a
deadline \`expire\` may have to look at): \`ProposalStore.memory\` of this commit ("now"), and the store as it was
before these indexes ("before": bench/runsBefore.ts, a copy kept for this comparison, run from the same process).
50 warm-up runs on each, then ${indexTurns} runs on each, a run's life as above, the two stores alternating run by run
(which goes first alternating too); every fifth turn, batches of calls on each, one after another: 50 of
\`Proposal.recover\` and of the empty list, 5 of the long one, 20 proposes. Medians, least and greatest in brackets;
each ratio is taken pair by pair. Load average (1, 5, 15 min) ${indexLoadBefore} before these runs, ${indexLoadAfter} after; by the end each store
held ${heldAtEnd.all.length.toLocaleString("en")} proposals, ${
  heldAtEnd.pending.length.toLocaleString("en")
} of them pending (each propose adds one).

| ${pendingCards.toLocaleString("en")} cards pending with an expiry | before | now | now / before |
|---|---|---|---|
${indexTable}

- **\`expire\`** (each \`Runs.resume\` calls it, through \`Proposal.recover\`) read, before, every pending proposal
  with an expiry and every lease, on every call. The store now keeps the deadlines in two binary heaps, earliest
  first (leases, which lapse once passed, and pending proposals' expiries, which lapse when reached), and takes from
  the top only what has lapsed: a call costs what lapsed, and the stale entries it drops on the way (a deadline whose
  proposal was decided or renewed stays until it reaches the top, or until more than half of its heap is stale and
  the heap is rebuilt from the current entries). It answers as before: the proposals it moved, in the order they
  were added, each moved at most once a call, from the state it was in when the call began.
- **\`list({ status })\` without a run** read every proposal; the store now keeps the proposals of each status, in
  the order they were added (sorted again, at the next list, after a proposal comes back to a status behind a later
  one: an approval handed back to \`pending\`), so a list costs what it returns.
- **\`Tool.proposal\`'s \`maxPendingPerTrace\`** listed every pending proposal of every run to count its own trace's.
  It now asks for \`list({ status: "pending", traceId })\`, a filter new in \`ProposalStore.Filter\` that the memory
  store answers from its index of each trace's proposals and the SQL stores with \`trace_id = ?\` (on their index of
  \`(trace_id, status)\`). It still checks each proposal's trace, so a store of one's own that ignores the filter
  counts right, as slowly as before.
- **What they keep**: each proposal has an entry in the index of its status and, with a trace, in its trace's; each
  deadline an entry in its heap (and at most as many stale ones). Against the figures this section showed before
  this commit (another run: 3,954 bytes a pending card with the memory sink, 3,180 with \`Audit.ring(0)\`), the
  bytes table above (what a pending card keeps) counts ${bytes(memoryRow.withAudit - 3954)} and ${
  bytes(memoryRow.storesOnly - 3180)
} bytes more a card in this run (115 to 170 in the four runs before this one), still under twice its JSON.

The property test (packages/core/test/ProposalStore.memory.property.test.ts) drives the store side by side with
one that scans every proposal, through random sequences of calls (\`expire\` at random times, \`list\` by every
combination of status, run and trace, long sequences that rebuild the heap), and the heap alone against a map of
current deadlines; forgetting to drop a proposal from its old status, to refresh one that changed within its status
(a renewed lease), to sort a status again, to drop an expiry when a proposal is claimed, to replace a renewed lease,
to check that a popped entry is current, or to apply the trace filter with a run's, or losing an entry when the heap
is rebuilt, each fails it. The write call to the card does not move: \`Runs.start\` calls neither \`expire\` nor a
list by status alone.

A stored run keeps a read's result twice, and both stay: the tool message's \`content\`, the text the model was
given (the \`{ ok, data }\` envelope, cut to the tool's limits), which every later turn sends to the model again, and
the call record's \`output\`, encoded with the tool's schema, which \`Runs\` hands back decoded in \`result.calls\`.
Neither follows from the other: a trimmed content has lost part of the output, and a content rebuilt from the output
when the run resumes would follow the toolkit given to the resume (its limits, its trimming), not what the model saw;
and either way the state \`RunStore\` returns and the SQL stores keep would change shape, which rows already
written, and the code that reads them, do not expect.

### Resume time against the number of past steps

On the SQLite file, runs whose model made ${deepSteps - 1} reads (one a round) and then the write, against runs with
one read and the write; after the approval, \`Runs.resume\` is timed as above. ${deepRepetitions} of each, interleaved.

| past steps | stored state (bytes) | Runs.resume (ms) | of which this process's CPU (ms) | the run from its start to the card (ms) |
|---|---|---|---|---|
| 2 | ${stateBytes.shallow.toLocaleString("en")} | ${ms(deepRow.shallow)} | ${ms(deepRow.shallowCpu)} | ${
  ms(deepRow.shallowCard)
} |
| ${deepSteps} | ${stateBytes.deep.toLocaleString("en")} | ${ms(deepRow.deep)} (p90 ${ms(deepRow.deepP90)}) | ${
  ms(deepRow.deepCpu)
} | ${ms(deepRow.deepCard)} |

One synced commit (a one-row INSERT with \`synchronous = FULL\`, on a \`node:sqlite\` connection of the bench's own)
on this file system took ${
  ms(commit)
} ms in the same run (median of 20). A resume commits twice (the claim, then the final save
with the step's audit entries, which wait for it), besides its read of lapsed proposals: with
\`synchronous: "full"\` each of them waits for that sync;
\`Sql.sqlite\`'s default, \`"normal"\`, syncs a delivery's record and what came before it, not the other commits
(docs/durability.md).

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

What changed to get here (on effect 3.22, before #37, with SQLite through libsql; profiled by hand with the
inspector, 20 resumes of 200-step runs on a SQLite file, on the same busy machine): a resume decoded the run's whole state three times (the read, the claim's \`RETURNING *\`, and
the save's \`RETURNING *\` of the state it had just written) and read its decided proposals twice. \`SqlRunStore\` now
remembers the decoding of the last state text it read for each run (a claim that returns the text a read just
decoded reuses it; any other text is decoded afresh), and a save returns the run from the state it was given, as
\`RunStore.memory\` does, reading back only the other columns; \`Runs.resume\` hands the proposals it found decided
to the resumed turn instead of reading them again. This process's CPU per resume went from 22.0 ms to 14.7 ms, wall
time from 119 ms to 78 ms; the rest is the commits above.

Then (#18's fourth round), two things that grew with the steps. The state's text went through Effect's codec whole
on every read and save; a one-pass check beside the codec saved about 0.3 ms each way on a 200-step state (72 kB,
measured by hand), and was removed again in #34: the state has one codec, Effect's, decoded once per text read.
And every save encoded every past call's input and output through its tool's schemas
again, so a run's saves cost the square of its steps: each call is now encoded once (a call read back keeps the
stored form it came from; packages/core/test/Runs.test.ts counts the encodings). Measured side by side against the
commit before (scratch runs alternating the two builds, 30 of each at load 1.4 to 1.7): the ${deepSteps}-step resume
8.0–8.5 → 6.2–7.4 ms, the 2-step one unchanged (3.6–4.8 ms), the ${deepSteps}-step run from its start to the card
430–466 → 323–447 ms.
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
