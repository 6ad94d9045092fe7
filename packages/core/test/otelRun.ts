// The run Audit.otel's tests trace, what its spans must carry, and an
// OTLP/HTTP receiver on loopback: shared by Audit.otel.test.ts and
// Audit.otlpTracer.test.ts.
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { expect } from "@effect/vitest"
import { Effect, Layer, Schema } from "effect"
import { Agent, Audit, HumanConfirm, ScriptedModel, Tool, Toolkit } from "@graded/core"
import { makeDesk } from "./supportDesk.js"

const { call, calls, text } = ScriptedModel

// What a tool or a person put in a payload: it must not leave unless the app says so.
export const SECRET = "sk-live-4242-SECRET"

const CrmExport = Tool.read("crm.export", {
  title: "Export the CRM",
  description: "Every customer, for the licensed.",
  features: ["crm"],
  input: Schema.Struct({}),
  output: Schema.Struct({ rows: Schema.Number }),
  run: () => Effect.succeed({ rows: 0 })
})

export const used = <T extends object>(turn: T, inputTokens: number) => ({
  ...turn,
  usage: { inputTokens, outputTokens: 7 }
})

// A supervised run with a read, a refusal (a tool that was never offered), a
// refusal of bad input, and a send the human edits and approves.
export const supervisedRun = (audit: Layer.Layer<Audit.Audit>) => {
  const desk = makeDesk()
  const support = Toolkit.make(desk.KbSearch, desk.SubmitTicket, desk.SendReply, CrmExport)
  const ui = HumanConfirm.scripted([
    (view) => HumanConfirm.approve("agent:alice", { ...(view.payload as object), text: `Edited: ${SECRET}` })
  ])
  return Agent.supervised({
    toolkit: support,
    prompt: "Answer the customer.",
    context: { actor: "agent:alice", traceId: "trace-otel-1" }
  }).pipe(
    Effect.provide(Layer.mergeAll(
      ScriptedModel.layer([
        used(
          calls(
            call("kb.search", { query: SECRET }),
            call("crm.export", {}),
            call("ticket.submit", { subject: { note: SECRET } })
          ),
          100
        ),
        used(calls(call("chat.sendMessage", { text: `Your key is ${SECRET}` })), 200),
        used(text(`Sent ${SECRET}.`), 300)
      ]),
      HumanConfirm.layer(ui),
      audit
    )),
    Effect.as(desk)
  )
}

export interface Seen {
  readonly name: string
  readonly spanId: string
  readonly parentSpanId: string | undefined
  readonly attributes: Record<string, unknown>
  readonly error: boolean
}

export const byName = (spans: ReadonlyArray<Seen>, name: string) => spans.filter((span) => span.name === name)

// What the issue asks a trace to carry, checked on spans however they were exported.
export const expectTheRun = (spans: ReadonlyArray<Seen>) => {
  const [run] = byName(spans, "invoke_agent graded")
  expect(run).toBeDefined()
  expect(run!.parentSpanId).toBeUndefined()
  expect(run!.attributes).toMatchObject({
    "gen_ai.operation.name": "invoke_agent",
    "graded.trace_id": "trace-otel-1",
    "graded.actor": "agent:alice",
    "graded.run.stopped": "answer",
    "graded.rounds": 3
  })
  const turns = byName(spans, "chat")
  expect(turns.map((turn) => turn.attributes["gen_ai.usage.input_tokens"])).toEqual([100, 200, 300])
  for (const turn of turns) {
    expect(turn.parentSpanId).toBe(run!.spanId)
    expect(turn.attributes).toMatchObject({
      "gen_ai.operation.name": "chat",
      "gen_ai.provider.name": "graded.scripted",
      "gen_ai.usage.output_tokens": 7,
      "graded.tools.offered": ["kb.search", "ticket.submit", "chat.sendMessage"],
      "graded.tools.left_out": ["crm.export"],
      "graded.tools.left_out.gates": ["feature"]
    })
    expect(String(turn.attributes["graded.tools.left_out.reasons"])).toContain("crm")
  }
  const [search] = byName(spans, "execute_tool kb.search")
  expect(search!.parentSpanId).toBe(turns[0]!.spanId)
  expect(search!.attributes).toMatchObject({
    "gen_ai.operation.name": "execute_tool",
    "gen_ai.tool.name": "kb.search",
    "graded.grade": "read"
  })
  const [notOffered] = byName(spans, "execute_tool crm.export")
  expect(notOffered!.error).toBe(true)
  expect(notOffered!.attributes).toMatchObject({ "graded.refused": true, "graded.refusal.gate": "offered" })
  expect(notOffered!.attributes["graded.refusal.reason"]).toEqual(expect.any(String))
  const [badInput] = byName(spans, "execute_tool ticket.submit")
  expect(badInput!.attributes).toMatchObject({ "graded.refused": true, "graded.refusal.gate": "input" })
  const [send] = byName(spans, "execute_tool chat.sendMessage")
  expect(send!.parentSpanId).toBe(turns[1]!.spanId)
  expect(send!.error).toBe(false)
  expect(send!.attributes).toMatchObject({
    "graded.grade": "send",
    "graded.decision": "approved",
    "graded.decider": "agent:alice",
    "graded.edited": true,
    "graded.delivered": true,
    "graded.delivered_by": "agent:alice"
  })
  expect(send!.attributes["graded.wait_ms"]).toEqual(expect.any(Number))
  expect(send!.attributes["graded.idempotency_key"]).toEqual(expect.any(String))
}

// An OTLP/HTTP receiver on loopback: every body it was sent, as bytes.
export const receiver = Effect.acquireRelease(
  Effect.promise(() =>
    new Promise<{ readonly url: string; readonly bodies: Array<Buffer>; readonly close: () => void }>((resolve) => {
      const bodies: Array<Buffer> = []
      const server = createServer((request, response) => {
        const chunks: Array<Buffer> = []
        request.on("data", (chunk: Buffer) => chunks.push(chunk))
        request.on("end", () => {
          if (request.url === "/v1/traces") bodies.push(Buffer.concat(chunks))
          response.writeHead(200, { "content-type": "application/json" }).end("{}")
        })
      })
      server.listen(0, "127.0.0.1", () =>
        resolve({
          url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/traces`,
          bodies,
          close: () => server.close()
        }))
    })
  ),
  (server) => Effect.sync(server.close)
)
