// McpServe.http keeps its client sessions bounded: at most `maxSessions` at
// once, and a session idle for `idleTimeout` is closed; one with a request in
// flight is never idle. Real SDK clients over real loopback HTTP.
import { describe, expect, it } from "@effect/vitest"
import { ProposalStore, Registry, Tool, Toolkit } from "@graded/core"
import { McpServe } from "@graded/mcp"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { ElicitRequestSchema, type ElicitResult } from "@modelcontextprotocol/sdk/types.js"
import { Duration, Effect, Schema } from "effect"
import { makeDesk } from "./fixtures/desk.js"
import { initialize, listTools, post } from "./fixtures/rawHttp.js"

// The SDK's fetch, except that the client never holds the optional GET
// stream open (answered 405 here, as a server without one would): such a
// client has nothing in flight between its requests, as the spec allows.
const withoutStream = (input: string | URL, init?: RequestInit): Promise<Response> =>
  init?.method === "GET" ? Promise.resolve(new Response(null, { status: 405 })) : fetch(input, init)

interface Connected {
  readonly client: Client
  readonly transport: StreamableHTTPClientTransport
}

// A connected SDK client, closed with the scope.
const connectClient = (
  url: string,
  options: { readonly stream?: boolean; readonly answer?: () => Promise<ElicitResult> } = {}
) =>
  Effect.acquireRelease(
    Effect.promise(async (): Promise<Connected> => {
      const client = new Client(
        { name: "sessions-test", version: "1.0.0" },
        { capabilities: options.answer === undefined ? {} : { elicitation: { form: {} } } }
      )
      if (options.answer !== undefined) client.setRequestHandler(ElicitRequestSchema, options.answer)
      const transport = new StreamableHTTPClientTransport(
        new URL(url),
        options.stream === false ? { fetch: withoutStream } : {}
      )
      await client.connect(transport)
      return { client, transport }
    }),
    ({ client }) => Effect.promise(() => client.close())
  )

// What a rejected promise was rejected with (undefined when it resolved).
const rejection = (promise: () => Promise<unknown>) =>
  Effect.promise(() => promise().then(() => undefined, (error: unknown) => error))

// Real time: the server's idle sweep runs on a real timer. Timeouts of a
// second leave room for a busy machine between a client's own requests.
const sleep = (millis: number) => Effect.promise(() => new Promise((resolve) => setTimeout(resolve, millis)))

describe("McpServe.http: maxSessions", () => {
  it.live("at the limit a new session is refused with 503 naming it; a session ended frees its place", () => {
    const desk = makeDesk()
    return Effect.gen(function*() {
      const { url } = yield* McpServe.http(desk.registry, { maxSessions: 2 })
      const first = yield* connectClient(url)
      const second = yield* connectClient(url)
      for (const { client } of [first, second]) {
        const { tools } = yield* Effect.promise(() => client.listTools())
        expect(tools.map((tool) => tool.name)).toContain("kb__search")
      }

      // A third client cannot connect.
      const third = new Client({ name: "third", version: "1.0.0" })
      const refused = yield* rejection(() => third.connect(new StreamableHTTPClientTransport(new URL(url))))
      expect(refused).toBeInstanceOf(Error)
      // What it was answered: 503, a JSON-RPC error naming the limit, and when to try again.
      const answer = yield* Effect.promise(() => post(url, initialize))
      expect(answer.status).toBe(503)
      expect(Number(answer.headers.get("retry-after"))).toBeGreaterThan(0)
      const body = (yield* Effect.promise(() => answer.json())) as { error: { code: number; message: string } }
      expect(body.error.code).toBe(-32000)
      expect(body.error.message).toContain("session limit")
      expect(body.error.message).toContain("2")

      // The open sessions go on.
      const read = yield* Effect.promise(() =>
        second.client.callTool({ name: "kb__search", arguments: { query: "vat" } })
      )
      expect(read.structuredContent).toEqual({ hits: ["How to fix: vat"] })

      // The first client ends its session (DELETE): a new client takes its place, and only one.
      yield* Effect.promise(() => first.transport.terminateSession())
      const replacement = yield* connectClient(url)
      expect((yield* Effect.promise(() => replacement.client.listTools())).tools.length).toBeGreaterThan(0)
      const fourth = yield* Effect.promise(() => post(url, initialize))
      expect(fourth.status).toBe(503)
      yield* Effect.promise(() => fourth.body?.cancel() ?? Promise.resolve())
    }).pipe(Effect.provide(ProposalStore.memory))
  }, 30_000)
})

describe("McpServe.http: idleTimeout", () => {
  it.live(
    "a session idle past the timeout is closed (404, and the client's call fails); a busy one stays",
    () => {
      const desk = makeDesk()
      return Effect.gen(function*() {
        const { url } = yield* McpServe.http(desk.registry, { idleTimeout: Duration.millis(500), maxSessions: 2 })
        const idle = yield* connectClient(url, { stream: false })
        const busy = yield* connectClient(url, { stream: false })
        yield* Effect.promise(() => idle.client.listTools())
        const session = idle.transport.sessionId!
        expect(session).toBeDefined()
        // For four timeouts, the busy client calls every 50 ms; the idle one says nothing.
        for (let i = 0; i < 40; i++) {
          const read = yield* Effect.promise(() =>
            busy.client.callTool({ name: "kb__search", arguments: { query: "x" } })
          )
          expect(read.isError).toBeFalsy()
          yield* sleep(50)
        }
        const gone = yield* Effect.promise(() => post(url, listTools, session))
        expect(gone.status).toBe(404)
        expect(((yield* Effect.promise(() => gone.json())) as { error: { message: string } }).error.message).toBe(
          "Session not found"
        )
        expect(yield* rejection(() => idle.client.listTools())).toBeInstanceOf(Error)
        // The busy one is still connected.
        const still = yield* Effect.promise(() => busy.client.listTools())
        expect(still.tools.length).toBeGreaterThan(0)
        // The closed session's place is free again (the cap is 2).
        const next = yield* connectClient(url)
        expect((yield* Effect.promise(() => next.client.listTools())).tools.length).toBeGreaterThan(0)
      }).pipe(Effect.provide(ProposalStore.memory))
    },
    30_000
  )

  it.live("a client that leaves without ending its session: closed once idle", () => {
    const desk = makeDesk()
    return Effect.gen(function*() {
      const { url } = yield* McpServe.http(desk.registry, { idleTimeout: Duration.seconds(1) })
      const client = new Client({ name: "leaver", version: "1.0.0" })
      const transport = new StreamableHTTPClientTransport(new URL(url))
      yield* Effect.promise(() => client.connect(transport))
      yield* Effect.promise(() => client.listTools())
      const session = transport.sessionId!
      // Closing the client drops its connections (its GET stream) without a DELETE.
      yield* Effect.promise(() => client.close())
      yield* sleep(3_000)
      expect((yield* Effect.promise(() => post(url, listTools, session))).status).toBe(404)
    }).pipe(Effect.provide(ProposalStore.memory))
  }, 30_000)

  it.live("a session whose call runs longer than the timeout is not closed mid-call: the call completes", () => {
    let release: () => void = () => undefined
    const released = new Promise<void>((resolve) => (release = resolve))
    const Slow = Tool.read("slow.report", {
      title: "Slow report",
      description: "Takes as long as the test says.",
      input: Schema.Struct({}),
      output: Schema.Struct({ done: Schema.Boolean }),
      run: () => Effect.as(Effect.promise(() => released), { done: true })
    })
    return Effect.gen(function*() {
      const { url } = yield* McpServe.http(Registry.make(Toolkit.make(Slow)), { idleTimeout: Duration.seconds(1) })
      const { client, transport } = yield* connectClient(url, { stream: false })
      const call = client.callTool({ name: "slow__report", arguments: {} }, undefined, { timeout: 20_000 })
      // Three timeouts with the call in flight and nothing else from the client.
      yield* sleep(3_000)
      release()
      const result = yield* Effect.promise(() => call)
      expect(result.structuredContent).toEqual({ done: true })
      // The session is still there.
      const listed = yield* Effect.promise(() => post(url, listTools, transport.sessionId))
      expect(listed.status).toBe(200)
      yield* Effect.promise(() => listed.body?.cancel() ?? Promise.resolve())
    })
  }, 30_000)

  it.live("a write waiting on the human's late answer in the form is not closed: the answer decides it", () => {
    const desk = makeDesk()
    return Effect.gen(function*() {
      const { url } = yield* McpServe.http(desk.registry, { idleTimeout: Duration.seconds(1) })
      // Its GET stream open: the form travels there (and so do the server's other requests).
      const { client } = yield* connectClient(url, {
        // The human takes three timeouts to approve.
        answer: () =>
          new Promise((resolve) =>
            setTimeout(() => resolve({ action: "accept", content: { [McpServe.decisionField]: "approve" } }), 3_000)
          )
      })
      const approved = yield* Effect.promise(() =>
        client.callTool({ name: "ticket__submit", arguments: { subject: "late" } }, undefined, { timeout: 20_000 })
      )
      expect(approved.isError).toBeFalsy()
      expect(desk.calls.submit).toBe(1)
    }).pipe(Effect.provide(ProposalStore.memory))
  }, 30_000)
})

describe("McpServe.http: invalid session options", () => {
  it.effect("a cap that is not a positive integer, or a timeout that is not positive, is a ListenError naming it", () =>
    Effect.gen(function*() {
      const registry = makeDesk().registry
      for (const maxSessions of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) {
        const error = yield* Effect.flip(McpServe.http(registry, { maxSessions }))
        expect(error).toBeInstanceOf(McpServe.ListenError)
        expect(error.reason).toContain("maxSessions")
        expect(error.reason).toContain(String(maxSessions))
      }
      const timeouts: ReadonlyArray<Duration.Input> = [0, -5, "0 millis", Duration.zero, "soon" as never]
      for (const idleTimeout of timeouts) {
        const error = yield* Effect.flip(McpServe.http(registry, { idleTimeout }))
        expect(error).toBeInstanceOf(McpServe.ListenError)
        expect(error._tag).toBe("@graded/mcp/McpServe/ListenError")
        expect(error.reason).toContain("idleTimeout")
        expect(error.message).toContain("idleTimeout")
      }
      // Valid ones listen.
      const address = yield* McpServe.http(registry, { maxSessions: 1, idleTimeout: Duration.infinity })
      expect(address.port).toBeGreaterThan(0)
    }).pipe(Effect.provide(ProposalStore.memory)))
})
