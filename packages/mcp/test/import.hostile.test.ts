// McpImport with a foreign server whose results are deep, huge or of odd
// types: the run goes on, the call fails with a structured error, never a defect.
import { afterEach, describe, expect, it } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js"
import { Server } from "@modelcontextprotocol/sdk/server/index.js"
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js"
import { Cause, Effect, Exit } from "effect"
import { Agent, ScriptedModel, Toolkit } from "@graded/core"
import { McpImport } from "@graded/mcp"

const { call, calls, text } = ScriptedModel

const open: Array<() => Promise<void>> = []
afterEach(async () => {
  for (const close of open.splice(0)) await close()
})

const deep = (depth: number): unknown => {
  let value: unknown = 1
  for (let i = 0; i < depth; i++) value = { a: value }
  return value
}

const hostile = async () => {
  const server = new Server({ name: "hostile", version: "1.0.0" }, { capabilities: { tools: {} } })
  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: [
      {
        name: "deep",
        description: "Deep structured result.",
        inputSchema: { type: "object", properties: {} },
        outputSchema: { type: "object" }
      },
      {
        name: "odd",
        description: "Odd content blocks.",
        inputSchema: { type: "object", properties: {} },
        annotations: { readOnlyHint: true }
      }
    ]
  }))
  server.setRequestHandler(CallToolRequestSchema, async (request) =>
    request.params.name === "deep"
      ? { content: [], structuredContent: deep(50_000) as Record<string, unknown> }
      : {
        content: [
          { type: "image", data: "AAAA", mimeType: "image/png" },
          { type: "resource_link", uri: "file:///etc/passwd", name: "x" },
          { type: "text", text: "ok" }
        ]
      })
  const [clientTransport, serverTransport] = InMemoryTransport.createLinkedPair()
  await server.connect(serverTransport)
  const client = new Client({ name: "graded-test", version: "0.1.0" })
  await client.connect(clientTransport)
  open.push(() => client.close())
  return client
}

describe("McpImport: hostile results", () => {
  it.effect("a read returning structuredContent 50,000 levels deep: a structured failure, the run goes on", () =>
    Effect.gen(function*() {
      const client = yield* Effect.promise(hostile)
      const toolkit = Toolkit.readOnly(
        yield* McpImport.toolkit(client, { deep: "read", odd: "read" }, { namespace: "h" })
      )
      const exit = yield* Effect.exit(
        Agent.run({ toolkit, prompt: "Go." }).pipe(
          Effect.provide(ScriptedModel.layer([calls(call("h.deep", {})), text("done")]))
        )
      )
      expect(Exit.isSuccess(exit), Exit.isFailure(exit) ? Cause.pretty(exit.cause).slice(0, 600) : "").toBe(true)
      if (Exit.isSuccess(exit)) {
        expect(exit.value.stopped).toBe("answer")
        expect(exit.value.calls[0]?.ok).toBe(false)
      }
    }))

  it.effect("odd content blocks for a read: only text reaches the model", () =>
    Effect.gen(function*() {
      const client = yield* Effect.promise(hostile)
      const toolkit = Toolkit.readOnly(
        yield* McpImport.toolkit(client, { deep: "read", odd: "read" }, { namespace: "h" })
      )
      const result = yield* Agent.run({ toolkit, prompt: "Go." }).pipe(
        Effect.provide(ScriptedModel.layer([calls(call("h.odd", {})), text("done")]))
      )
      expect(result.calls.map((c) => c.ok ? c.output : c.error.code)).toEqual(["ok"])
    }))
})
