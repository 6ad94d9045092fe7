import { existsSync, mkdtempSync, readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Proposal, ProposalStore } from "@graded/core"
import { McpServe } from "@graded/mcp"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { Context, Effect, Exit, Layer, Scope } from "effect"
import { built } from "../../../test/built.js"
import { makeDesk } from "./fixtures/desk.js"
import { waitForExit } from "./fixtures/process.js"

const connectTo = (url: string) =>
  Effect.promise(async () => {
    const client = new Client({ name: "layer-test", version: "1.0.0" })
    await client.connect(new StreamableHTTPClientTransport(new URL(url)))
    return client
  })

// What a rejected promise was rejected with; undefined when it resolved.
const rejection = (promise: () => Promise<unknown>) =>
  Effect.promise(() => promise().then(() => undefined, (error: unknown) => error))

describe("McpServe.layerHttp", () => {
  it.effect("serves while the layer's scope is open, provides its address, and stops when the scope closes", () => {
    const desk = makeDesk()
    return Effect.gen(function*() {
      const scope = yield* Scope.make()
      const built = yield* Layer.buildWithScope(
        McpServe.layerHttp(desk.registry, { context: { actor: "mcp:layer" } }),
        scope
      )
      const address = Context.get(built, McpServe.Address)
      expect(address.url).toBe(`http://127.0.0.1:${address.port}/mcp`)
      expect(address.port).toBeGreaterThan(0)

      const client = yield* connectTo(address.url)
      const { tools } = yield* Effect.promise(() => client.listTools())
      expect(tools.find((tool) => tool.name === "ticket__submit")?._meta).toEqual({ "graded/grade": "write" })
      const read = yield* Effect.promise(() => client.callTool({ name: "kb__search", arguments: { query: "vat" } }))
      expect(read.structuredContent).toEqual({ hits: ["How to fix: vat"] })
      const write = yield* Effect.promise(() =>
        client.callTool({ name: "ticket__submit", arguments: { subject: "s" } })
      )
      expect(write.structuredContent).toMatchObject({ requiresConfirm: true, status: "pending" })
      expect(yield* Proposal.list()).toEqual([expect.objectContaining({ tool: "ticket.submit", actor: "mcp:layer" })])
      expect(desk.calls.submit).toBe(0)

      yield* Scope.close(scope, Exit.void)
      // The open session is gone, and nothing listens on the port any more.
      const afterClose = yield* rejection(() => client.callTool({ name: "kb__search", arguments: { query: "x" } }))
      expect(afterClose).toBeInstanceOf(Error)
      const fresh = yield* rejection(() =>
        new Client({ name: "late", version: "1.0.0" }).connect(new StreamableHTTPClientTransport(new URL(address.url)))
      )
      expect(fresh).toBeInstanceOf(Error)
      const raw = yield* rejection(() => fetch(address.url, { method: "POST" }))
      expect(raw).toBeInstanceOf(TypeError)
      expect(desk.calls.search).toBe(1)
      yield* Effect.promise(() => client.close())
    }).pipe(Effect.provide(ProposalStore.memory))
  })

  it.effect("fails to build with a ListenError naming the port when the port is taken", () => {
    const desk = makeDesk()
    return Effect.gen(function*() {
      const first = yield* Layer.build(McpServe.layerHttp(desk.registry))
      const { port } = Context.get(first, McpServe.Address)
      const taken = yield* Effect.flip(Layer.build(McpServe.layerHttp(desk.registry, { port })))
      expect(taken).toBeInstanceOf(McpServe.ListenError)
      expect(taken).toMatchObject({ host: "127.0.0.1", port })
      expect(taken.message).toContain(String(port))
      // The first one still serves.
      const client = yield* Effect.acquireRelease(
        connectTo(Context.get(first, McpServe.Address).url),
        (client) => Effect.promise(() => client.close())
      )
      const read = yield* Effect.promise(() => client.callTool({ name: "kb__search", arguments: { query: "q" } }))
      expect(read.isError).toBeFalsy()
    }).pipe(Effect.provide(ProposalStore.memory))
  })
})

describe("McpServe.layerStdio in a real process", () => {
  const script = built("packages/mcp/test/fixtures/serveLayerStdio.ts")

  it("a launched layer serves the spawned session; closing its scope closes the server and lets the process end", async () => {
    const log = join(mkdtempSync(join(tmpdir(), "graded-mcp-layer-")), "effects.log")
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [script, log],
      stderr: "pipe"
    })
    const client = new Client({ name: "stdio-layer-test", version: "1.0.0" })
    await client.connect(transport)
    const pid = transport.pid!
    let closed = false
    client.onclose = () => void (closed = true)
    try {
      const { tools } = await client.listTools()
      expect(Object.fromEntries(tools.map((tool) => [tool.name, tool._meta?.["graded/grade"]]))).toMatchObject({
        kb__search: "read",
        ticket__submit: "write",
        chat__sendMessage: "send"
      })
      const read = await client.callTool({ name: "kb__search", arguments: { query: "vat" } })
      expect(read.structuredContent).toEqual({ hits: ["How to fix: vat"] })
      const write = await client.callTool({ name: "ticket__submit", arguments: { subject: "VAT" } })
      expect(write.structuredContent).toMatchObject({ requiresConfirm: true, status: "pending" })
      const pending = (await client.callTool({ name: "desk__pending", arguments: {} })).structuredContent
      expect(pending).toEqual({
        pending: [{
          id: (write.structuredContent as { proposal: string }).proposal,
          tool: "ticket.submit",
          payload: { subject: "VAT" }
        }]
      })
      // Closing the layer's scope (the fixture interrupts the launched layer
      // on SIGTERM, and does not exit): the server closes and lets go of
      // stdin, so the process ends by itself while the client still holds its pipes.
      process.kill(pid, "SIGTERM")
      expect(await waitForExit(pid)).toBe(true)
      await expect(client.callTool({ name: "kb__search", arguments: { query: "x" } })).rejects.toBeInstanceOf(Error)
      expect(closed).toBe(true)
      expect(existsSync(log) ? readFileSync(log, "utf8") : "").toBe("")
    } finally {
      await client.close()
    }
  })
})
