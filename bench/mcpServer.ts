// The two servers bench/mcp.ts measures, with the same read tool: look a
// customer up by id in an in-memory map of 100 and return the record.
//
// - bare: the SDK's own `McpServer`, `registerTool` with zod input and output
//   schemas (the SDK validates both on every call), the record as JSON text
//   and as structured content;
// - graded: `McpServe` over a registry of one `Tool.read` with Schema input
//   and output, as an app serves it.
//
// Run as a process (`node --import tsx [--import ./gradedBuild.mjs]
// mcpServer.ts <bare|graded> <stdio|http>`, the second import for graded's
// compiled build rather than its sources) it serves one of them: over stdio until stdin ends, or over Streamable HTTP
// on 127.0.0.1 (a free port, printed as the first line on stdout) until
// stdin ends. A third argument, a file prefix, makes it measure its CPU time
// (and, every second time, take a CPU profile) between SIGUSR2 signals.
import { Registry, Tool, Toolkit } from "@graded/core"
import { McpServe } from "@graded/mcp"
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js"
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js"
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js"
import { Effect, Schema } from "effect"
import * as fs from "node:fs"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import { Session } from "node:inspector/promises"
import type { AddressInfo } from "node:net"
import { z } from "zod"

/** The tool's name as graded defines it, and as both servers list it on the wire. */
export const toolName = "crm.lookup"
export const wireName = "crm__lookup"

interface Customer {
  readonly id: string
  readonly name: string
  readonly plan: string
  readonly openTickets: number
}

const customers = new Map<string, Customer>(
  Array.from({ length: 100 }, (_, i) => [
    `c${i}`,
    { id: `c${i}`, name: `Customer ${i}`, plan: i % 3 === 0 ? "pro" : "basic", openTickets: i % 7 }
  ])
)

/** The tool logic both servers run. */
export const lookup = (id: string): Customer =>
  customers.get(id) ?? { id, name: "unknown", plan: "none", openTickets: 0 }

/** The ids a client asks for, in turn. */
export const ids: ReadonlyArray<string> = [...customers.keys()]

const description = "Looks a customer up by id."

/** The bare SDK server: `McpServer.registerTool` with zod schemas. */
export const bareServer = (): McpServer => {
  const server = new McpServer({ name: "bare", version: "0.1.0" })
  server.registerTool(wireName, {
    title: "Look up a customer",
    description,
    inputSchema: { id: z.string() },
    outputSchema: { id: z.string(), name: z.string(), plan: z.string(), openTickets: z.number() },
    annotations: { readOnlyHint: true }
  }, ({ id }) => {
    const customer = lookup(id)
    return { content: [{ type: "text", text: JSON.stringify(customer) }], structuredContent: { ...customer } }
  })
  return server
}

const Lookup = Tool.read(toolName, {
  title: "Look up a customer",
  description,
  input: Schema.Struct({ id: Schema.String }),
  output: Schema.Struct({ id: Schema.String, name: Schema.String, plan: Schema.String, openTickets: Schema.Number }),
  run: ({ id }) => Effect.sync(() => lookup(id))
})

/** The graded registry of the same tool. */
export const registry = Registry.make(Toolkit.make(Lookup))

/** What `McpServe` is given by both transports. */
export const gradedOptions = { name: "graded-bench", context: { actor: "mcp:bench" } } as const

const untilStdinEnds = () =>
  new Promise<void>((resolve) => {
    process.stdin.once("end", resolve)
    process.stdin.once("close", resolve)
    process.stdin.resume()
  })

// The bare server over Streamable HTTP, stateful as McpServe.http is: a
// server and transport per session, found again by the session header.
const bareHttp = async () => {
  const sessions = new Map<string, StreamableHTTPServerTransport>()
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const header = req.headers["mcp-session-id"]
    const id = Array.isArray(header) ? header[0] : header
    const known = id === undefined ? undefined : sessions.get(id)
    if (known !== undefined) return known.handleRequest(req, res)
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => crypto.randomUUID(),
      onsessioninitialized: (session) => void sessions.set(session, transport)
    })
    await bareServer().connect(transport)
    await transport.handleRequest(req, res)
  }
  const listener = createServer((req, res) => {
    handle(req, res).catch(() => res.writeHead(500).end())
  })
  await new Promise<void>((resolve) => listener.listen(0, "127.0.0.1", resolve))
  process.stdout.write(`http://127.0.0.1:${(listener.address() as AddressInfo).port}/mcp\n`)
  await untilStdinEnds()
  listener.closeAllConnections()
  listener.close()
}

const gradedHttp = Effect.scoped(Effect.gen(function*() {
  const address = yield* McpServe.http(registry, gradedOptions)
  process.stdout.write(`${address.url}\n`)
  yield* Effect.promise(untilStdinEnds)
}))

// Measures this process between pairs of SIGUSR2 signals (start, stop): its
// CPU time, and in every second such phase a CPU profile too, sampled every
// 100 µs (the profiler costs CPU of its own, so the two are kept apart).
// Phase n is written to `<prefix>.<n>.json` when it stops.
const measureOnSignal = (prefix: string) => {
  const session = new Session()
  session.connect()
  let signals = 0
  let cpu = process.cpuUsage()
  process.on("SIGUSR2", () => {
    const phase = Math.floor(signals / 2)
    const profiled = phase % 2 === 1
    const starting = signals % 2 === 0
    signals++
    const started = () => void (cpu = process.cpuUsage())
    const stopped = (profile?: unknown) => {
      const { system, user } = process.cpuUsage(cpu)
      // Written whole, then renamed: the bench reads the file as soon as it exists.
      const file = `${prefix}.${phase}.json`
      fs.writeFileSync(`${file}.part`, JSON.stringify({ cpuMicros: user + system, profile }))
      fs.renameSync(`${file}.part`, file)
    }
    const step = starting
      ? profiled
        ? session.post("Profiler.enable")
          .then(() => session.post("Profiler.setSamplingInterval", { interval: 100 }))
          .then(() => session.post("Profiler.start"))
          .then(started)
        : Promise.resolve().then(started)
      : profiled
      ? session.post("Profiler.stop").then(({ profile }) => stopped(profile))
      : Promise.resolve().then(() => stopped())
    step.catch((error: unknown) => process.stderr.write(`mcpServer: measuring failed: ${String(error)}\n`))
  })
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [side, transport, prefix] = process.argv.slice(2)
  if (prefix !== undefined) measureOnSignal(prefix)
  const serve = side === "bare"
    ? transport === "http" ? bareHttp() : bareServer().connect(new StdioServerTransport()).then(untilStdinEnds)
    : Effect.runPromise(transport === "http" ? gradedHttp : McpServe.stdio(registry, gradedOptions))
  serve.then(() => process.exit(0), (error: unknown) => {
    process.stderr.write(`mcpServer ${side} ${transport}: ${String(error)}\n`)
    process.exit(1)
  })
}
