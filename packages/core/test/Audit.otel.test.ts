// Audit.otel: a supervised run's audit as OpenTelemetry spans, to an
// in-memory tracer and over OTLP/HTTP to a receiver on loopback; no payload
// leaves without the app's opt-in.
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Schema, Tracer } from "effect"
import { FetchHttpClient } from "effect/http"
import { OtlpSerialization, OtlpTracer } from "effect/observability"
import { Agent, Audit, Invocation, ScriptedModel, Toolkit } from "@graded/core"
import { memoryTracer } from "../../../test/memoryTracer.js"
import { byName, expectTheRun, receiver, type Seen, SECRET, supervisedRun, used } from "./otelRun.js"
import { makeDesk } from "./supportDesk.js"

const { call, calls, text } = ScriptedModel

// An in-memory exporter: Effect's native spans, kept once ended.
interface OtlpValue {
  readonly stringValue?: string
  readonly intValue?: number | string
  readonly doubleValue?: number
  readonly boolValue?: boolean
  readonly arrayValue?: { readonly values: ReadonlyArray<OtlpValue> }
}
const valueOf = (value: OtlpValue): unknown =>
  value.arrayValue !== undefined ? value.arrayValue.values.map(valueOf)
    : value.stringValue ?? (value.intValue !== undefined ? Number(value.intValue) : undefined) ?? value.doubleValue ??
      value.boolValue

// The spans a receiver was sent, read back from the OTLP JSON bodies.
const received = (bodies: ReadonlyArray<Buffer>): Array<Seen> =>
  bodies.flatMap((body) =>
    (JSON.parse(body.toString("utf8")) as {
      resourceSpans: Array<{
        scopeSpans: Array<{
          spans: Array<{
            name: string
            spanId: string
            parentSpanId?: string
            status: { code: number }
            attributes: Array<{ key: string; value: OtlpValue }>
          }>
        }>
      }>
    }).resourceSpans.flatMap((resource) =>
      resource.scopeSpans.flatMap((scope) =>
        scope.spans.map((span) => ({
          name: span.name,
          spanId: span.spanId,
          parentSpanId: span.parentSpanId === undefined || span.parentSpanId === "" ? undefined : span.parentSpanId,
          error: span.status.code === 2,
          attributes: Object.fromEntries(span.attributes.map(({ key, value }) => [key, valueOf(value)]))
        }))
      )
    )
  )

// Exports over OTLP/HTTP to `url`; the exporter flushes when the layer's scope closes.
const otlp = (url: string, options?: Audit.OtelOptions) =>
  Audit.otel(options).pipe(
    Layer.provide(OtlpTracer.layer({ url, exportInterval: "10 millis", resource: { serviceName: "graded-test" } })),
    Layer.provide([OtlpSerialization.layerJson, FetchHttpClient.layer])
  )

describe("Audit.otel", () => {
  it.effect("a supervised run's spans carry the run, its turns and its calls: refusals, the edit, the decider, the delivery", () =>
    Effect.gen(function*() {
      const { tracer, ended } = memoryTracer()
      const store = Audit.memory()
      const desk = yield* supervisedRun(
        Audit.otel().pipe(Layer.provide(store.layer), Layer.provide(Layer.succeed(Tracer.Tracer, tracer)))
      )
      expect(desk.effects.delivered).toEqual([{ to: "customer:42", text: `Edited: ${SECRET}` }])
      expectTheRun(ended)
      // The sink beneath still got every entry: spans are alongside the audit, not instead of it.
      expect(store.entries.map((entry) => entry.type)).toContain("delivered")
      expect(store.entries.length).toBeGreaterThan(8)
      // Every span ended: none is left open in memory.
      expect(ended.length).toBe(1 + 3 + 4)
    }))

  it.effect("no payload, input or free text leaves without the opt-in; the hook opts in one field", () =>
    Effect.gen(function*() {
      const quiet = memoryTracer()
      yield* supervisedRun(Audit.otel().pipe(Layer.provide(Layer.succeed(Tracer.Tracer, quiet.tracer))))
      expect(JSON.stringify(quiet.ended)).not.toContain("SECRET")

      const opted = memoryTracer()
      yield* supervisedRun(
        Audit.otel({
          payloads: (field, value) => field === "payload" ? JSON.stringify(value) : undefined
        }).pipe(Layer.provide(Layer.succeed(Tracer.Tracer, opted.tracer)))
      )
      const leaking = opted.ended.flatMap((span) =>
        Object.entries(span.attributes).filter(([, value]) => JSON.stringify(value).includes(SECRET)).map(([key]) =>
          key
        )
      )
      // Only the payload the human was shown, and only where the hook let it.
      expect(leaking).toEqual(["graded.confirm.payload"])
    }))

  it.effect("a tracer that throws loses its spans, never the run or the entries beneath", () =>
    Effect.gen(function*() {
      const store = Audit.memory()
      const broken = Tracer.make({
        span() {
          throw new Error("the tracer is down")
        }
      })
      const desk = yield* supervisedRun(
        Audit.otel().pipe(Layer.provide(store.layer), Layer.provide(Layer.succeed(Tracer.Tracer, broken)))
      )
      expect(desk.effects.delivered).toHaveLength(1)
      expect(store.entries.map((entry) => entry.type)).toContain("answered")
    }))

  it.effect("past maxOpenRuns the oldest run followed is ended where it stood, not kept forever", () =>
    Effect.gen(function*() {
      const { tracer, ended } = memoryTracer()
      const sink = Audit.otel({ maxOpenRuns: 1 }).pipe(Layer.provide(Layer.succeed(Tracer.Tracer, tracer)))
      const offered = (traceId: string) =>
        Audit.record({ type: "offered", tools: ["kb.search"], suppressed: [] }).pipe(
          Invocation.within({ traceId, actor: "agent:alice" })
        )
      yield* Effect.andThen(offered("run-a"), offered("run-b")).pipe(Effect.provide(sink))
      // run-a never ended on its own; run-b's arrival ended it, and run-b is still followed.
      expect(ended.map((span) => span.attributes["graded.trace_id"])).toEqual(["run-a"])
    }))

  it.effect("a sub-agent's run is a span under the call that ran it: the tree, not one run interleaved", () =>
    Effect.gen(function*() {
      const desk = makeDesk()
      const { tracer, ended } = memoryTracer()
      const Researcher = Agent.tool("agent.researcher", {
        title: "Researcher",
        description: "Finds what the knowledge base says.",
        toolkit: Toolkit.make(desk.KbSearch),
        instructions: "Search, then answer.",
        input: Schema.Struct({ question: Schema.String })
      })
      yield* Agent.run({
        toolkit: Toolkit.make(Researcher, desk.KbSearch),
        prompt: "How long do refunds take?",
        context: { traceId: "trace-tree" }
      }).pipe(Effect.provide(Layer.mergeAll(
        ScriptedModel.layer([
          used(calls(call("agent.researcher", { question: "refunds?" })), 10),
          used(calls(call("kb.search", { query: "refunds", limit: null })), 20),
          used(text("Five days."), 30),
          used(calls(call("kb.search", { query: "outer", limit: null })), 40),
          used(text("They take five days."), 50)
        ]),
        Audit.otel().pipe(Layer.provide(Layer.succeed(Tracer.Tracer, tracer)))
      )))
      const [root] = byName(ended, "invoke_agent graded")
      const [inner] = byName(ended, "invoke_agent agent.researcher")
      const [outerCall] = byName(ended, "execute_tool agent.researcher")
      expect(root!.parentSpanId).toBeUndefined()
      expect(inner!.parentSpanId).toBe(outerCall!.spanId)
      expect(inner!.attributes).toMatchObject({ "graded.agent": "agent.researcher", "graded.run.stopped": "answer" })
      const parentOf = (span: Seen) => ended.find((candidate) => candidate.spanId === span.parentSpanId)
      // Each turn under its own agent: the inner turns under the sub-agent's run, the outer under the root.
      const turnsUnder = (run: Seen) =>
        byName(ended, "chat").filter((turn) => turn.parentSpanId === run.spanId).map((turn) =>
          turn.attributes["gen_ai.usage.input_tokens"]
        )
      expect(turnsUnder(root!)).toEqual([10, 40, 50])
      expect(turnsUnder(inner!)).toEqual([20, 30])
      // The inner search hangs under the sub-agent's turn; the outer one under the root's.
      const searches = byName(ended, "execute_tool kb.search").map((span) => parentOf(parentOf(span)!)!.name)
      expect(searches.sort()).toEqual(["invoke_agent agent.researcher", "invoke_agent graded"])
    }))

  it.live("over OTLP/HTTP to a receiver on loopback: the same spans, and the secret is not in the bytes", () =>
    Effect.gen(function*() {
      const server = yield* receiver
      yield* Effect.scoped(Effect.asVoid(supervisedRun(otlp(server.url))))
      const bytes = Buffer.concat(server.bodies)
      expect(bytes.length).toBeGreaterThan(0)
      expect(bytes.includes(SECRET)).toBe(false)
      expectTheRun(received(server.bodies))

      // The same run with the input opted in: the receiver then sees it, so the check above can fail.
      const opted = yield* receiver
      yield* Effect.scoped(
        Effect.asVoid(supervisedRun(otlp(opted.url, {
          payloads: (field, value) => field === "input" ? JSON.stringify(value) : undefined
        })))
      )
      const search = byName(received(opted.bodies), "execute_tool kb.search")[0]!
      expect(search.attributes["gen_ai.tool.call.arguments"]).toBe(JSON.stringify({ query: SECRET }))
    }).pipe(Effect.scoped))
})
