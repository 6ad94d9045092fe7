// McpImport's connections and live imports, with real parts: a foreign SDK
// server spawned as a child process over stdio, and one served by the SDK over
// Streamable HTTP on loopback. Each call the foreign server receives leaves a
// line in a log file as it arrives, so a test sees what reached it and when.
import { describe, expect, it } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js"
import { Server } from "@modelcontextprotocol/sdk/server/index.js"
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js"
import { CallToolRequestSchema, ListToolsRequestSchema, type Tool as SdkTool } from "@modelcontextprotocol/sdk/types.js"
import { randomUUID } from "node:crypto"
import { existsSync, mkdtempSync, readFileSync } from "node:fs"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Fiber, Layer, PubSub } from "effect"
import { Agent, Audit, HumanConfirm, Registry, ScriptedModel, Toolkit } from "@graded/core"
import { McpImport } from "@graded/mcp"
import { built } from "../../../test/built.js"
import { makeForeign } from "./fixtures/foreign.js"

const { call, calls, text } = ScriptedModel

const fixture = built("packages/mcp/test/fixtures/foreignStdio.ts")
const exitEarly = built("packages/mcp/test/fixtures/exitEarly.ts")

const newLog = () => join(mkdtempSync(join(tmpdir(), "graded-connect-")), "calls.log")

/** What the foreign server has received so far, one `tool args` line per call. */
const seen = (log: string): ReadonlyArray<string> =>
  existsSync(log) ? readFileSync(log, "utf8").split("\n").filter((line) => line !== "") : []

const spawnForeign = (log: string) => McpImport.stdio({ command: process.execPath, args: [fixture, log] })

const grades = { search: "read", delete_repo: "write", stall: "read", pid: "read" } as const

/** Waits for a condition another process makes true; fails the test after 10 seconds. */
const until = (check: () => boolean, what: string) =>
  Effect.promise(async () => {
    const deadline = Date.now() + 10_000
    while (!check()) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
  })

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

const pidOf = (toolkit: Toolkit.Toolkit<ReadonlyArray<McpImport.Imported<string, "read">>>) =>
  toolkit.get("foreign.pid")!.invoke({}).pipe(Effect.map(Number))

describe("McpImport.stdio: a foreign server spawned as a child process", () => {
  it.live("a read runs; a write reaches the server only after the human approved, never when rejected", () =>
    Effect.gen(function*() {
      const log = newLog()
      const client = yield* spawnForeign(log)
      const toolkit = yield* McpImport.toolkit(client, grades, { namespace: "foreign" })
      const seenWhenAsked: Array<ReadonlyArray<string>> = []
      const ui = HumanConfirm.scripted([
        () => {
          seenWhenAsked.push(seen(log))
          return HumanConfirm.approve("agent:alice")
        },
        () => {
          seenWhenAsked.push(seen(log))
          return HumanConfirm.reject("agent:alice", "keep that one")
        }
      ])
      const result = yield* Agent.supervised({ toolkit, prompt: "Find and delete." }).pipe(
        Effect.provide(Layer.merge(
          ScriptedModel.layer([
            calls(call("foreign.search", { query: "graded" })),
            calls(call("foreign.delete_repo", { repo: "old" })),
            calls(call("foreign.delete_repo", { repo: "keep" })),
            text("Done.")
          ]),
          HumanConfirm.layer(ui)
        ))
      )
      expect(result.calls.map((c) => c.ok ? c.output : c.error.code)).toEqual([
        "3 repositories match graded",
        "deleted old",
        "rejected"
      ])
      expect(ui.seen.map((view) => [view.tool, view.payload])).toEqual([
        ["foreign.delete_repo", { repo: "old" }],
        ["foreign.delete_repo", { repo: "keep" }]
      ])
      // When the human was asked, the server had seen the read only; the rejected write never reached it.
      expect(seenWhenAsked[0]).toEqual(["search {\"query\":\"graded\"}"])
      expect(seen(log)).toEqual(["search {\"query\":\"graded\"}", "delete_repo {\"repo\":\"old\"}"])
    }))

  it.live("closing the scope ends the server's process", () =>
    Effect.gen(function*() {
      const pid = yield* Effect.scoped(Effect.gen(function*() {
        const client = yield* spawnForeign(newLog())
        const toolkit = Toolkit.readOnly(yield* McpImport.toolkit(client, grades, { namespace: "foreign" }))
        const pid = yield* pidOf(toolkit)
        expect(alive(pid)).toBe(true)
        return pid
      }))
      yield* until(() => !alive(pid), `process ${pid} to end`)
    }))

  it.live("the server killed mid-call: a structured error, the run goes on, the next call fails structured too", () =>
    Effect.gen(function*() {
      const log = newLog()
      const client = yield* spawnForeign(log)
      const toolkit = Toolkit.readOnly(yield* McpImport.toolkit(client, grades, { namespace: "foreign" }))
      const pid = yield* pidOf(toolkit)
      const run = yield* Agent.run({ toolkit, prompt: "Go." }).pipe(
        Effect.provide(ScriptedModel.layer([
          calls(call("foreign.stall", {})),
          calls(call("foreign.search", { query: "after" })),
          text("The server went away.")
        ])),
        Effect.forkChild
      )
      yield* until(() => seen(log).includes("stall {}"), "the stalled call to reach the server")
      process.kill(pid, "SIGKILL")
      const result = yield* Fiber.join(run)
      expect(result.stopped).toBe("answer")
      expect(result.answer).toBe("The server went away.")
      expect(result.calls.map((c) => c.ok ? "ran" : c.error.message)).toEqual([
        "foreign.stall could not be reached: its MCP server closed, timed out or broke the protocol.",
        "foreign.search could not be reached: its MCP server closed, timed out or broke the protocol."
      ])
      const error = yield* Effect.flip(toolkit.get("foreign.search")!.invoke({ query: "again" }))
      expect(error).toMatchObject({ _tag: "@graded/mcp/McpImport/Unreachable", reason: "closed" })
      expect(seen(log)).toEqual(["pid {}", "stall {}"])
    }))

  it.live("a call that outlives the import's timeout is a structured error", () =>
    Effect.gen(function*() {
      const client = yield* spawnForeign(newLog())
      const toolkit = yield* McpImport.toolkit(client, grades, { namespace: "foreign", timeout: 300 })
      const error = yield* Effect.flip(Toolkit.readOnly(toolkit).get("foreign.stall")!.invoke({}))
      expect(error).toMatchObject({ _tag: "@graded/mcp/McpImport/Unreachable", reason: "timeout" })
    }))

  it.live("a command that does not exist, one that exits before initialize, one that never answers: ConnectFailed", () =>
    Effect.gen(function*() {
      const missing = yield* Effect.flip(Effect.scoped(McpImport.stdio({ command: "graded-no-such-command-xyz" })))
      expect(missing).toBeInstanceOf(McpImport.ConnectFailed)
      expect(missing).toMatchObject({ reason: "not-found", target: "graded-no-such-command-xyz" })
      expect(missing.message).toContain("graded-no-such-command-xyz could not be started (ENOENT)")

      const exited = yield* Effect.flip(Effect.scoped(McpImport.stdio({
        command: process.execPath,
        args: [exitEarly]
      })))
      expect(exited).toMatchObject({ reason: "exited" })
      expect(exited.detail).toContain("foreign: missing configuration file")

      // Reads its stdin, never answers, and ends when stdin closes.
      const silent = yield* Effect.flip(Effect.scoped(McpImport.stdio({
        command: process.execPath,
        args: ["-e", "process.stdin.on('data', () => {}); process.stdin.on('end', () => process.exit(0))"],
        timeout: 300
      })))
      expect(silent).toMatchObject({ reason: "timeout", detail: "no answer to initialize within 300 ms" })
    }))
})

// The foreign server over Streamable HTTP, served by the SDK's own transport on
// loopback: one transport (and one server) per session. With `token`, a
// request without `authorization: Bearer <token>` gets a 401.
const serveHttp = (log: string, token?: string) =>
  Effect.acquireRelease(
    Effect.promise(() =>
      new Promise<{ url: string; close: () => Promise<void> }>((resolve) => {
        const sessions = new Map<string, StreamableHTTPServerTransport>()
        const handle = async (request: IncomingMessage, response: ServerResponse) => {
          if (token !== undefined && request.headers.authorization !== `Bearer ${token}`) {
            response.writeHead(401).end("unauthorized")
            return
          }
          if (request.url !== "/mcp") {
            response.writeHead(404).end("not found")
            return
          }
          const id = request.headers["mcp-session-id"]
          let transport = typeof id === "string" ? sessions.get(id) : undefined
          if (transport === undefined) {
            transport = new StreamableHTTPServerTransport({
              sessionIdGenerator: () => randomUUID(),
              onsessioninitialized: (session) => {
                sessions.set(session, transport!)
              }
            })
            await makeForeign(log).connect(transport)
          }
          await transport.handleRequest(request, response)
        }
        const server = createServer((request, response) => void handle(request, response))
        server.listen(0, "127.0.0.1", () => {
          const { port } = server.address() as AddressInfo
          resolve({
            url: `http://127.0.0.1:${port}/mcp`,
            close: async () => {
              await Promise.all([...sessions.values()].map((transport) => transport.close()))
              server.closeAllConnections()
              await new Promise((done) => server.close(done))
            }
          })
        })
      })
    ),
    (served) => Effect.promise(served.close)
  )

describe("McpImport.http: a foreign server served by the SDK over Streamable HTTP", () => {
  it.live("headers reach the server; a read runs; a write approved reaches it, rejected never does", () =>
    Effect.gen(function*() {
      const log = newLog()
      const served = yield* serveHttp(log, "s3cret")
      const client = yield* McpImport.http(served.url, { headers: { authorization: "Bearer s3cret" } })
      const toolkit = yield* McpImport.toolkit(client, grades, { namespace: "foreign" })
      const seenWhenAsked: Array<ReadonlyArray<string>> = []
      const ui = HumanConfirm.scripted([
        () => {
          seenWhenAsked.push(seen(log))
          return HumanConfirm.approve("agent:alice")
        },
        HumanConfirm.reject("agent:alice", "no")
      ])
      const result = yield* Agent.supervised({ toolkit, prompt: "Go." }).pipe(
        Effect.provide(Layer.merge(
          ScriptedModel.layer([
            calls(call("foreign.search", { query: "web" })),
            calls(call("foreign.delete_repo", { repo: "old" })),
            calls(call("foreign.delete_repo", { repo: "keep" })),
            text("Done.")
          ]),
          HumanConfirm.layer(ui)
        ))
      )
      expect(result.calls.map((c) => c.ok ? c.output : c.error.code)).toEqual([
        "3 repositories match web",
        "deleted old",
        "rejected"
      ])
      expect(seenWhenAsked).toEqual([["search {\"query\":\"web\"}"]])
      expect(seen(log)).toEqual(["search {\"query\":\"web\"}", "delete_repo {\"repo\":\"old\"}"])
    }))

  it.live("refused: no server on the port, an HTTP error (401, 404), a URL that is not http", () =>
    Effect.gen(function*() {
      const served = yield* serveHttp(newLog(), "s3cret")
      const unauthorized = yield* Effect.flip(Effect.scoped(McpImport.http(served.url)))
      expect(unauthorized).toMatchObject({ _tag: "@graded/mcp/McpImport/ConnectFailed", reason: "refused" })
      expect(unauthorized.detail).toContain("HTTP 401")
      const wrongPath = yield* Effect.flip(Effect.scoped(
        McpImport.http(served.url.replace("/mcp", "/nope?token=abc"), { headers: { authorization: "Bearer s3cret" } })
      ))
      expect(wrongPath.detail).toContain("HTTP 404")
      // The query, which may carry a secret, is not shown.
      expect(wrongPath.target).toBe(served.url.replace("/mcp", "/nope"))

      // A port nothing listens on: take one, then free it.
      const port = yield* Effect.promise(() =>
        new Promise<number>((resolve) => {
          const probe = createServer().listen(0, "127.0.0.1", () => {
            const { port } = probe.address() as AddressInfo
            probe.close(() => resolve(port))
          })
        })
      )
      const refused = yield* Effect.flip(Effect.scoped(McpImport.http(`http://127.0.0.1:${port}/mcp`)))
      expect(refused).toMatchObject({ reason: "refused", target: `http://127.0.0.1:${port}/mcp` })
      expect(refused.detail).toContain("ECONNREFUSED")

      const notHttp = yield* Effect.flip(Effect.scoped(McpImport.http("file:///etc/passwd")))
      expect(notHttp).toMatchObject({ reason: "refused", detail: "the URL is not http: or https:" })
    }))

  it.live("a server that accepts the connection and never answers: a timeout", () =>
    Effect.gen(function*() {
      const hung = yield* Effect.acquireRelease(
        Effect.promise(() =>
          new Promise<{ url: string; close: () => Promise<void> }>((resolve) => {
            const server = createServer(() => {})
            server.listen(0, "127.0.0.1", () => {
              const { port } = server.address() as AddressInfo
              resolve({
                url: `http://127.0.0.1:${port}/mcp`,
                close: () =>
                  new Promise((done) => {
                    server.closeAllConnections()
                    server.close(() => done())
                  })
              })
            })
          })
        ),
        (hung) => Effect.promise(hung.close)
      )
      const error = yield* Effect.flip(Effect.scoped(McpImport.http(hung.url, { timeout: 300 })))
      expect(error).toMatchObject({ reason: "timeout", detail: "no answer to initialize within 300 ms" })
    }))
})

const mutate = (client: Client, step: "add" | "remove" | "rename" | "reshape") =>
  Effect.promise(() => client.callTool({ name: "mutate", arguments: { step } }))

describe("McpImport.live: the toolkit follows notifications/tools/list_changed", () => {
  it.live("a tool added at run time is a send, hidden from an autonomous run; removed, its call is a structured error", () =>
    Effect.gen(function*() {
      const log = newLog()
      const client = yield* spawnForeign(log)
      const live = yield* McpImport.live(client, grades, { namespace: "foreign" })
      const changes = yield* live.changes
      const before = yield* live.toolkit
      expect(before.get("foreign.archive_repo")).toBeUndefined()

      yield* mutate(client, "add")
      expect(yield* PubSub.take(changes)).toEqual({ added: ["foreign.archive_repo"], removed: [], changed: [] })
      const added = yield* live.toolkit
      expect(added.get("foreign.archive_repo")?.grade).toBe("send")
      expect(added.get("foreign.search")?.grade).toBe("read")
      expect(added.get("foreign.delete_repo")?.grade).toBe("write")
      expect(McpImport.claims(added).find((claim) => claim.tool === "foreign.archive_repo")).toMatchObject({
        grade: "send",
        graded: false,
        annotations: { readOnlyHint: true }
      })
      // It claims readOnlyHint: reported, not believed.
      expect(McpImport.mismatches(added).map((m) => m.tool)).toContain("foreign.archive_repo")

      // An autonomous run over the refreshed toolkit's reads is not offered it.
      const audit = Audit.memory()
      const autonomous = yield* Agent.run({ toolkit: Toolkit.readOnly(added), prompt: "Archive it." }).pipe(
        Effect.provide(Layer.merge(
          ScriptedModel.layer([calls(call("foreign.archive_repo", { repo: "old" })), text("Could not.")]),
          audit.layer
        ))
      )
      expect(autonomous.calls.map((c) => c.ok ? "ran" : c.error.code)).toEqual(["unknown-tool"])
      const offered = audit.entries.flatMap((entry) => entry.type === "offered" ? entry.tools : [])
      expect(offered).toContain("foreign.search")
      expect(offered).not.toContain("foreign.archive_repo")
      expect(seen(log).filter((line) => line.startsWith("archive_repo"))).toEqual([])

      // Supervised, the human sees its payload before the server does.
      const seenWhenAsked: Array<ReadonlyArray<string>> = []
      const supervised = yield* Agent.supervised({ toolkit: added, prompt: "Archive it." }).pipe(
        Effect.provide(Layer.merge(
          ScriptedModel.layer([calls(call("foreign.archive_repo", { repo: "old" })), text("Archived.")]),
          HumanConfirm.layer(HumanConfirm.scripted([() => {
            seenWhenAsked.push(seen(log).filter((line) => line.startsWith("archive_repo")))
            return HumanConfirm.approve("agent:alice")
          }]))
        ))
      )
      expect(seenWhenAsked).toEqual([[]])
      expect(supervised.calls.map((c) => c.ok ? c.output : c.error.code)).toEqual(["archived old"])

      yield* mutate(client, "remove")
      expect(yield* PubSub.take(changes)).toEqual({ added: [], removed: ["foreign.archive_repo"], changed: [] })
      const removed = yield* live.toolkit
      expect(removed.get("foreign.archive_repo")).toBeUndefined()
      // Called by name now: the structured error of an unknown tool.
      const byName = yield* Registry.make(removed).invoke("foreign.archive_repo", { repo: "other" }).pipe(
        Effect.provide(HumanConfirm.layer(HumanConfirm.scripted([])))
      )
      expect(byName).toMatchObject({ ok: false, code: "unknown-tool" })
      // From the toolkit imported before, in a run already under way: a structured error, nothing sent.
      const stale = yield* Agent.supervised({ toolkit: added, prompt: "Archive another." }).pipe(
        Effect.provide(Layer.merge(
          ScriptedModel.layer([calls(call("foreign.archive_repo", { repo: "other" })), text("Gone.")]),
          HumanConfirm.layer(HumanConfirm.scripted([HumanConfirm.approve("agent:alice")]))
        ))
      )
      expect(stale.calls.map((c) => c.ok ? "ran" : c.error.message)).toEqual([
        "foreign.archive_repo changed on its MCP server since it was imported; the call was not made."
      ])
      expect(seen(log).filter((line) => line.startsWith("archive_repo"))).toEqual(["archive_repo {\"repo\":\"old\"}"])
    }))

  it.live("over Streamable HTTP too: the notification arrives on the session's stream and the toolkit follows", () =>
    Effect.gen(function*() {
      const served = yield* serveHttp(newLog())
      const client = yield* McpImport.http(served.url)
      const live = yield* McpImport.live(client, grades, { namespace: "foreign" })
      const changes = yield* live.changes
      yield* mutate(client, "add")
      expect(yield* PubSub.take(changes)).toEqual({ added: ["foreign.archive_repo"], removed: [], changed: [] })
      expect((yield* live.toolkit).get("foreign.archive_repo")?.grade).toBe("send")
    }))

  it.live("attack: the read renamed into the write's name keeps the write's grade; the read's name calls nothing", () =>
    Effect.gen(function*() {
      const log = newLog()
      const client = yield* spawnForeign(log)
      const live = yield* McpImport.live(client, grades, { namespace: "foreign" })
      const changes = yield* live.changes
      yield* mutate(client, "rename")
      const report = yield* PubSub.take(changes)
      expect(report.removed).toEqual(["foreign.search"])
      expect(report.changed).toEqual(["foreign.delete_repo"])
      const toolkit = yield* live.toolkit
      // The grade follows the importer's name, never what the server now says the tool does.
      expect(toolkit.get("foreign.delete_repo")?.grade).toBe("write")
      expect(McpImport.mismatches(toolkit).map((m) => m.tool)).toContain("foreign.delete_repo")
      // The graded read keeps its place and type; its calls are structured errors, nothing is sent.
      expect(toolkit.get("foreign.search")?.grade).toBe("read")
      const before = seen(log).length
      const result = yield* Agent.run({ toolkit: Toolkit.readOnly(toolkit), prompt: "Search." }).pipe(
        Effect.provide(ScriptedModel.layer([
          calls(call("foreign.search", { query: "x" }), call("foreign.delete_repo", { query: "x" })),
          text("Nothing.")
        ]))
      )
      expect(result.calls.map((c) => c.ok ? "ran" : c.error.code)).toEqual(["failed", "unknown-tool"])
      const error = yield* Effect.flip(Toolkit.readOnly(toolkit).get("foreign.search")!.invoke({ query: "x" }))
      expect(error).toMatchObject({ _tag: "@graded/mcp/McpImport/Changed", change: "removed" })
      expect(seen(log).length).toBe(before)
    }))

  it.live("attack: a graded read listed again with another schema: arguments checked against the new one", () =>
    Effect.gen(function*() {
      const log = newLog()
      const client = yield* spawnForeign(log)
      const live = yield* McpImport.live(client, grades, { namespace: "foreign" })
      const changes = yield* live.changes
      const old = Toolkit.readOnly(yield* live.toolkit)
      yield* mutate(client, "reshape")
      expect(yield* PubSub.take(changes)).toEqual({ added: [], removed: [], changed: ["foreign.search"] })
      const before = seen(log).length
      // The toolkit imported before still takes { query }; the server now wants { id }: refused before sending.
      const stale = yield* Effect.flip(old.get("foreign.search")!.invoke({ query: "x" }))
      expect(stale).toMatchObject({ _tag: "@graded/mcp/McpImport/Changed", change: "input" })
      const fresh = Registry.make(Toolkit.readOnly(yield* live.toolkit))
      expect(yield* fresh.invoke("foreign.search", { query: "x" }, { autonomous: true })).toMatchObject({
        ok: false,
        code: "invalid-input"
      })
      expect(seen(log).length).toBe(before)
      expect(yield* fresh.invoke("foreign.search", { id: 7 }, { autonomous: true })).toMatchObject({
        ok: true,
        data: "repository 7"
      })
      expect((yield* live.toolkit).get("foreign.search")?.grade).toBe("read")
    }))

  it.live("attack: a listing that cannot be imported (a name listed twice) stops every call until one can", () =>
    Effect.gen(function*() {
      const received: Array<string> = []
      const tool = (name: string, property: string): SdkTool => ({
        name,
        inputSchema: { type: "object", properties: { [property]: { type: "string" } }, required: [property] },
        annotations: { readOnlyHint: true }
      })
      let tools: Array<SdkTool> = [tool("search", "query")]
      const server = new Server({ name: "twice", version: "1.0.0" }, { capabilities: { tools: { listChanged: true } } })
      server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools }))
      server.setRequestHandler(CallToolRequestSchema, async (request) => {
        received.push(request.params.name)
        return { content: [{ type: "text", text: "ok" }] }
      })
      const [clientSide, serverSide] = InMemoryTransport.createLinkedPair()
      yield* Effect.promise(() => server.connect(serverSide))
      const client = new Client({ name: "test", version: "1.0.0" })
      yield* Effect.acquireRelease(
        Effect.promise(() => client.connect(clientSide)),
        () => Effect.promise(() => client.close())
      )
      const live = yield* McpImport.live(client, { search: "read" }, { namespace: "twice" })
      const changes = yield* live.changes
      const search = Toolkit.readOnly(yield* live.toolkit).get("twice.search")!
      expect(yield* search.invoke({ query: "a" })).toBe("ok")

      tools = [tool("search", "query"), tool("search", "id")]
      yield* Effect.promise(() => server.sendToolListChanged())
      const failed = yield* PubSub.take(changes)
      expect(failed.failed).toContain("twice.search")
      const error = yield* Effect.flip(search.invoke({ query: "b" }))
      expect(error).toMatchObject({ _tag: "@graded/mcp/McpImport/Changed", change: "unlisted" })
      const manual = yield* Effect.flip(live.refresh)
      expect(manual).toBeInstanceOf(McpImport.ImportFailed)
      expect(received).toEqual(["search"])

      // A new tool whose name graded cannot carry is left out and reported by `skipped`, not as added.
      tools = [tool("search", "query"), tool("weird__name", "x")]
      expect(yield* live.refresh).toEqual({ added: [], removed: [], changed: [] })
      expect(McpImport.skipped(yield* live.toolkit).map((s) => s.serverName)).toEqual(["weird__name"])
      expect(yield* search.invoke({ query: "c" })).toBe("ok")
      expect(received).toEqual(["search", "search"])
    }))
})
