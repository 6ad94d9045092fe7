// pnpm --dir bench bench:mcp: one MCP round trip of a read tool, graded's
// server (`McpServe`) against a bare SDK server (`McpServer.registerTool`)
// with the same tool (bench/mcpServer.ts), side by side in one run, and
// writes its section of docs/PERFORMANCE.md (the rest of the page is left as
// it is).
//
// An SDK `Client` calls the tool, one call at a time, over:
// - stdio: each server a child process (`node --import tsx mcpServer.ts`, the
//   same flags for both), spoken to over its stdin and stdout;
// - Streamable HTTP on 127.0.0.1: each server a child process likewise, a
//   session per client as an app keeps one;
// - in memory: the SDK's `InMemoryTransport` pair in this process, so what
//   is left of the difference is the servers' own work.
// All six clients take turns, batch by batch, so a noisy stretch falls on all
// of them. Then, in this process, the pieces of a graded call are timed on
// their own, and both stdio servers are profiled (the inspector's sampling
// profiler in the child, started after a warm-up) under the same calls: the
// server's CPU per call, by where it went (where graded's added time goes).
// `BENCH_MCP_KEEP_PROFILES=1` keeps the .cpuprofile files.
// BENCH_MCP_BATCHES (30) and BENCH_MCP_SCALE (1: the calls a batch, the
// warm-up and the profiled phases) change the sizes.
//
// graded runs from its compiled build (packages/core/dist and
// packages/mcp/dist, which `node gradedBuild.mjs` makes before this script
// starts), as a user installing the packages runs it: this process and both
// server children load it through gradedBuild.mjs's module hook. The
// benchmark's own scripts (this one, mcpServer.ts) run through tsx. The
// profiled servers' phase adds a third server, graded from its TypeScript
// sources through tsx, to show what that costs.
import { McpServe } from "@graded/mcp"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js"
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js"
import { Invocation } from "@graded/core"
import type { Server } from "@modelcontextprotocol/sdk/server/index.js"
import { Effect, Exit, Queue, Schema, Scope } from "effect"
import { type ChildProcess, execFileSync, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { bareServer, gradedOptions, ids, registry, toolName, wireName } from "./mcpServer.js"

const here = path.dirname(fileURLToPath(import.meta.url))
const serverScript = path.join(here, "mcpServer.ts")
// The same flags for both servers: tsx for the script, graded's build for its packages.
const nodeFlags = ["--import", "tsx", "--import", "./gradedBuild.mjs"]
// graded from its TypeScript sources (through tsx), for the profiled phase only.
const sourcesFlags = ["--import", "tsx"]
// 120 batches, not 30: at 30 the stdio verdict flipped from run to run.
const batches = Number(process.env.BENCH_MCP_BATCHES ?? 120)
// Calls a batch, by transport: an HTTP round trip takes ten times a stdio one
// (30 calls, not 10: batches of 10 swung by a quarter from run to run).
const scale = Number(process.env.BENCH_MCP_SCALE ?? 1)
const callsPerBatch = (transport: TransportName) =>
  Math.max(1, Math.round(scale * (transport === "stdio" ? 50 : transport === "in memory" ? 100 : 30)))
// A server answers many calls: the warm-up brings both servers to where they
// run most of their life. After 200 calls over stdio (this bench's warm-up
// before) graded's server, with more code for the JIT to compile (Effect's
// runtime), still ran 10-20% slower than after 2,000, and the bare one less so.
const warmupCalls = Math.round(scale * 2000)
const profileCalls = Math.round(scale * 1000)
// Phases a server: the even ones measure CPU alone, the odd ones take a profile.
const profilePhases = 9
const keepProfiles = process.env.BENCH_MCP_KEEP_PROFILES

const median = (values: ReadonlyArray<number>) => [...values].sort((x, y) => x - y)[Math.floor(values.length / 2)]!
const load = () => os.loadavg().map((x) => x.toFixed(1)).join(", ")

type Side = "bare" | "graded"
type TransportName = "stdio" | "Streamable HTTP (127.0.0.1)" | "in memory"
const sides: ReadonlyArray<Side> = ["bare", "graded"]
const transports: ReadonlyArray<TransportName> = ["stdio", "Streamable HTTP (127.0.0.1)", "in memory"]

interface Session {
  readonly transport: TransportName
  readonly side: Side
  readonly client: Client
  readonly transportOf: Transport
  readonly close: () => Promise<void>
  /** Per-call microseconds, one figure a batch. */
  readonly samples: Array<number>
  /** Per-call microseconds of this process's CPU time, one figure a batch. */
  readonly cpu: Array<number>
}

// A server child process over HTTP: its first stdout line is the URL.
const spawnHttp = (side: Side) =>
  new Promise<{ child: ChildProcess; url: string }>((resolve, reject) => {
    const child = spawn(process.execPath, [...nodeFlags, serverScript, side, "http"], {
      cwd: here,
      stdio: ["pipe", "pipe", "inherit"]
    })
    let out = ""
    child.stdout!.setEncoding("utf8")
    child.stdout!.on("data", (chunk: string) => {
      out += chunk
      const end = out.indexOf("\n")
      if (end !== -1) resolve({ child, url: out.slice(0, end) })
    })
    child.once("exit", (code) => reject(new Error(`the ${side} HTTP server exited (${code}) before listening`)))
  })

const stop = (child: ChildProcess) =>
  new Promise<void>((resolve) => {
    if (child.exitCode !== null) return resolve()
    child.once("exit", () => resolve())
    child.stdin!.end()
  })

const open = async (
  transport: TransportName,
  side: Side,
  serverArgs: ReadonlyArray<string> = [],
  flags: ReadonlyArray<string> = nodeFlags
): Promise<Session> => {
  const client = new Client({ name: "bench", version: "0.1.0" })
  let clientTransport: Transport
  let close = async () => {}
  if (transport === "stdio") {
    clientTransport = new StdioClientTransport({
      command: process.execPath,
      args: [...flags, serverScript, side, "stdio", ...serverArgs],
      cwd: here,
      stderr: "inherit"
    })
  } else if (transport === "in memory") {
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair()
    clientTransport = clientSide
    if (side === "bare") {
      const server = bareServer()
      await server.connect(serverSide)
      close = () => server.close()
    } else {
      const scope = Effect.runSync(Scope.make())
      await Effect.runPromise(Scope.provide(scope)(McpServe.connect(registry, serverSide, gradedOptions)))
      close = () => Effect.runPromise(Scope.close(scope, Exit.void))
    }
  } else {
    const { child, url } = await spawnHttp(side)
    clientTransport = new StreamableHTTPClientTransport(new URL(url))
    close = () => stop(child)
  }
  await client.connect(clientTransport)
  // Listed once, as a client does: the SDK client then checks structured
  // content against the listed output schema on every call, for both.
  const { tools } = await client.listTools()
  if (tools.length !== 1 || tools[0]!.name !== wireName || tools[0]!.outputSchema === undefined) {
    throw new Error(`${side} over ${transport} lists ${JSON.stringify(tools.map((t) => t.name))}`)
  }
  return {
    transport,
    side,
    client,
    transportOf: clientTransport,
    samples: [],
    cpu: [],
    close: async () => {
      await client.close()
      await close()
    }
  }
}

let turn = 0
// `n` calls one after another; every answer must be the record asked for.
const callMany = async (session: Session, n: number) => {
  for (let i = 0; i < n; i++) {
    const id = ids[turn++ % ids.length]!
    const result = await session.client.callTool({ name: wireName, arguments: { id } })
    const structured = result.structuredContent as { id?: unknown } | undefined
    if (result.isError === true || structured?.id !== id) {
      throw new Error(`${session.side} over ${session.transport}: ${JSON.stringify(result)}`)
    }
  }
}

const µs = (x: number) => x.toFixed(Math.abs(x) < 10 ? 1 : 0)
const spread = (samples: ReadonlyArray<number>) =>
  `${µs(median(samples))} (${µs(Math.min(...samples))}–${µs(Math.max(...samples))})`

const startedAt = Date.now()
const loadBefore = load()
console.log(
  `MCP round trips, ${batches} batches per server and transport, after ${warmupCalls} warm-up calls each:`
)
const sessions: Array<Session> = []
for (const transport of transports) for (const side of sides) sessions.push(await open(transport, side))
for (const session of sessions) await callMany(session, warmupCalls)
for (let b = 0; b < batches; b++) {
  // Every session once a batch; which side goes first alternates.
  for (const transport of transports) {
    const pair = sessions.filter((s) => s.transport === transport)
    for (const session of b % 2 === 0 ? pair : [...pair].reverse()) {
      const cpu = process.cpuUsage()
      const start = performance.now()
      await callMany(session, callsPerBatch(transport))
      session.samples.push(((performance.now() - start) * 1000) / callsPerBatch(transport))
      const { system, user } = process.cpuUsage(cpu)
      session.cpu.push((user + system) / callsPerBatch(transport))
    }
  }
}
for (const session of sessions) await session.close()

const rows = transports.map((transport) => {
  const of = (side: Side) => sessions.find((s) => s.transport === transport && s.side === side)!
  const bare = of("bare").samples
  const graded = of("graded").samples
  const paired = bare.map((b, i) => graded[i]! / b)
  const row = {
    transport,
    bare,
    graded,
    added: median(graded) - median(bare),
    ratio: median(graded) / median(bare),
    bareCpu: median(of("bare").cpu),
    gradedCpu: median(of("graded").cpu),
    paired
  }
  console.log(
    `  ${transport}: bare ${spread(bare)} µs, graded ${spread(graded)} µs; graded/bare ${
      row.ratio.toFixed(2)
    } (per batch ${median(paired).toFixed(2)}, ${Math.min(...paired).toFixed(2)}–${
      Math.max(...paired).toFixed(2)
    }); CPU in this process ${µs(row.bareCpu)} / ${µs(row.gradedCpu)} µs`
  )
  return row
})
const measuredSeconds = Math.round((Date.now() - startedAt) / 1000)
const loadAfter = load()

// Where graded's time goes, in this process without a transport: each
// server's \`tools/call\` handler called directly (as the SDK's protocol layer
// calls it), and a ladder of what a graded call does, one piece added a row.
// serve.ts's call is written out again here (as of this commit: the
// registry's invoke in a child fiber of the session's runner loop, a fiber
// marked as the model's once when the session starts, then the answer; see
// packages/mcp/src/internal/runner.ts) so that each piece can be left out.
const pieceRounds = 7
const pieceCalls = Math.round(scale * 1000)
interface Piece {
  readonly what: string
  readonly run: (i: number) => unknown
}
// The session context McpServe gives every call (its own trace, the app's actor, autonomous).
const context = { traceId: "mcp-bench", actor: "mcp:bench", autonomous: true }
const Lookup = registry.toolkit.get(toolName)!
const sampleResult = Effect.runSync(registry.invoke(toolName, { id: "c1" }, context))
type Handler = (request: unknown, extra: unknown) => Promise<unknown>
// The SDK keeps a server's handlers in a private map; a benchmark may reach in.
const handlerOf = (server: Server): Handler =>
  (server as unknown as { _requestHandlers: Map<string, Handler> })._requestHandlers.get("tools/call")!
const bareHandler = handlerOf(bareServer().server)
const gradedHandler = handlerOf(await Effect.runPromise(McpServe.make(registry, gradedOptions)))
const extra = {
  signal: new AbortController().signal,
  requestId: 0,
  sendNotification: async () => {},
  sendRequest: async () => ({})
}
const request = (i: number) => ({
  jsonrpc: "2.0",
  id: i,
  method: "tools/call",
  params: { name: wireName, arguments: { id: ids[i % ids.length]! } }
})
// The session's runner as McpServe makes it (runner.ts, written out: it is
// internal): a loop forked in a fiber marked as the model's once, with the
// session's context, which forks each call as its child (started at once), so
// that the call is born with the context and the mark; a call's exit resolves
// its promise.
const jobs = Effect.runSync(Queue.unbounded<Effect.Effect<void, never, never>>())
Effect.runFork(
  Invocation.within(context)(
    Effect.forkDetach(
      Effect.forever(Effect.flatMap(Queue.take(jobs), Effect.forkChild({ startImmediately: true })))
    )
  )
)
const runInSession = <A, E>(effect: Effect.Effect<A, E>) =>
  new Promise<Exit.Exit<A, E>>((resolve) => {
    Queue.offerUnsafe(
      jobs,
      Effect.asVoid(Effect.exit(Effect.onExit(effect, (exit) => Effect.sync(() => resolve(exit)))))
    )
  })
// The answer from a call's exit, as serve.ts makes it.
const answerOf = (exit: Exit.Exit<{ readonly ok: boolean; readonly data?: unknown }>) => {
  if (exit._tag === "Failure") return { isError: true, content: [] }
  const result = exit.value
  return {
    content: [{ type: "text", text: JSON.stringify(result) }],
    ...(result.ok ? { structuredContent: result.data } : {})
  }
}
const serveLike = (i: number) => runInSession(registry.invoke(toolName, { id: ids[i % ids.length]! })).then(answerOf)
const pieces: ReadonlyArray<Piece> = [
  { what: "bare: `McpServer`'s `tools/call` handler", run: (i) => bareHandler(request(i), extra) },
  { what: "graded: `McpServe`'s `tools/call` handler", run: (i) => gradedHandler(request(i), extra) },
  {
    what: "`registry.invoke(name, input)` under `Effect.runPromise`, no context",
    run: (i) => Effect.runPromise(registry.invoke(toolName, { id: ids[i % ids.length]! }))
  },
  {
    what: "the same with the session's context (`{ traceId, actor, autonomous: true }`)",
    run: (i) => Effect.runPromise(registry.invoke(toolName, { id: ids[i % ids.length]! }, context))
  },
  {
    what: "`Invocation.within(context)(Effect.void)` under `Effect.runPromise`: the context alone",
    run: () => Effect.runPromise(Invocation.within(context)(Effect.void))
  },
  {
    what: "the same, `{ traceId, actor }` only: the merge into the fiber's context",
    run: () => Effect.runPromise(Invocation.within({ traceId: "mcp-bench", actor: "mcp:bench" })(Effect.void))
  },
  {
    what: "the same, `{ autonomous: true }` only: marking the fiber autonomous",
    run: () => Effect.runPromise(Invocation.within({ autonomous: true })(Effect.void))
  },
  { what: "`Effect.runPromise(Effect.void)`: a fiber and a promise", run: () => Effect.runPromise(Effect.void) },
  {
    what:
      "serve.ts's call written out: `registry.invoke(name, input)` in a child fiber of the session's runner loop, marked once when the session starts, and the answer",
    run: (i) => serveLike(i)
  },
  {
    what: "`Schema.toJsonSchemaDocument(tool.output)` alone (serve.ts makes it once per tool)",
    run: () => Schema.toJsonSchemaDocument(Lookup.output)
  },
  { what: "`JSON.stringify` of the result (the text content)", run: () => JSON.stringify(sampleResult) }
]
const pieceSamples = pieces.map(() => [] as Array<number>)
for (const piece of pieces) for (let i = 0; i < pieceCalls; i++) await piece.run(i)
for (let r = 0; r < pieceRounds; r++) {
  for (const [p, piece] of pieces.entries()) {
    const start = performance.now()
    for (let i = 0; i < pieceCalls; i++) await piece.run(i)
    pieceSamples[p]!.push(((performance.now() - start) * 1000) / pieceCalls)
  }
}
const pieceRows = pieces.map((piece, p) => ({
  what: piece.what,
  micros: median(pieceSamples[p]!),
  least: Math.min(...pieceSamples[p]!)
}))
for (const row of pieceRows) console.log(`  ${row.what}: ${row.micros.toFixed(1)} µs (least ${row.least.toFixed(1)})`)

// Both stdio servers profiled under the same load, one after the other:
// after a warm-up, SIGUSR2 starts the child's profiler and another stops it.
// The server's CPU per call, by where it went, graded against bare.
interface Profile {
  readonly nodes: ReadonlyArray<{
    readonly id: number
    readonly callFrame: { readonly functionName: string; readonly url: string }
    readonly children?: ReadonlyArray<number>
  }>
  readonly samples: ReadonlyArray<number>
}
// Where a frame's code lives: a file of graded's, a module of a package, or the engine.
const placeOf = (url: string, name: string): string => {
  if (url === "") return name.startsWith("(") ? name : "native code"
  if (url.startsWith("node:")) return "Node internals"
  const graded = /\/packages\/(\w+)\/(?:src|dist)\/(.*)$/.exec(url)
  // The same row for a module from the build (.js) or the sources (.ts).
  if (graded !== null) return `graded ${graded[1]}: ${graded[2]!.replace(/\.(js|ts)$/, "")}`
  const module = /node_modules\/\.pnpm\/[^/]+\/node_modules\/((?:@[^/]+\/)?[^/]+)\/(.*)$/.exec(url)
  if (module === null) return url.replace(/^file:\/\/.*\/bench\//, "bench/").replace(/^file:\/\//, "")
  const [, pkg, file] = module
  return pkg === "effect" ? `effect: ${file!.split("/").pop()}` : pkg!
}
// The profiles' samples only share out the server's CPU time per call, which
// `process.cpuUsage` measures in phases without the profiler (it costs CPU of
// its own).
interface CpuPerCall {
  /** Microseconds of CPU per call (`process.cpuUsage` in the server, median of the unprofiled phases). */
  readonly total: number
  /** Its share by where the sampled frame's code lives (self time). */
  readonly self: Map<string, number>
  /** Its share with a frame of this kind anywhere on the stack. */
  readonly within: Map<string, number>
}
const markers: ReadonlyArray<[string, (url: string) => boolean]> = [
  ["graded core (`registry.invoke` and what it calls)", (url) => /\/packages\/core\/(src|dist)\//.test(url)],
  [
    "Effect's JSON Schema (`Schema.toJsonSchemaDocument`, made once per tool by serve.ts)",
    (url) => /\/effect\/dist\/(internal\/schema\/toJsonSchemaDocument|SchemaRepresentation|JsonSchema)\.js$/.test(url)
  ],
  [
    "Effect's fiber runtime (the fibers and their interpreter, internal/effect.js)",
    (url) => url.includes("/effect/dist/internal/effect.js")
  ],
  [
    "zod (the SDK's request and result schemas, the bare tool's schemas)",
    (url) => /node_modules\/\.pnpm\/zod@/.test(url)
  ]
]
const cpuPerCall = (sampled: ReadonlyArray<Profile>, micros: number): CpuPerCall => {
  const self = new Map<string, number>()
  const within = new Map<string, number>()
  let total = 0
  for (const profile of sampled) {
    const byId = new Map(profile.nodes.map((n) => [n.id, n]))
    const parent = new Map<number, number>()
    for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id)
    for (const id of profile.samples) {
      // Each sample counts once: on a busy machine the time since the last
      // sample can be time the process was not running.
      const node = byId.get(id)!
      if (node.callFrame.functionName === "(idle)") continue
      total += 1
      const place = placeOf(node.callFrame.url, node.callFrame.functionName)
      self.set(place, (self.get(place) ?? 0) + 1)
      const urls = new Set<string>()
      for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) urls.add(byId.get(at)!.callFrame.url)
      for (const [what, test] of markers) {
        if ([...urls].some(test)) within.set(what, (within.get(what) ?? 0) + 1)
      }
    }
  }
  const share = (map: Map<string, number>) => new Map([...map].map(([k, v]) => [k, (v / total) * micros]))
  return { total: micros, self: share(self), within: share(within) }
}

const profileDir = fs.mkdtempSync(path.join(os.tmpdir(), "graded-bench-mcp-"))
// The servers profiled: both as above, and graded again from its TypeScript
// sources through tsx (what running the sources costs, beside the build).
type Profiled = Side | "sources"
const profiled: ReadonlyArray<
  { readonly label: Profiled; readonly side: Side; readonly flags: ReadonlyArray<string> }
> = [
  { label: "bare", side: "bare", flags: nodeFlags },
  { label: "graded", side: "graded", flags: nodeFlags },
  { label: "sources", side: "graded", flags: sourcesFlags }
]
const profiles: Partial<Record<Profiled, CpuPerCall>> = {}
// One phase of `profileCalls` calls between two signals; what the server wrote.
const phase = async (session: Session, prefix: string, n: number) => {
  const pid = (session.transportOf as StdioClientTransport).pid!
  const file = `${prefix}.${n}.json`
  process.kill(pid, "SIGUSR2")
  await new Promise((resolve) => setTimeout(resolve, 100))
  await callMany(session, profileCalls)
  process.kill(pid, "SIGUSR2")
  for (let i = 0; i < 100 && !fs.existsSync(file); i++) await new Promise((resolve) => setTimeout(resolve, 50))
  return JSON.parse(fs.readFileSync(file, "utf8")) as { readonly cpuMicros: number; readonly profile?: Profile }
}
// All at once, taking turns phase by phase (the order turning round each
// phase): CPU alone in the even phases, profiled in the odd ones (the server
// decides by the phase's number).
const sessionsMeasured = await Promise.all(profiled.map(async ({ flags, label, side }) => {
  const prefix = path.join(profileDir, label)
  return { label, prefix, session: await open("stdio", side, [prefix], flags) }
}))
for (const { session } of sessionsMeasured) await callMany(session, warmupCalls)
const cpuOnly: Record<Profiled, Array<number>> = { bare: [], graded: [], sources: [] }
const sampled: Record<Profiled, Array<Profile>> = { bare: [], graded: [], sources: [] }
for (let n = 0; n < profilePhases; n++) {
  for (const { label, prefix, session } of n % 2 === 0 ? sessionsMeasured : [...sessionsMeasured].reverse()) {
    const written = await phase(session, prefix, n)
    if (written.profile === undefined) cpuOnly[label].push(written.cpuMicros / profileCalls)
    else sampled[label].push(written.profile)
  }
}
for (const { session } of sessionsMeasured) await session.close()
for (const { label } of profiled) profiles[label] = cpuPerCall(sampled[label], median(cpuOnly[label]))
// The least phase too: on a busy machine the load only adds.
const leastCpu = (label: Profiled) => Math.min(...cpuOnly[label])
if (keepProfiles === undefined || keepProfiles === "") fs.rmSync(profileDir, { recursive: true, force: true })
else console.log(`  profiles kept in ${profileDir}`)
const bareCpu = profiles.bare!
const gradedCpu = profiles.graded!
const sourcesCpu = profiles.sources!
const places = [...new Set([...bareCpu.self.keys(), ...gradedCpu.self.keys(), ...sourcesCpu.self.keys()])]
  .map((place) => ({
    place,
    bare: bareCpu.self.get(place) ?? 0,
    graded: gradedCpu.self.get(place) ?? 0,
    sources: sourcesCpu.self.get(place) ?? 0
  }))
  .sort((a, b) => (b.graded - b.bare) - (a.graded - a.bare))
const groups = [
  ["graded's own code (`graded core: …`, `graded mcp: …`)", (place: string) => place.startsWith("graded ")],
  [
    "Effect (`effect: …`): graded's calls run as Effects; the bare server runs none",
    (place: string) => place.startsWith("effect: ")
  ]
] as const
const sum = (self: Map<string, number>, test: (place: string) => boolean) =>
  [...self].filter(([place]) => test(place)).reduce((total, [, x]) => total + x, 0)
const groupRows = groups.map(([what, test]) => ({
  what,
  bare: sum(bareCpu.self, test),
  graded: sum(gradedCpu.self, test),
  sources: sum(sourcesCpu.self, test)
}))
const placeRows = places.filter((p) =>
  Math.abs(p.graded - p.bare) >= 1 || p.graded >= 5 || Math.abs(p.sources - p.graded) >= 1
)
console.log(
  `  server CPU per call (profiled, ${profileCalls} calls): bare ${µs(bareCpu.total)} µs, graded ${
    µs(gradedCpu.total)
  } µs, graded from its sources ${µs(sourcesCpu.total)} µs`
)
for (const p of placeRows) {
  console.log(`    ${p.place}: bare ${µs(p.bare)}, graded ${µs(p.graded)}, from its sources ${µs(p.sources)}`)
}
for (const [what] of markers) {
  console.log(
    `    on the stack: ${what}: bare ${µs(bareCpu.within.get(what) ?? 0)}, graded ${
      µs(gradedCpu.within.get(what) ?? 0)
    }`
  )
}

// The round trip in memory again, this process's CPU per call (client and
// server together), call by call: with the caches warm (one call after
// another, as in the rows above) and with them cleared before each call (not
// timed), as they are for a server process that sleeps between requests
// while others run on its core: 8 MB of data written and 3,000 small
// functions of their own called. The sessions take turns, round by round.
const evictData = new Float64Array(8 * 131_072)
const evictCode = Array.from(
  { length: 3000 },
  (_, i) =>
    new Function("a", `let s = ${i}; for (let j = 0; j < 3; j++) s = (s * 31 + a + j) | 0; return s`) as (
      a: number
    ) => number
)
let evicted = 0
const evict = () => {
  for (let i = 0; i < evictData.length; i += 8) evictData[i] = evictData[i]! + 1
  for (const f of evictCode) evicted = f(evicted)
}
type Caches = "warm" | "cleared"
const cacheCalls = Math.round(scale * 300)
const cacheRounds = 15
const cacheSessions = await Promise.all(sides.map((side) => open("in memory", side)))
for (const session of cacheSessions) await callMany(session, warmupCalls)
const cacheCpu: Record<Caches, Record<Side, Array<number>>> = {
  warm: { bare: [], graded: [] },
  cleared: { bare: [], graded: [] }
}
for (let r = 0; r < cacheRounds; r++) {
  for (const caches of ["warm", "cleared"] as const) {
    for (const session of r % 2 === 0 ? cacheSessions : [...cacheSessions].reverse()) {
      let micros = 0
      for (let i = 0; i < cacheCalls; i++) {
        if (caches === "cleared") evict()
        const cpu = process.cpuUsage()
        await callMany(session, 1)
        const { system, user } = process.cpuUsage(cpu)
        micros += user + system
      }
      cacheCpu[caches][session.side].push(micros / cacheCalls)
    }
  }
}
for (const session of cacheSessions) await session.close()
const cacheRows = (["warm", "cleared"] as const).map((caches) => ({
  caches,
  bare: median(cacheCpu[caches].bare),
  graded: median(cacheCpu[caches].graded),
  bareLeast: Math.min(...cacheCpu[caches].bare),
  gradedLeast: Math.min(...cacheCpu[caches].graded)
}))
for (const row of cacheRows) {
  console.log(`  in memory, caches ${row.caches}: CPU per call bare ${µs(row.bare)} µs, graded ${µs(row.graded)} µs`)
}

// The ladder read as differences, on the least samples (rows in the order of `pieces`).
function ladder(): string {
  const [bare, graded, invoke, withContext, context, merge, autonomous, fiber, written] = pieceRows.map((
    row
  ) => row.least) as [number, number, number, number, number, number, number, number, number]
  const parts = [
    ["`registry.invoke` itself, no context", invoke],
    ["its child fiber of the session's runner loop (marked once), and the answer", written - invoke],
    ["(the session's context given on each call instead would add", withContext - invoke]
  ] as const
  return `Read on the least samples: graded's handler takes ${
    µs(graded - bare)
  } µs more than the bare one (which does its
own zod checks and the tool in ${µs(bare)} µs, the SDK's request check included). serve.ts's call, written out, takes ${
    µs(written)
  } µs: ${parts.map(([what, x]) => `${what} ${µs(x)} µs`).join("; ")}). The context alone, without the call, takes ${
    µs(context - fiber)
  } µs over a bare fiber: ${µs(merge - fiber)} µs to merge who is calling into the fiber's context, ${
    µs(autonomous - fiber)
  } µs to mark the fiber autonomous.`
}

const verdict = (met: boolean) => (met ? "met" : "**missed**")
const section = `## MCP

Written by \`pnpm --dir bench bench:mcp\` (bench/mcp.ts), which rewrites only this section; all figures from one run
of ${measuredSeconds} s. One \`tools/call\` round trip of a read tool (look a customer up by id in an in-memory map of
100, return the record) from the SDK's \`Client\`, against two servers with the same tool (bench/mcpServer.ts): the
SDK's own \`McpServer\` (\`registerTool\` with zod input and output schemas, which it checks on every call) and graded's
\`McpServe\` over a registry of the same tool as a \`Tool.read\`. Both list an output schema and answer with JSON text
and structured content, which the client checks against the listed schema. Each figure is the time per call of a
batch of calls one after another (${callsPerBatch("stdio")} over stdio, ${
  callsPerBatch("Streamable HTTP (127.0.0.1)")
} over HTTP, ${callsPerBatch("in memory")} in memory); ${batches} batches per server and transport after ${warmupCalls}
warm-up calls each, the six clients taking turns batch by batch (which side goes first alternates); medians in µs,
least and greatest batch in brackets.

- machine: ${os.cpus()[0]?.model ?? "unknown"}, ${os.cpus().length} cores, Node ${process.version}; load average (1, 5,
  15 min) ${loadBefore} before the run, ${loadAfter} after${
  Number(loadBefore.split(",")[0]) > os.cpus().length ? " (shared, busy: other work ran meanwhile)" : ""
}
- graded: this commit ${execFileSync("git", ["rev-parse", "--short", "HEAD"], { cwd: here, encoding: "utf8" }).trim()},
  from its compiled build (packages/core/dist and packages/mcp/dist, which \`node gradedBuild.mjs\` builds before
  the run) as a user installing the packages runs it, in this process and in the servers;
  @modelcontextprotocol/sdk 1.32.2, zod 4.6.7
- stdio and HTTP: each server its own child process, \`node --import tsx --import ./gradedBuild.mjs mcpServer.ts
  <side> <transport>\` (the same flags for both: tsx for the benchmark's script, gradedBuild.mjs's module hook for
  graded's build); HTTP on 127.0.0.1, one session per client as \`McpServe.http\` keeps them (the bare server
  keeps its sessions the same way). In memory: the SDK's \`InMemoryTransport\` pair, client and server in this
  process, so the difference there is the servers' own work.

| transport | bare SDK server (µs per call) | graded (µs per call) | graded adds (µs) | graded / bare | per batch | this process's CPU per call, bare / graded (µs) |
|---|---|---|---|---|---|---|
${
  rows.map((r) =>
    `| ${r.transport} | ${spread(r.bare)} | ${spread(r.graded)} | ${µs(r.added)} | ${r.ratio.toFixed(2)} | ${
      median(r.paired).toFixed(2)
    } (${Math.min(...r.paired).toFixed(2)}–${Math.max(...r.paired).toFixed(2)}) | ${µs(r.bareCpu)} / ${
      µs(r.gradedCpu)
    } |`
  ).join("\n")
}

"Per batch": graded's batch over the bare batch run next to it, median and range. The last column is this process's
CPU time (\`process.cpuUsage\`) per call, median over batches: the client's alone over stdio and HTTP (the same work
for both sides; the servers' CPU is measured below), client and server together in memory, where it is the steadier
figure on a busy machine (waiting for the CPU inflates the wall-clock columns, not this one).

| target | measured | verdict |
|---|---|---|
${
  rows.filter((r) => r.transport !== "in memory").map((r) =>
    `| graded adds under 10% to the bare server's latency, ${r.transport} | ${((r.ratio - 1) * 100).toFixed(0)}% (${
      µs(r.added)
    } µs) | ${verdict(r.ratio < 1.1)} |`
  ).join("\n")
}

Where graded's time goes, in this process without a transport: each server's \`tools/call\` handler called directly (as
the SDK's protocol layer calls it: the request's schema check, then the server's own work), and a ladder of what a
graded call does, one piece added a row (serve.ts's call written out again in bench/mcp.ts so that a piece can be left
out). ${pieceCalls} calls a sample, ${pieceRounds} samples a row, the rows taking turns; the median sample, and the
least, which on a busy machine is the better estimate of the work itself (the load only adds).

| piece | µs per call | least sample |
|---|---|---|
${pieceRows.map((r) => `| ${r.what} | ${r.micros.toFixed(1)} | ${r.least.toFixed(1)} |`).join("\n")}

${ladder()}

Measured this way the handler runs hot in a tight loop; inside a round trip, between the client's and the
transport's code, the same work costs more. On Effect 4 serve.ts hands each call to a runner loop forked once per
session in a fiber marked as the model's (packages/mcp/src/internal/runner.ts: the SDK calls its handlers outside any
fiber, and graded's mark is given to a fiber by the fiber that makes it), which forks the call as its child: the
"written out" row above is that path.

The server's own CPU per call over stdio: both stdio servers again (fresh processes, ${warmupCalls} warm-up calls),
and a third, graded's server from its TypeScript sources through tsx (\`node --import tsx mcpServer.ts\`, as this
page measured before), each process's CPU time (\`process.cpuUsage\`) over ${profileCalls} calls, median of ${
  Math.ceil(profilePhases / 2)
} phases,
the three taking turns;
then ${
  Math.floor(profilePhases / 2)
} phases more each under the inspector's sampling profiler (every 100 µs), whose samples share that CPU time out
by where the sampled code lives (self time; rows where the two differ by 1 µs or more, or that take 5 µs or more)
and by what is on the stack. Effect's interpreter runs the effects graded's functions return after those functions
have returned, so most of a graded call's time is sampled in Effect's modules (\`internal/effect.js\` and the like)
with no graded frame on the stack: the Effect rows are graded's work, and "graded core on the stack" counts only its
plain functions (gates, decoding, the context merge).

| server CPU per call (µs) | bare | graded | graded − bare | graded from its sources (tsx) |
|---|---|---|---|---|
| total (\`process.cpuUsage\`) | ${µs(bareCpu.total)} | ${µs(gradedCpu.total)} | ${
  µs(gradedCpu.total - bareCpu.total)
} | ${µs(sourcesCpu.total)} |
| total, the least phase | ${µs(leastCpu("bare"))} | ${µs(leastCpu("graded"))} | ${
  µs(leastCpu("graded") - leastCpu("bare"))
} | ${µs(leastCpu("sources"))} |
${
  groupRows.map(({ bare, graded, sources, what }) =>
    `| all of ${what}, self | ${µs(bare)} | ${µs(graded)} | ${µs(graded - bare)} | ${µs(sources)} |`
  )
    .join("\n")
}
${
  placeRows.map((p) => `| ${p.place} | ${µs(p.bare)} | ${µs(p.graded)} | ${µs(p.graded - p.bare)} | ${µs(p.sources)} |`)
    .join("\n")
}
${
  markers.map(([what]) => {
    const bare = bareCpu.within.get(what) ?? 0
    const graded = gradedCpu.within.get(what) ?? 0
    return `| on the stack: ${what} | ${µs(bare)} | ${µs(graded)} | ${µs(graded - bare)} | ${
      µs(sourcesCpu.within.get(what) ?? 0)
    } |`
  }).join("\n")
}

The same round trip in memory once more (client and server in this process), this process's CPU per call, call by
call: with the caches warm (one call after another, as in the first table) and with them cleared before each call
(not timed), as they are for a server that sleeps between requests while the client, the kernel and other processes
run on its core: 8 MB of data written and 3,000 small functions of its own called. ${cacheCalls} calls a sample,
${cacheRounds} samples each, the sessions taking turns; the median sample and the least.

| in memory, CPU per round trip (µs) | bare | graded | graded − bare | least sample: bare, graded, graded − bare |
|---|---|---|---|---|
${
  cacheRows.map((r) =>
    `| caches ${r.caches === "warm" ? "warm" : "cleared before each call"} | ${µs(r.bare)} | ${µs(r.graded)} | ${
      µs(r.graded - r.bare)
    } | ${µs(r.bareLeast)}, ${µs(r.gradedLeast)}, ${µs(r.gradedLeast - r.bareLeast)} |`
  ).join("\n")
}

What graded's stdio server's extra ${
  µs(gradedCpu.total - bareCpu.total)
} µs of CPU per call is (issue #18 asked; the scratch runs, \`strace\`
counts and profiles quoted below were made on effect 3.22 and Node 20, before #37, the figures computed from this
run are this run's):

- Not tsx. Until this run, both servers ran graded from its TypeScript sources through tsx (esbuild's output, with
  \`__name\` wrappers for kept function names). From its build, as a user runs it, graded's server spends ${
  µs(gradedCpu.total)
} µs per
  call, from its sources ${
  µs(sourcesCpu.total)
} µs (the last column): no steady difference. Three scratch runs of four stdio servers taking turns
  phase by phase (load 2.7 to 3.5; bare, graded's build, graded's sources, and graded's sources with serve.ts as it
  was before this section's commit) read 66, 74, 90, 104 µs; 108, 132, 135, 132; and 76, 123, 119, 114: graded's
  extra over the bare server ranged from 8 to 47 µs from run to run, and neither the build against the sources nor
  serve.ts's change (0.5 µs in the handler, above) moved it steadily. Nor source maps: tsx turns Node's source-map support on (in both servers), which costs only when
  a stack is formatted, and a call formats none (counted with an \`Error.prepareStackTrace\` hook around 1,000 calls
  of each server: 0).
- Not more work in the transport. Over 2,000 calls (\`strace -c\` on each server) both make the same system calls per
  call: one \`read\`, one \`write\`, about one \`epoll_pwait\`, no timers; both send one message per call, 257
  bytes against 234 (graded's text content is the registry's whole result, \`{ ok, data }\`). Most of the "native
  code" row, in both servers, is \`writeUtf8String\`, the write to the pipe, and it is not CPU spent writing: the
  write wakes the client, which on two busy cores often takes the server's core, and the profiler's samples that come
  while the server waits to run again are charged to the write (the servers' system time, from /proc, is 10 to 14 µs
  per call for both). That row, and with it the total, moves with the machine's load from run to run.
- What the evidence points to is the cost of a call that starts cold. A stdio server sleeps between requests while
  the client, the kernel and other processes run; each call fetches its code and data into the caches again, and
  graded's call runs much more code than the bare handler (the registry's gates, decode, encode and audit, and
  Effect's fiber runtime). In one process, without a transport, the table above shows it: graded adds ${
  µs(cacheRows[0]!.graded - cacheRows[0]!.bare)
} µs (least samples ${µs(cacheRows[0]!.gradedLeast - cacheRows[0]!.bareLeast)}) to a round trip with the caches warm, ${
  µs(cacheRows[1]!.graded - cacheRows[1]!.bare)
} µs (${
  µs(cacheRows[1]!.gradedLeast - cacheRows[1]!.bareLeast)
}) with them cleared before each call. The same measurement in the trial runs before this one (load 2 to 5, with a third of the samples)
  read warm +2, +15, +18 µs and cleared +63, +46, +23, and a first scratch version +10 and +60: cleared, graded's
  extra is larger every time, by how much moves with the load. A scratch run of both stdio servers (load 5 to 6)
  agrees: called 20 at a time, so that they seldom sleep, they spent 46 and 59 µs per call (graded +12), against 68
  and 106 (+38) one call at a time. With no counters of cache misses on this machine (a VM: \`perf\` has none), this
  is the explanation the measurements support, not one they prove.

So the gap is graded's, but not a step that could be dropped: it is the footprint of what a call does (every gate,
the audit and the Effect runtime that runs them), which weighs most when each call starts cold. Closing it means
running less code per call, not skipping any of it.

### Before Effect 4

On effect 3.22 and Node 20, before #37; kept for the record, not comparable with the figures above.

Inside a round trip, between the client's and the transport's code, the handler's work cost about twice as much as
in the tight loop. Before #18, serve.ts also gave each call the session's context (\`Invocation.within\`, whose \`autonomous: true\` marked each call's fiber), made the output
schema's JSON Schema on every call and wrapped the call in three more Effect steps: its handler then took 39 µs (least
sample) against the bare 4.5, and a profiled round trip put 95 µs under the handler. Then the session's runtime was
marked once when the session started and the schemas made once per tool, so what graded added over the bare
server was, nearly all of it, \`registry.invoke\` itself: the strict decode, the gates, the audit, the encode and
the Effect interpreter running them. Issue #18 then made that path cheaper (the synchronous fast path, plain inputs
and outputs checked in one pass, no fiber-local anchor for a synchronous hold): the handler's least sample went from
8.5 to about 7.5 µs, and the warm-up went from 200 calls to 2,000 (after 200 graded's server still ran 10-20% slower
than after 2,000; a server answers many calls). serve.ts then answered a call whose fiber ends as it starts (a read on
the registry's synchronous path) without a promise in between (\`Runtime.runFork\` and the fiber's exit where it
took \`Runtime.runPromiseExit\`): the handler's least sample went from 7.2 to 6.7 µs (the old and the new serve.ts
taking turns in one process). Runs of this page's method on a quiet machine (load 1.2 to 1.9) read stdio +7%, +6%,
+10% and Streamable HTTP +26%, +12%, -5%: on one run of this size the latency verdict is as noisy as the target is
small. At this section's commits, on the machine shared with other work (load 2 to 4), the four runs before this one
read stdio +10%, +21%, +96%, -20% and Streamable HTTP +23%, +22%, -1%, 0%: at that load the latency columns say
nothing either way. With the synchronous hold kept off the \`WeakMap\`, two runs one after the other
on a quiet machine (load 0.4 to 1.3) read stdio +4% and +18%, Streamable HTTP +35% and +4%: the verdicts flip from
one run to the next. So a run takes 120 batches, not 30 (about a minute): four such runs in a row (load 0.8 to
1.7, this one the last) read stdio +11%, +10%, +12%, +14%, steadily just over the target, and Streamable HTTP +10%
in the first and +5% in the last (the two between were read for stdio only). An in-memory A/B of the build at 7546bc1 against this one, three alternating processes each (200
calls a batch, 30 batches, this process's CPU): graded 44, 48, 44 µs a round trip before, 28, 37, 33 after, bare
24 to 31 in both. The steadier figure was the server's own CPU.
`

console.log(section)
const page = path.join(here, "../docs/PERFORMANCE.md")
const current = fs.readFileSync(page, "utf8")
const heading = "## MCP\n"
const at = current.indexOf(heading)
const next = at === -1 ? -1 : current.indexOf("\n## ", at + heading.length)
const updated = at === -1
  ? `${current.trimEnd()}\n\n${section}`
  : `${current.slice(0, at)}${section}${next === -1 ? "" : current.slice(next)}`
fs.writeFileSync(page, updated)
console.log("wrote its section of docs/PERFORMANCE.md")
