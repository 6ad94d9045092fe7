import { existsSync, mkdtempSync, readFileSync } from "node:fs"
import { request as httpRequest } from "node:http"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Audit, Guard, HumanConfirm, Proposal, ProposalStore, Registry, Tool, Toolkit } from "@graded/core"
import { McpServe } from "@graded/mcp"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js"
import { ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js"
import { Effect, Layer, Schema, type Scope } from "effect"
import { built } from "../../../test/built.js"
import { makeDesk } from "./fixtures/desk.js"
import { waitForExit } from "./fixtures/process.js"

type Desk = ReturnType<typeof makeDesk>

// A connected SDK client and the graded server behind it, over an in-memory pair.
const session = (desk: Desk, options?: McpServe.Options) =>
  Effect.gen(function*() {
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair()
    yield* McpServe.connect(desk.registry, serverSide, options)
    const client = new Client({ name: "test-client", version: "1.0.0" })
    yield* Effect.acquireRelease(
      Effect.promise(() => client.connect(clientSide)),
      () => Effect.promise(() => client.close())
    )
    return client
  })

// What a rejected SDK call was rejected with.
const rejection = (promise: () => Promise<unknown>) =>
  Effect.promise(() => promise().then(() => undefined, (error: unknown) => error))

const textOf = (result: object) => {
  if (!("content" in result)) throw new Error("no content")
  const [first] = result.content as ReadonlyArray<{ type: string; text: string }>
  return JSON.parse(first!.text) as Record<string, unknown>
}

describe("McpServe over the SDK's in-memory transport", () => {
  it.effect("lists each offered tool by wire name with its schemas, grade annotations and _meta grade", () =>
    Effect.gen(function*() {
      const client = yield* session(makeDesk(), { context: { page: "inbox" } })
      const { tools } = yield* Effect.promise(() => client.listTools())
      const byName = new Map(tools.map((tool) => [tool.name, tool]))
      // The feature-gated read is not licensed here; the page-gated write is for another page.
      expect([...byName.keys()].sort()).toEqual([
        "chat__sendMessage",
        "desk__pending",
        "kb__crash",
        "kb__search",
        "ticket__submit"
      ])
      const search = byName.get("kb__search")!
      expect(search.title).toBe("Search the knowledge base")
      expect(search.description).toContain("Finds articles for a query.")
      expect(search.inputSchema).toMatchObject({
        type: "object",
        properties: { query: { type: "string" } },
        additionalProperties: false
      })
      expect(search.outputSchema).toMatchObject({ type: "object", properties: { hits: { type: "array" } } })
      expect(search.annotations).toEqual({ title: search.title, readOnlyHint: true, openWorldHint: false })
      expect(search._meta).toEqual({ [McpServe.gradeKey]: "read" })
      const submit = byName.get("ticket__submit")!
      // It declares it only adds; a write that says nothing is destructive (below).
      expect(submit.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: false, openWorldHint: false })
      expect(submit._meta).toEqual({ "graded/grade": "write" })
      // A write's output never reaches the client: no output schema is promised.
      expect(submit.outputSchema).toBeUndefined()
      const send = byName.get("chat__sendMessage")!
      expect(send.annotations).toMatchObject({ readOnlyHint: false, openWorldHint: true })
      expect(send._meta).toEqual({ "graded/grade": "send" })
    }).pipe(Effect.provide(ProposalStore.memory)))

  it.effect("gates follow the session's context: features and page", () =>
    Effect.gen(function*() {
      const client = yield* session(makeDesk(), { context: { features: ["billing"], page: "ticket" } })
      const listed = (yield* Effect.promise(() => client.listTools())).tools
      const names = listed.map((tool) => tool.name)
      expect(names).toContain("billing__invoices")
      expect(names).toContain("ticket__escalate")
      expect(listed.find((tool) => tool.name === "ticket__escalate")!.annotations).toMatchObject({
        readOnlyHint: false,
        destructiveHint: true
      })
      const elsewhere = yield* session(makeDesk(), { context: { page: "inbox" } })
      // Not listed, and refused when called anyway: a tool result with isError and the gate's message.
      const refused = yield* Effect.promise(() => elsewhere.callTool({ name: "billing__invoices", arguments: {} }))
      expect(refused.isError).toBe(true)
      expect(textOf(refused)).toMatchObject({ ok: false, code: "feature" })
      const escalate = yield* Effect.promise(() =>
        elsewhere.callTool({ name: "ticket__escalate", arguments: { id: "T-1" } })
      )
      expect(escalate.isError).toBe(true)
      expect(textOf(escalate)).toMatchObject({ ok: false, code: "page" })
      expect(yield* Proposal.list()).toEqual([])
    }).pipe(Effect.provide(ProposalStore.memory)))

  it.effect("a guard in scope (a policy) leaves tools out of the listing and refuses their calls", () => {
    const noSearchForGuests: Guard.Guard = {
      name: "guests",
      screen: ({ context, tools }) =>
        Effect.succeed({
          left: new Map(
            context.role === "guest"
              ? tools.filter((tool) => tool.name === "kb.search").map((
                tool
              ) => [tool.name, { gate: "policy:role", reason: "guests may not search" }])
              : []
          )
        }),
      admit: ({ context, tool }) =>
        Effect.succeed(
          context.role === "guest" && tool.name === "kb.search"
            ? { gate: "policy:role", reason: "guests may not search" } : undefined
        )
    }
    const desk = makeDesk()
    return Effect.gen(function*() {
      const guest = yield* session(desk, { context: { role: "guest" } })
      const names = (yield* Effect.promise(() => guest.listTools())).tools.map((tool) => tool.name)
      expect(names).not.toContain("kb__search")
      const refused = yield* Effect.promise(() => guest.callTool({ name: "kb__search", arguments: { query: "vat" } }))
      expect(refused.isError).toBe(true)
      expect(textOf(refused)).toMatchObject({ code: "refused", gate: "policy:role", error: "guests may not search" })
      expect(desk.calls.search).toBe(0)
      const staff = yield* session(desk, { context: { role: "staff" } })
      const ran = yield* Effect.promise(() => staff.callTool({ name: "kb__search", arguments: { query: "vat" } }))
      expect(ran.isError).toBeFalsy()
      expect(desk.calls.search).toBe(1)
    }).pipe(Effect.provide(Layer.merge(ProposalStore.memory, Guard.layer(noSearchForGuests))))
  })

  it.effect("a read runs and returns its output as text and structured content", () => {
    const desk = makeDesk()
    return Effect.gen(function*() {
      const client = yield* session(desk)
      yield* Effect.promise(() => client.listTools())
      const result = yield* Effect.promise(() => client.callTool({ name: "kb__search", arguments: { query: "vat" } }))
      expect(result.isError).toBeFalsy()
      expect(result.structuredContent).toEqual({ hits: ["How to fix: vat"] })
      expect(textOf(result)).toEqual({ ok: true, data: { hits: ["How to fix: vat"] } })
      expect(desk.calls.search).toBe(1)
    }).pipe(Effect.provide(ProposalStore.memory))
  })

  it.effect("a write never runs on the client's word: it records a proposal a human then decides", () => {
    const desk = makeDesk()
    return Effect.gen(function*() {
      const client = yield* session(desk, { context: { actor: "mcp:claude" } })
      const result = yield* Effect.promise(() =>
        client.callTool({ name: "ticket__submit", arguments: { subject: "VAT number wrong" } })
      )
      expect(desk.calls.submit).toBe(0)
      expect(result.isError).toBeFalsy()
      expect(result.structuredContent).toMatchObject({
        requiresConfirm: true,
        code: "requires-confirm",
        status: "pending"
      })
      const id = (result.structuredContent as { proposal: string }).proposal
      expect(result._meta).toEqual({ [McpServe.proposalKey]: id })
      const [proposal] = yield* Proposal.list({ status: "pending" })
      expect(proposal).toMatchObject({
        id,
        tool: "ticket.submit",
        grade: "write",
        payload: { subject: "VAT number wrong" },
        actor: "mcp:claude"
      })
      // The client asking again, with anything it likes in the arguments or
      // `_meta`, records another proposal; it never runs the write.
      const again = yield* rejection(() =>
        client.callTool({ name: "ticket__submit", arguments: { subject: "x", confirmed: true } })
      )
      expect(again).toBeInstanceOf(McpError)
      yield* Effect.promise(() =>
        client.callTool({ name: "ticket.submit", arguments: { subject: "y" }, _meta: { "graded/confirmed": true } })
      )
      expect(desk.calls.submit).toBe(0)
      expect(yield* Proposal.list({ status: "pending" })).toHaveLength(2)
      // A human approves it through their own HumanConfirm: then, and only then, it runs once.
      yield* Proposal.approve(desk.toolkit, id).pipe(
        Effect.provide(HumanConfirm.layer(HumanConfirm.scripted([HumanConfirm.approve("human:alice")])))
      )
      expect(desk.calls.submit).toBe(1)
    }).pipe(Effect.provide(ProposalStore.memory))
  })

  it.effect("a send is prepared and recorded, never delivered; the proposal holds the prepared payload", () => {
    const desk = makeDesk()
    const audit = Audit.memory()
    return Effect.gen(function*() {
      const client = yield* session(desk)
      const result = yield* Effect.promise(() =>
        client.callTool({ name: "chat__sendMessage", arguments: { text: "We are on it." } })
      )
      expect(desk.calls.deliver).toBe(0)
      expect(textOf(result)).toMatchObject({ requiresConfirm: true, status: "pending" })
      const [proposal] = yield* Proposal.list()
      expect(proposal).toMatchObject({
        tool: "chat.sendMessage",
        grade: "send",
        payload: { text: "We are on it.", signature: "-- Support" }
      })
      expect(audit.entries.find((entry) => entry.type === "proposed")).toMatchObject({
        tool: "chat.sendMessage",
        proposal: proposal!.id
      })
      expect(audit.entries.some((entry) => entry.type === "delivered")).toBe(false)
    }).pipe(Effect.provide(Layer.merge(ProposalStore.memory, audit.layer)))
  })

  it.effect("with the ProposalStore requirement cast away, a write or send is refused and nothing runs", () => {
    const desk = makeDesk()
    // The compile-time rule (type-tests/mcp): a registry with writes or sends needs a ProposalStore. Cast away:
    const unchecked = session(desk) as Effect.Effect<Client, never, Scope.Scope>
    return Effect.gen(function*() {
      const client = yield* unchecked
      const write = yield* Effect.promise(() =>
        client.callTool({ name: "ticket__submit", arguments: { subject: "x" } })
      )
      expect(write.isError).toBe(true)
      expect(textOf(write)).toMatchObject({ ok: false, code: "requires-confirm", requiresConfirm: true })
      const send = yield* Effect.promise(() => client.callTool({ name: "chat__sendMessage", arguments: { text: "x" } }))
      expect(send.isError).toBe(true)
      expect(textOf(send)).toMatchObject({
        code: "requires-confirm",
        confirmPayload: { text: "x", signature: "-- Support" }
      })
      expect(desk.calls.submit + desk.calls.deliver).toBe(0)
    })
  })

  it.effect("a read that finishes later is answered as one that finishes at once; its defect as the fixed message", () =>
    Effect.gen(function*() {
      // A tool's run that waits on something outside (a timer here): its
      // fiber does not end as it starts.
      const later = <A>(value: () => A) =>
        Effect.flatMap(Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 5))), () => Effect.sync(value))
      const Search = Tool.read("kb.later", {
        title: "Search later",
        description: "Finds articles for a query, after a wait.",
        input: Schema.Struct({ query: Schema.String }),
        output: Schema.Struct({ hits: Schema.Array(Schema.String) }),
        run: ({ query }) => later(() => ({ hits: [`How to fix: ${query}`] }))
      })
      const Crash = Tool.read("kb.laterCrash", {
        title: "Crash later",
        description: "Fails with a defect, after a wait.",
        input: Schema.Struct({}),
        output: Schema.Struct({ never: Schema.String }),
        run: () =>
          later((): { never: string } => {
            throw new Error("secret later detail")
          })
      })
      const [clientSide, serverSide] = InMemoryTransport.createLinkedPair()
      yield* McpServe.connect(Registry.make(Toolkit.make(Search, Crash)), serverSide)
      const client = new Client({ name: "test-client", version: "1.0.0" })
      yield* Effect.acquireRelease(
        Effect.promise(() => client.connect(clientSide)),
        () => Effect.promise(() => client.close())
      )
      yield* Effect.promise(() => client.listTools())
      const result = yield* Effect.promise(() => client.callTool({ name: "kb__later", arguments: { query: "vat" } }))
      expect(result.isError).toBeFalsy()
      expect(result.structuredContent).toEqual({ hits: ["How to fix: vat"] })
      expect(textOf(result)).toEqual({ ok: true, data: { hits: ["How to fix: vat"] } })
      const bad = yield* rejection(() => client.callTool({ name: "kb__later", arguments: { query: 42 } }))
      expect((bad as McpError).code).toBe(ErrorCode.InvalidParams)
      const crash = yield* Effect.promise(() => client.callTool({ name: "kb__laterCrash", arguments: {} }))
      expect(crash.isError).toBe(true)
      expect(JSON.stringify(crash)).not.toContain("secret later detail")
    }))

  it.effect("unknown tools and bad arguments are protocol errors; the server stays up", () => {
    const desk = makeDesk()
    return Effect.gen(function*() {
      const client = yield* session(desk)
      const unknown = yield* rejection(() => client.callTool({ name: "kb__nope", arguments: {} }))
      expect(unknown).toBeInstanceOf(McpError)
      expect((unknown as McpError).code).toBe(ErrorCode.InvalidParams)
      expect((unknown as McpError).message).toContain("kb__nope")
      // A proposal tool is not a tool of the served registry.
      const propose = yield* rejection(() =>
        client.callTool({ name: "ticket__submit__propose", arguments: { subject: "x" } })
      )
      expect((propose as McpError).code).toBe(ErrorCode.InvalidParams)
      const badRead = yield* rejection(() => client.callTool({ name: "kb__search", arguments: { query: 42 } }))
      expect((badRead as McpError).code).toBe(ErrorCode.InvalidParams)
      expect((badRead as McpError).message).toContain("query")
      const badWrite = yield* rejection(() => client.callTool({ name: "ticket__submit", arguments: { title: "x" } }))
      expect((badWrite as McpError).code).toBe(ErrorCode.InvalidParams)
      expect((badWrite as McpError).message).toContain("subject")
      expect((badWrite as McpError).message).not.toContain(".propose")
      expect(yield* Proposal.list()).toEqual([])
      expect(desk.calls).toEqual({ search: 0, submit: 0, prepare: 0, deliver: 0 })
      // A tool that dies: a tool result with the fixed message, not the defect's text.
      const crash = yield* Effect.promise(() => client.callTool({ name: "kb__crash", arguments: {} }))
      expect(crash.isError).toBe(true)
      expect(JSON.stringify(crash)).not.toContain("secret stack detail")
      // Still serving.
      const ok = yield* Effect.promise(() => client.callTool({ name: "kb__search", arguments: { query: "vat" } }))
      expect(ok.isError).toBeFalsy()
    }).pipe(Effect.provide(ProposalStore.memory))
  })

  it.effect("each session gets its own trace, so the cap on waiting proposals holds per client", () => {
    const desk = makeDesk()
    return Effect.gen(function*() {
      const client = yield* session(desk, { proposals: { maxPendingPerTrace: 2 } })
      for (const subject of ["a", "b"]) {
        const ok = yield* Effect.promise(() => client.callTool({ name: "ticket__submit", arguments: { subject } }))
        expect(ok.isError).toBeFalsy()
      }
      const third = yield* Effect.promise(() =>
        client.callTool({ name: "ticket__submit", arguments: { subject: "c" } })
      )
      expect(third.isError).toBe(true)
      expect(textOf(third)).toMatchObject({ code: "refused", gate: "proposal" })
      const other = yield* session(desk, { proposals: { maxPendingPerTrace: 2 } })
      const fresh = yield* Effect.promise(() => other.callTool({ name: "ticket__submit", arguments: { subject: "d" } }))
      expect(fresh.isError).toBeFalsy()
      expect(yield* Proposal.list()).toHaveLength(3)
      expect(desk.calls.submit).toBe(0)
    }).pipe(Effect.provide(ProposalStore.memory))
  })
})

describe("McpServe.stdio in a real process", () => {
  const script = built("packages/mcp/test/fixtures/serveStdio.ts")

  it("a spawned server lists, runs a read, records a write and a send without running them, and exits when stdin closes", async () => {
    const log = join(mkdtempSync(join(tmpdir(), "graded-mcp-")), "effects.log")
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [script, log],
      stderr: "pipe"
    })
    const client = new Client({ name: "stdio-test", version: "1.0.0" })
    await client.connect(transport)
    const pid = transport.pid!
    try {
      const { tools } = await client.listTools()
      const grades = Object.fromEntries(tools.map((tool) => [tool.name, tool._meta?.["graded/grade"]]))
      expect(grades).toMatchObject({ kb__search: "read", ticket__submit: "write", chat__sendMessage: "send" })
      expect(grades).not.toHaveProperty("billing__invoices")
      expect(tools.find((tool) => tool.name === "ticket__submit")!.annotations).toMatchObject({
        readOnlyHint: false,
        destructiveHint: false
      })

      const read = await client.callTool({ name: "kb__search", arguments: { query: "vat" } })
      expect(read.structuredContent).toEqual({ hits: ["How to fix: vat"] })

      const write = await client.callTool({ name: "ticket__submit", arguments: { subject: "VAT" } })
      expect(write.structuredContent).toMatchObject({ requiresConfirm: true, status: "pending" })
      const send = await client.callTool({ name: "chat__sendMessage", arguments: { text: "Hi" } })
      expect(send.structuredContent).toMatchObject({ requiresConfirm: true, status: "pending" })

      const pending = (await client.callTool({ name: "desk__pending", arguments: {} })).structuredContent as {
        pending: ReadonlyArray<{ id: string; tool: string; payload: unknown }>
      }
      expect(pending.pending).toEqual([
        {
          id: (write.structuredContent as { proposal: string }).proposal,
          tool: "ticket.submit",
          payload: { subject: "VAT" }
        },
        {
          id: (send.structuredContent as { proposal: string }).proposal,
          tool: "chat.sendMessage",
          payload: { text: "Hi", signature: "-- Support" }
        }
      ])

      await expect(client.callTool({ name: "nope", arguments: {} })).rejects.toBeInstanceOf(McpError)
      await expect(client.callTool({ name: "kb__search", arguments: {} })).rejects.toMatchObject({
        code: ErrorCode.InvalidParams
      })
      // Still up after the errors.
      expect((await client.callTool({ name: "kb__search", arguments: { query: "x" } })).isError).toBeFalsy()
      // Nothing was written or delivered.
      expect(existsSync(log) ? readFileSync(log, "utf8") : "").toBe("")
    } finally {
      await client.close()
    }
    // Closing stdin ends the server: its process exits on its own.
    expect(await waitForExit(pid), `the server (pid ${pid}) did not exit after stdin closed`).toBe(true)
  })
})

describe("McpServe.http over Streamable HTTP", () => {
  it.effect("two client sessions on a real port: list, read, proposals per session; a taken port is a ListenError", () => {
    const desk = makeDesk()
    return Effect.gen(function*() {
      const address = yield* McpServe.http(desk.registry, { context: { actor: "mcp:http" } })
      expect(address.url).toBe(`http://127.0.0.1:${address.port}/mcp`)
      const connectClient = () =>
        Effect.acquireRelease(
          Effect.promise(async () => {
            const client = new Client({ name: "http-test", version: "1.0.0" })
            await client.connect(new StreamableHTTPClientTransport(new URL(address.url)))
            return client
          }),
          (client) => Effect.promise(() => client.close())
        )
      const first = yield* connectClient()
      const second = yield* connectClient()
      const { tools } = yield* Effect.promise(() => first.listTools())
      expect(tools.find((tool) => tool.name === "ticket__submit")?._meta).toEqual({ "graded/grade": "write" })
      const read = yield* Effect.promise(() => first.callTool({ name: "kb__search", arguments: { query: "vat" } }))
      expect(read.structuredContent).toEqual({ hits: ["How to fix: vat"] })
      const write = yield* Effect.promise(() =>
        second.callTool({ name: "ticket__submit", arguments: { subject: "s" } })
      )
      expect(write.structuredContent).toMatchObject({ requiresConfirm: true, status: "pending" })
      const bad = yield* rejection(() => second.callTool({ name: "kb__search", arguments: { query: 1 } }))
      expect((bad as McpError).code).toBe(ErrorCode.InvalidParams)
      const [proposal] = yield* Proposal.list()
      expect(proposal).toMatchObject({ tool: "ticket.submit", actor: "mcp:http" })
      expect(desk.calls.submit).toBe(0)
      // Requests that name no session, or a made-up one, are turned away.
      const stray = yield* Effect.promise(() =>
        fetch(address.url, {
          method: "POST",
          headers: {
            "content-type": "application/json",
            accept: "application/json, text/event-stream",
            "mcp-session-id": "made-up"
          },
          body: JSON.stringify({
            jsonrpc: "2.0",
            id: 1,
            method: "tools/call",
            params: { name: "ticket__submit", arguments: { subject: "x" } }
          })
        })
      )
      expect(stray.status).toBe(404)
      // A web page whose domain was rebound to 127.0.0.1 names its own host: turned away before any session.
      const rebound = yield* Effect.promise(() =>
        new Promise<number>((resolve, reject) => {
          const request = httpRequest(address.url, {
            method: "POST",
            headers: {
              host: `evil.example:${address.port}`,
              "content-type": "application/json",
              accept: "application/json, text/event-stream"
            }
          }, (response) => {
            response.resume()
            resolve(response.statusCode ?? 0)
          })
          request.on("error", reject)
          request.end(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: {} }))
        })
      )
      expect(rebound).toBe(403)
      const taken = yield* Effect.flip(McpServe.http(desk.registry, { port: address.port }))
      expect(taken).toBeInstanceOf(McpServe.ListenError)
      expect(taken.message).toContain(String(address.port))
      expect(yield* Proposal.list()).toHaveLength(1)
    }).pipe(Effect.provide(ProposalStore.memory))
  })
})
