import {
  HumanConfirm,
  Invocation,
  Proposal,
  ProposalStore,
  type Registry,
  type Tool,
  Toolkit,
  Wire
} from "@graded/core"
import { Grade, Registry as Registries } from "@graded/core"
import { Server } from "@modelcontextprotocol/sdk/server/index.js"
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js"
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js"
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js"
import {
  CallToolRequestSchema,
  type CallToolResult,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
  type Tool as McpTool
} from "@modelcontextprotocol/sdk/types.js"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { Cause, Duration, Effect, Exit, Option, Schema } from "effect"
import type { Address, HttpOptions, Options } from "../McpServe.js"
import * as elicit from "./elicit.js"
import * as Runner from "./runner.js"

/** The `_meta` key that carries a tool's grade. */
export const gradeKey = "graded/grade" as const

/** The `_meta` key on a call's result that names the proposal it recorded. */
export const proposalKey = "graded/proposal" as const

type AnyRegistry = Registry.Registry<ReadonlyArray<Tool.Any>>

const annotationsOf = (tool: Tool.Any): NonNullable<McpTool["annotations"]> => {
  switch (tool.grade) {
    case "read":
      return { title: tool.title, readOnlyHint: true, openWorldHint: tool.openWorld === true }
    case "write":
      // Destructive unless the tool says it only adds: the safe reading.
      return {
        title: tool.title,
        readOnlyHint: false,
        destructiveHint: tool.destructive !== false,
        openWorldHint: false
      }
    default:
      return {
        title: tool.title,
        readOnlyHint: false,
        destructiveHint: tool.destructive !== false,
        openWorldHint: true
      }
  }
}

// The JSON Schema of what a read tool returns, when MCP can carry it: an
// object at the root. A write or send never returns its output to the
// client (a call records a proposal), so it declares none.
const outputSchemaOf = (tool: Tool.Any): McpTool["outputSchema"] | undefined => {
  if (Grade.isConfirmable(tool.grade)) return undefined
  try {
    const { definitions, schema } = Schema.toJsonSchemaDocument(tool.output)
    if (schema.type !== "object") return undefined
    // Named schemas are referred to as `#/$defs/<name>`: they go along.
    const defs = Object.keys(definitions).length > 0 ? { $defs: definitions } : {}
    return { ...schema, ...defs } as McpTool["outputSchema"]
  } catch {
    // A schema JSON Schema cannot express (a declared type): none is listed.
    return undefined
  }
}

const defect: unique symbol = Symbol("defect")

// An exit as a promise's outcome: the value, or what it failed with, thrown.
const valueOf = <A, E>(exit: Exit.Exit<A, E>): A => {
  if (Exit.isSuccess(exit)) return exit.value
  throw Cause.squash(exit.cause)
}

const text = (value: unknown): CallToolResult["content"] => [{ type: "text", text: JSON.stringify(value) }]

const unexpected = (wire: string): CallToolResult => ({
  isError: true,
  content: text({ ok: false, code: "failed", error: `${wire} failed unexpectedly.` })
})

/**
 * Builds the low-level SDK server for one session over a registry. Every
 * call is a model's choice (autonomous); a write or send records a proposal
 * and runs nothing.
 */
export const make = (
  registry: AnyRegistry,
  options: Options = {}
): Effect.Effect<Server, never, any> =>
  Effect.gen(function*() {
    // The SDK calls the handlers outside any fiber: their work runs in
    // fibers born of this one (runner.ts), each loop as long as the server.
    const plain = yield* Runner.make((loop) => Effect.forkDetach(loop))
    const tools = registry.toolkit.tools
    // One trace per session, unless the app names one: the proposal tools'
    // cap on waiting proposals then holds per client session.
    const context: Partial<Invocation.Context> = {
      traceId: `mcp-${crypto.randomUUID()}`,
      ...options.context,
      autonomous: true
    }
    // Every tool's definition, whatever the gates say now: the listing picks.
    const allFeatures = [...new Set(tools.flatMap((tool) => tool.features ?? []))]
    const definitions = new Map(
      registry.functionSchemas({ features: allFeatures, autonomous: false }).map((schema) => [schema.name, schema])
    )
    const confirmable = tools.filter((tool) => Grade.isConfirmable(tool.grade))
    // Made once: JSON Schema generation is not cheap, and a call needs to know.
    const outputSchemas = new Map(tools.map((tool) => [tool, outputSchemaOf(tool)]))
    // The proposal tools of the writes and sends. Their gates ran already on
    // the tool itself (features, page, policy) before one is called: no
    // feature or page blocks them here; a guard in force (a policy) still
    // screens the `<tool>.propose` call.
    const proposals = confirmable.length === 0 ? undefined : Registries.make(
      (Toolkit.make as (...tools: ReadonlyArray<Tool.Any>) => Toolkit.Any)(
        ...confirmable.map((tool) =>
          (Proposal.tool as (tool: Tool.Any, o?: Proposal.ToolOptions) => Tool.Any)(
            tool,
            options.proposals
          )
        )
      ),
      { features: allFeatures, pages: [] }
    )
    const { features: _features, page: _page, ...proposalContext } = context

    const listing = Effect.gen(function*() {
      // A read is listed where a model may call it; a write or send where a
      // human in this session could be offered it (it will be proposed).
      const asModel = yield* registry.candidates(context)
      const asHuman = confirmable.length === 0 ? asModel : yield* registry.candidates({ ...context, autonomous: false })
      const listed: Array<McpTool> = []
      tools.forEach((tool, index) => {
        const entry = Grade.isConfirmable(tool.grade) ? asHuman[index] : asModel[index]
        const definition = definitions.get(Wire.toWire(tool.name))
        if (entry === undefined || !entry.offered || definition === undefined) return
        const outputSchema = outputSchemas.get(tool)
        listed.push({
          name: entry.wire,
          title: tool.title,
          description: definition.description,
          inputSchema: definition.parameters as McpTool["inputSchema"],
          ...(outputSchema !== undefined ? { outputSchema } : {}),
          annotations: annotationsOf(tool),
          _meta: { [gradeKey]: tool.grade }
        })
      })
      return { tools: listed }
    })

    // With a client that shows forms, a write or send asks the human there:
    // the call runs as theirs (not autonomous), under a HumanConfirm whose UI
    // is the form, so every gate, guard and the audit see a human decide.
    const asking = options.elicitation !== false
    const timeout = (options.elicitation !== false ? options.elicitation?.timeout : undefined) ?? elicit.defaultTimeout
    const { autonomous: _autonomous, ...humanContext } = context
    // The session's calls start in fibers born with its context: marked as
    // the model's once here, not on every call (marking is not free). Made
    // in a fiber that is already a model's or a tool's, they inherit that.
    const asModel = yield* Invocation.within(context)(Runner.make((loop) => Effect.forkDetach(loop)))
    const asHuman = yield* Invocation.within({ ...humanContext, autonomous: false })(
      Runner.make((loop) => Effect.forkDetach(loop))
    )

    // What the registry answered, as MCP says it.
    const answer = (
      wire: string,
      tool: Tool.Any | undefined,
      result: Registry.ToolResult
    ): CallToolResult | McpError => {
      if (result.code === "unknown-tool") return new McpError(ErrorCode.InvalidParams, `Unknown tool: ${wire}`)
      if (result.code === "invalid-input") {
        return new McpError(ErrorCode.InvalidParams, result.error ?? `Invalid arguments`)
      }
      if (!result.ok) return { isError: true, content: text(result) }
      // A write's or send's output goes as text: no output schema is listed
      // for them (without a form, their answer is a proposal).
      const structured =
        tool !== undefined && outputSchemas.get(tool) !== undefined && typeof result.data === "object" &&
          result.data !== null
          ? { structuredContent: result.data as Record<string, unknown> }
          : {}
      return { content: text(result), ...structured }
    }

    // A write or send the client asked for, without a form: nothing runs; it
    // is recorded for a human to decide.
    const propose = (tool: Tool.Any, args: unknown, refused: Registry.ToolResult) =>
      Effect.gen(function*() {
        // Without a store (its requirement cast away) nothing can be recorded:
        // the refusal stands as it is, and nothing runs.
        if (proposals === undefined || Option.isNone(yield* Effect.serviceOption(ProposalStore.ProposalStore))) {
          return { isError: true, content: text(refused) } satisfies CallToolResult
        }
        const proposed = yield* proposals.invoke(`${tool.name}.propose`, args, proposalContext)
        if (proposed.code === "invalid-input") {
          return new McpError(ErrorCode.InvalidParams, (proposed.error ?? "Invalid arguments").replace(".propose", ""))
        }
        if (!proposed.ok) return { isError: true, content: text(proposed) } satisfies CallToolResult
        const data = proposed.data as Proposal.Proposed
        const pending = {
          ok: false,
          code: "requires-confirm",
          requiresConfirm: true,
          proposal: data.proposal,
          status: data.status,
          note: data.note
        }
        return {
          content: text(pending),
          structuredContent: pending,
          _meta: { [proposalKey]: data.proposal }
        } satisfies CallToolResult
      })

    // Runs one step of a call with the runner it belongs to: its value, or `defect`.
    const settle = <A>(runner: Runner.Runner, effect: Effect.Effect<A, never, any>): Promise<A | typeof defect> =>
      runner.run(effect).then((exit) => Exit.isSuccess(exit) ? exit.value : defect)

    // A defect is the fixed message; a protocol error goes back as a
    // JSON-RPC error (thrown to the SDK, which answers with it).
    const respond = (said: CallToolResult | McpError | typeof defect, wire: string): CallToolResult => {
      if (said === defect) return unexpected(wire)
      if (said instanceof McpError) throw said
      return said
    }
    const answered = (
      wire: string,
      tool: Tool.Any | undefined,
      args: unknown,
      result: Registry.ToolResult | typeof defect
    ): CallToolResult | Promise<CallToolResult> => {
      if (result === defect) return unexpected(wire)
      if (result.code === "requires-confirm" && tool !== undefined) {
        return settle(plain, propose(tool, args, result)).then((said) => respond(said, wire))
      }
      return respond(answer(wire, tool, result), wire)
    }
    // The untrusted tools whose output this session's client has read. As in
    // a model's run, its open-world tools are refused from then on: what an
    // untrusted tool returned may be an instruction to send data out through one.
    let untrusted: ReadonlyArray<string> = []
    const read = (tool: Tool.Any | undefined, result: Registry.ToolResult | typeof defect) => {
      if (tool?.untrusted === true && result !== defect && result.ok && !untrusted.includes(tool.name)) {
        untrusted = [...untrusted, tool.name]
      }
      return result
    }
    const call = (server: Server, wire: string, args: unknown): Promise<CallToolResult> => {
      const name = Wire.fromWire(wire)
      const tool = registry.toolkit.get(name)
      const viaForm = tool !== undefined && Grade.isConfirmable(tool.grade) && asking && elicit.canAsk(server)
      const invoked = untrusted.length === 0 ? registry.invoke(name, args) : registry.invoke(name, args, { untrusted })
      const result = viaForm
        ? settle(asHuman, Effect.provide(invoked, HumanConfirm.layer(elicit.ui(server, timeout))))
        : settle(asModel, invoked)
      return result.then((result) => answered(wire, tool, args, read(tool, result)))
    }

    const server = new Server(
      { name: options.name ?? "graded", version: options.version ?? "0.1.0" },
      { capabilities: { tools: { listChanged: false } } }
    )
    // Closed, the session's loops end (`stdio` chains its own handler after this one).
    server.onclose = () => {
      for (const runner of [plain, asModel, asHuman]) runner.stop()
    }
    server.setRequestHandler(ListToolsRequestSchema, () => plain.run(listing).then(valueOf))
    server.setRequestHandler(
      CallToolRequestSchema,
      (request) => call(server, request.params.name, request.params.arguments ?? {})
    )
    return server
  })

/** Serves one session over a transport until the scope closes. */
export const connect = (
  registry: AnyRegistry,
  transport: Transport,
  options?: Options
): Effect.Effect<Server, never, any> =>
  Effect.acquireRelease(
    Effect.flatMap(make(registry, options), (server) =>
      Effect.as(Effect.promise(() => server.connect(transport)), server)),
    (server) =>
      Effect.promise(() => server.close().catch(() => undefined))
  )

/** Serves over this process's stdin and stdout until stdin ends or the client closes. */
export const stdio = (
  registry: AnyRegistry,
  options: Options & {
    readonly stdin?: NodeJS.ReadableStream | undefined
    readonly stdout?: NodeJS.WritableStream | undefined
  } = {}
): Effect.Effect<void, never, any> =>
  Effect.scoped(Effect.gen(function*() {
    const stdin = (options.stdin ?? process.stdin) as NodeJS.ReadStream
    const stdout = (options.stdout ?? process.stdout) as NodeJS.WriteStream
    const server = yield* connect(registry, new StdioServerTransport(stdin, stdout), options)
    yield* Effect.callback<void>((resume) => {
      const done = () => resume(Effect.void)
      stdin.once("end", done)
      stdin.once("close", done)
      const closed = server.onclose
      server.onclose = () => {
        closed?.()
        done()
      }
      return Effect.sync(() => {
        stdin.off("end", done)
        stdin.off("close", done)
      })
    })
  }))

/** Why the HTTP server could not listen. */
export class ListenError extends Schema.TaggedError<ListenError>()("@graded/mcp/McpServe/ListenError", {
  host: Schema.String,
  port: Schema.Number,
  reason: Schema.String
}) {
  override get message(): string {
    return `McpServe could not listen on ${this.host}:${this.port}: ${this.reason}`
  }
}

const loopback = new Set(["127.0.0.1", "localhost", "::1", "[::1]"])

const hostnameOf = (header: string | undefined): string => {
  if (header === undefined) return ""
  try {
    return new URL(`http://${header}`).hostname
  } catch {
    return ""
  }
}

const jsonRpcError = (
  res: ServerResponse,
  status: number,
  message: string,
  headers?: Readonly<Record<string, string>>
) => {
  if (res.headersSent) return void res.end()
  res.writeHead(status, { ...headers, "content-type": "application/json" })
  res.end(JSON.stringify({ jsonrpc: "2.0", error: { code: -32000, message }, id: null }))
}

/** The most client sessions `http` keeps open at once, unless told otherwise. */
export const defaultMaxSessions = 1_000

/** How long a session may go without a request before `http` closes it, unless told otherwise. */
export const defaultIdleTimeout: Duration.Duration = Duration.minutes(30)

const shownValue = (value: unknown): string => {
  if (Duration.isDuration(value)) return Duration.format(value)
  if (typeof value === "string") return JSON.stringify(value)
  try {
    return String(value)
  } catch {
    return typeof value
  }
}

// The session options, checked: a cap that is a positive integer, an idle
// timeout that is positive (infinite: never idle). The reason names the bad one.
const sessionLimits = (
  options: HttpOptions
): { readonly maxSessions: number; readonly idleMillis: number } | string => {
  const maxSessions = options.maxSessions ?? defaultMaxSessions
  if (!Number.isSafeInteger(maxSessions) || maxSessions < 1) {
    return `invalid option maxSessions: ${shownValue(maxSessions)} (it must be a positive integer)`
  }
  const timeout = options.idleTimeout === undefined
    ? Option.some(defaultIdleTimeout)
    : Duration.fromInput(options.idleTimeout)
  const idleMillis = Option.match(timeout, { onNone: () => Number.NaN, onSome: Duration.toMillis })
  if (!(idleMillis > 0)) {
    return `invalid option idleTimeout: ${shownValue(options.idleTimeout)} (it must be a positive duration)`
  }
  return { maxSessions, idleMillis }
}

// One client session: its server and transport, how many of its requests are
// being answered (a tool call waiting on a form, an open GET stream), and
// since when none has been (a monotonic clock, in milliseconds).
interface Session {
  readonly transport: StreamableHTTPServerTransport
  readonly server: Server
  inFlight: number
  idleSince: number
}

/**
 * Serves over Streamable HTTP until the scope closes: each client session
 * (an `initialize` without a session id) gets its own server and context.
 * At most `maxSessions` are open at once (a new one beyond is answered 503);
 * one with no request in flight for `idleTimeout` is closed (its id is then
 * unknown: 404).
 */
export const http = (
  registry: AnyRegistry,
  options: HttpOptions = {}
): Effect.Effect<Address, ListenError, any> =>
  Effect.gen(function*() {
    const host = options.host ?? "127.0.0.1"
    const path = options.path ?? "/mcp"
    const limits = sessionLimits(options)
    if (typeof limits === "string") {
      return yield* Effect.fail(new ListenError({ host, port: options.port ?? 0, reason: limits }))
    }
    const { idleMillis, maxSessions } = limits
    // Each session's server is made in a fiber born of this one (runner.ts), until the scope closes.
    const sessionMaker = yield* Runner.make((loop) => Effect.forkScoped(loop))
    // A client turned away may try again once an idle session could have been closed (at most in a minute).
    const retryAfter = String(Math.max(1, Math.min(60, Math.ceil(idleMillis / 1000))))
    const sessions = new Map<string, Session>()
    // Sessions being opened (their server made, their initialize not yet
    // answered) hold a place too: concurrent initializes cannot overshoot the cap.
    let opening = 0
    // A request of a session is in flight from its arrival until its response
    // is closed (ended, or its connection gone): a stream stays in flight.
    const track = (session: Session, res: ServerResponse) => {
      session.inFlight++
      res.once("close", () => {
        session.inFlight--
        if (session.inFlight === 0) session.idleSince = performance.now()
      })
    }
    const closeSession = (id: string, session: Session) => {
      if (sessions.get(id) === session) sessions.delete(id)
      return session.server.close().catch(() => undefined)
    }
    const open = async (req: IncomingMessage, res: ServerResponse) => {
      if (sessions.size + opening >= maxSessions) {
        return jsonRpcError(
          res,
          503,
          `Service unavailable: this server is at its session limit (${maxSessions} session${
            maxSessions === 1 ? "" : "s"
          }); try again later`,
          { "retry-after": retryAfter }
        )
      }
      // Its place is held until it is in `sessions` or given up, counted once.
      opening++
      let holding = true
      const letGo = () => {
        if (holding) opening--
        holding = false
      }
      try {
        const server = valueOf(await sessionMaker.run(make(registry, options)))
        const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => crypto.randomUUID(),
          onsessioninitialized: (id) => {
            sessions.set(id, session)
            letGo()
          }
        })
        const session: Session = { transport, server, inFlight: 0, idleSince: performance.now() }
        track(session, res)
        transport.onclose = () => {
          if (transport.sessionId !== undefined && sessions.get(transport.sessionId) === session) {
            sessions.delete(transport.sessionId)
          }
        }
        try {
          await server.connect(transport)
          await transport.handleRequest(req, res)
        } finally {
          // Not an initialize (the transport answered with an error), or it
          // failed: nothing to keep.
          if (transport.sessionId === undefined || !sessions.has(transport.sessionId)) {
            await server.close().catch(() => undefined)
          }
        }
      } finally {
        letGo()
      }
    }
    const handle = async (req: IncomingMessage, res: ServerResponse) => {
      const url = new URL(req.url ?? "/", "http://localhost")
      if (url.pathname !== path) return jsonRpcError(res, 404, `Not found: MCP is served at ${path}`)
      // A server on a loopback address answers only requests addressed to
      // one: a web page whose name was rebound to 127.0.0.1 is turned away.
      if (loopback.has(host) && !loopback.has(hostnameOf(req.headers.host))) {
        return jsonRpcError(res, 403, "Forbidden: this server answers only requests addressed to this machine")
      }
      const header = req.headers["mcp-session-id"]
      const id = Array.isArray(header) ? header[0] : header
      if (id === undefined) {
        if (req.method !== "POST") return jsonRpcError(res, 400, "Bad request: no session; initialize first")
        return open(req, res)
      }
      const session = sessions.get(id)
      if (session === undefined) return jsonRpcError(res, 404, "Session not found")
      track(session, res)
      await session.transport.handleRequest(req, res)
    }
    // Closes every session with nothing in flight since `idleMillis` ago.
    const sweep = () => {
      const now = performance.now()
      for (const [id, session] of sessions) {
        if (session.inFlight === 0 && now - session.idleSince >= idleMillis) void closeSession(id, session)
      }
    }
    const listener = createServer((req, res) => {
      handle(req, res).catch(() => jsonRpcError(res, 500, "Internal error"))
    })
    const port = yield* Effect.acquireRelease(
      Effect.callback<{ port: number; sweeping: ReturnType<typeof setInterval> | undefined }, ListenError>((resume) => {
        const failed = (error: Error) =>
          resume(Effect.fail(new ListenError({ host, port: options.port ?? 0, reason: error.message })))
        listener.once("error", failed)
        listener.listen(options.port ?? 0, host, () => {
          listener.off("error", failed)
          // One timer for every session, a quarter of the timeout apart (at
          // most a minute): a session is closed at most that late. It never
          // keeps the process alive, and nothing it does can throw out of it.
          const sweeping = Number.isFinite(idleMillis)
            ? setInterval(() => {
              try {
                sweep()
              } catch {
                // A session that could not be closed now is tried again on the next sweep.
              }
            }, Math.min(60_000, Math.max(10, idleMillis / 4))).unref()
            : undefined
          resume(Effect.succeed({ port: (listener.address() as AddressInfo).port, sweeping }))
        })
      }),
      ({ sweeping }) =>
        Effect.promise(async () => {
          clearInterval(sweeping)
          for (const { server } of sessions.values()) await server.close().catch(() => undefined)
          sessions.clear()
          listener.closeAllConnections()
          await new Promise<void>((resolve) => listener.close(() => resolve()))
        })
    ).pipe(Effect.map(({ port }) => port))
    const shown = host.includes(":") ? `[${host}]` : host
    return { host, port, url: `http://${shown}:${port}${path}` }
  })
