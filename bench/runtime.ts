// Runtime cost, side by side: one dispatch of a trivial tool (look up,
// gates, decode, run, encode, audit to memory) through graded's registry,
// against bare effect Schema, effect/ai's toolkit handle (Effect 4.1), ai's
// (Vercel AI SDK) own parse-and-execute steps and @openai/agents'
// FunctionTool.invoke.
//
// graded is loaded from its compiled build (packages/core/dist, which run.ts
// builds first), as a user installing the package would run it: running the
// TypeScript sources through tsx would add tsx's own wrappers to every closure.
import { executeTool, safeParseJSON, safeValidateTypes } from "@ai-sdk/provider-utils"
import type * as Graded from "@graded/core"
import { RunContext, tool as agentsTool } from "@openai/agents"
import { asSchema, tool as vercelTool } from "ai"
import { Effect, Exit, Layer, ManagedRuntime, Option, Schema, Scope, Stream, Tracer } from "effect"
import { OtlpSerialization, OtlpTracer } from "effect/observability"
import { NodeHttpClient } from "@effect/platform-node"
import { spawn } from "node:child_process"
import { Tool as AiTool, Toolkit as AiToolkit } from "effect/ai"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import { z } from "zod"

const here = path.dirname(fileURLToPath(import.meta.url))
export const gradedBuild = path.join(here, "../packages/core/dist/index.js")

const Fields = { a: Schema.String, b: Schema.Number, c: Schema.Boolean }
const input = { a: "x", b: 1, c: true }

// An OTLP/HTTP receiver: prints its port, reads and drops every body, and
// prints the bytes it read once its stdin closes.
const receiverProgram = `
let bytes = 0
const server = require("node:http").createServer((request, response) => {
  request.on("data", (chunk) => (bytes += chunk.length))
  request.on("end", () => response.writeHead(200, { "content-type": "application/json" }).end("{}"))
})
server.listen(0, "127.0.0.1", () => console.log(server.address().port))
process.stdin.resume()
process.stdin.on("end", () => { console.log(bytes); server.close(); process.exit(0) })
`

const median = (values: ReadonlyArray<number>) => [...values].sort((x, y) => x - y)[Math.floor(values.length / 2)]!

const gc = (globalThis as { gc?: (options?: { readonly type: "minor" | "major" }) => void }).gc

interface Case {
  readonly what: string
  /** Runs `calls` dispatches. */
  readonly run: (calls: number) => Promise<void> | void
}

// Microseconds per call for every case. Repetitions are interleaved (each
// repetition runs every case once) so that a noisy stretch of the machine
// falls on all cases alike; the figure is each case's median, with the
// fastest and slowest sample. A young-generation collection before each
// sample clears the last one's garbage; a full one would also throw away
// compiled code (measured: the next 5,000 calls of the bare Schema path ran
// 6 to 10 times slower), and each sample would partly measure the JIT.
const perCall = async (cases: ReadonlyArray<Case>, calls: number, repetitions: number) => {
  for (const c of cases) await c.run(Math.min(calls, 2000)) // warm up
  const samples = cases.map(() => [] as Array<number>)
  for (let r = 0; r < repetitions; r++) {
    for (const [i, c] of cases.entries()) {
      gc?.({ type: "minor" })
      const start = performance.now()
      await c.run(calls)
      samples[i]!.push(((performance.now() - start) * 1000) / calls)
    }
  }
  return cases.map((c, i) => ({
    what: c.what,
    micros: median(samples[i]!),
    min: Math.min(...samples[i]!),
    max: Math.max(...samples[i]!),
    samples: samples[i]!
  }))
}

export interface Runtime {
  readonly rows: ReadonlyArray<
    {
      readonly what: string
      readonly micros: number
      readonly min: number
      readonly max: number
      /** Each repetition's figure, in order: the rows' samples pair up by index. */
      readonly samples: ReadonlyArray<number>
    }
  >
  /** The one-minute load average before and after the call samples. */
  readonly load: readonly [number, number]
  readonly functionSchemas: ReadonlyArray<{ readonly n: number; readonly millis: number }>
  readonly functionSchemasWarm: number
  readonly roundMicros: number
  readonly auditBytesPerEvent: number
  /** What each traced row's exporter sent to its loopback receiver, in bytes, by row. */
  readonly exportedBytes: Readonly<Record<string, number>>
}

export const rowNames = {
  bareSync: "bare Schema.decodeUnknownEffect + run, Effect.runSync per call",
  barePromise: "bare Schema.decodeUnknownEffect + run, Effect.runPromise per call",
  bareFiber: "bare Schema.decodeUnknownEffect + run, in one fiber",
  gradedPromise: "graded registry.invoke, runPromise per call (the app's ManagedRuntime holds the audit sink)",
  gradedFiber: "graded registry.invoke, in one fiber (as the agent loop calls it)",
  gradedRing: "graded registry.invoke, in one fiber, counting into Audit.ring(1024) instead",
  gradedUnaudited: "graded registry.invoke, in one fiber, no audit sink in scope (no entries made)",
  gradedSpansOnly:
    "graded registry.invoke, in one fiber, Audit.ring(1024) under Audit.otel, native spans kept by no exporter (the sink's own share)",
  gradedTraced:
    "graded registry.invoke, in one fiber, Audit.ring(1024) under Audit.otel, spans batched by Audit.otlpTracer (protobuf, undici) to a loopback receiver",
  gradedTracedEffect:
    "graded registry.invoke, in one fiber, Audit.ring(1024) under Audit.otel, spans batched by Effect's OtlpTracer (protobuf, undici) to a loopback receiver",
  effectAiPromise: "effect/ai toolkit handle, its result stream run, Effect.runPromise per call",
  effectAiFiber: "effect/ai toolkit handle, its result stream run, in one fiber",
  aiValidated: "ai: lookup + safeValidateTypes + execute",
  aiParsed: "ai: lookup + safeParseJSON (JSON text) + executeTool",
  agents: "@openai/agents tool.invoke (JSON text)"
} as const

export const measureRuntime = async (repetitions: number, log: (line: string) => void): Promise<Runtime> => {
  const { Agent, Audit, Registry, ScriptedModel, Tool, Toolkit } = await import(
    pathToFileURL(gradedBuild).href
  ) as typeof Graded
  const makeGraded = (n: number, prefix = "d") =>
    Array.from({ length: n }, (_, i) =>
      Tool.read(`${prefix}${i}.t`, {
        title: "t",
        description: `Tool ${i}.`,
        input: Schema.Struct(Fields),
        output: Schema.String,
        run: ({ a }) => Effect.succeed(a)
      }))

  const calls = 20_000
  const cases: Array<Case> = []

  // bare effect Schema: decode, run.
  const decode = Schema.decodeUnknownEffect(Schema.Struct(Fields))
  const bare = (u: unknown) => Effect.flatMap(decode(u), ({ a }) => Effect.succeed(a))
  cases.push({
    what: rowNames.bareSync,
    run: (n) => {
      for (let i = 0; i < n; i++) Effect.runSync(bare(input))
    }
  })
  cases.push({
    what: rowNames.barePromise,
    run: async (n) => {
      for (let i = 0; i < n; i++) await Effect.runPromise(bare(input))
    }
  })
  cases.push({
    what: rowNames.bareFiber,
    run: (n) => {
      Effect.runSync(Effect.forEach(Array.from({ length: n }), () => bare(input), { discard: true }))
    }
  })

  // graded: the registry, gates and all, auditing to memory. The sink is
  // provided once, as an application provides its audit layer: standalone,
  // in the application's ManagedRuntime, each call its own runPromise; in a
  // fiber, around all the calls.
  const [graded] = makeGraded(1)
  const registry = Registry.make(Toolkit.make(graded!))
  const memory = Audit.memory()
  // The memory sink keeps every entry; each sample starts it empty.
  const entries = memory.entries as Array<Graded.Audit.Entry>
  const invoke = registry.invoke("d0.t", input)
  const check = await Effect.runPromise(invoke.pipe(Effect.provide(memory.layer)))
  if (!check.ok || check.data !== "x" || entries.length !== 2) {
    throw new Error("graded: the trivial tool did not run and audit")
  }
  entries.length = 0
  const app = ManagedRuntime.make(memory.layer)
  cases.push({
    what: rowNames.gradedPromise,
    run: async (n) => {
      for (let i = 0; i < n; i++) await app.runPromise(invoke)
      if (entries.length !== 2 * n) throw new Error("graded: entries were lost")
      entries.length = 0
    }
  })
  cases.push({
    what: rowNames.gradedFiber,
    run: async (n) => {
      await Effect.runPromise(
        Effect.forEach(Array.from({ length: n }), () => invoke, { discard: true }).pipe(Effect.provide(memory.layer))
      )
      if (entries.length !== 2 * n) throw new Error("graded: entries were lost")
      entries.length = 0
    }
  })
  const ring = Audit.ring(1024)
  cases.push({
    what: rowNames.gradedRing,
    run: async (n) => {
      const before = ring.recorded
      await Effect.runPromise(
        Effect.forEach(Array.from({ length: n }), () => invoke, { discard: true }).pipe(Effect.provide(ring.layer))
      )
      if (ring.recorded - before !== 2 * n) throw new Error("graded: entries were not counted")
    }
  })

  // The ring sink's calls again, each entry also made a span (Audit.otel) and
  // exported over OTLP/HTTP, batched, to a receiver on loopback that reads
  // and drops every body: the exporter's work (protobuf and the POST) runs in
  // this process, between the calls, and is measured with them. Built once,
  // as an app builds its layers. Each exporter has a receiver, a process of
  // its own, as a collector is: what it does with the bodies is not graded's
  // cost. It says how many bytes it read.
  const receivers: Array<{ readonly what: string; readonly process: ReturnType<typeof spawn> }> = []
  const tracedScope = Scope.makeUnsafe()
  const tracedRow = async (what: string, exporter: (url: string) => Layer.Layer<any>) => {
    const receiver = spawn(process.execPath, ["-e", receiverProgram], { stdio: ["pipe", "pipe", "inherit"] })
    const port = await new Promise<number>((resolve) =>
      receiver.stdout!.once("data", (line: Buffer) => resolve(Number(String(line).trim())))
    )
    receivers.push({ what, process: receiver })
    const tracer = exporter(`http://127.0.0.1:${port}/v1/traces`)
    const ring = Audit.ring(1024)
    const traced = await Effect.runPromise(Layer.buildWithScope(
      Audit.otel().pipe(Layer.provide(ring.layer), Layer.provide(tracer)),
      tracedScope
    ))
    cases.push({
      what,
      run: async (n) => {
        const before = ring.recorded
        await Effect.runPromise(
          Effect.forEach(Array.from({ length: n }), () => invoke, { discard: true }).pipe(Effect.provide(traced))
        )
        if (ring.recorded - before !== 2 * n) throw new Error(`${what}: entries were not counted`)
      }
    })
  }
  // Both exporters alike: batches of up to 4,096 spans, at least every 200 ms, posted by undici
  // (@effect/platform-node's client; a POST through fetch cost about 3 times its CPU here, whatever its size).
  const exportTo = (url: string) => ({
    url,
    exportInterval: "200 millis" as const,
    maxBatchSize: 4096,
    resource: { serviceName: "graded-bench" }
  })
  // graded's exporter: Effect's OtlpExporter batching, each span written to protobuf as it ends.
  await tracedRow(
    rowNames.gradedTraced,
    (url) => Audit.otlpTracer(exportTo(url)).pipe(Layer.provide(NodeHttpClient.layerUndici))
  )
  // Effect's OtlpTracer, in protobuf, OTLP's default encoding (cheaper to make than its JSON: about 6 µs a span against 10 here).
  await tracedRow(
    rowNames.gradedTracedEffect,
    (url) =>
      OtlpTracer.layer(exportTo(url)).pipe(Layer.provide([OtlpSerialization.layerProtobuf, NodeHttpClient.layerUndici]))
  )

  // The same, with a tracer that makes Effect's native spans and keeps none:
  // the sink's own share (following runs, making spans), without an exporter.
  const keptNone = Audit.ring(1024)
  const untraced = await Effect.runPromise(Layer.buildWithScope(
    Audit.otel().pipe(
      Layer.provide(keptNone.layer),
      Layer.provide(Layer.succeed(Tracer.Tracer, Tracer.make({ span: (options) => new Tracer.NativeSpan(options) })))
    ),
    tracedScope
  ))
  cases.push({
    what: rowNames.gradedSpansOnly,
    run: async (n) => {
      const before = keptNone.recorded
      await Effect.runPromise(
        Effect.forEach(Array.from({ length: n }), () => invoke, { discard: true }).pipe(Effect.provide(untraced))
      )
      if (keptNone.recorded - before !== 2 * n) throw new Error("graded spans: entries were not counted")
    }
  })

  // The same calls with no sink provided: what the call costs without its audit.
  cases.push({
    what: rowNames.gradedUnaudited,
    run: (n) => {
      Effect.runSync(Effect.forEach(Array.from({ length: n }), () => invoke, { discard: true }))
    }
  })

  // effect/ai (Effect 4.1): the toolkit's handle, as LanguageModel runs a
  // tool call it does not hold for approval: look up, decode, run the handler
  // in a fiber of its own that offers its result to a queue, and the stream
  // over that queue run to its end, encoding the result. The read tool has no
  // `needsApproval` (the write and send tools of the type-check program do:
  // LanguageModel asks for approval instead of calling handle).
  const AiT = AiTool.make("t", { description: "Tool 0.", parameters: Schema.Struct(Fields), success: Schema.String })
  const aiToolkit = AiToolkit.make(AiT)
  const handler = await Effect.runPromise(
    Effect.provide(aiToolkit, aiToolkit.toLayer({ t: ({ a }) => Effect.succeed(a) }))
  )
  const handle = Effect.flatMap(handler.handle("t", input), Stream.runLast)
  const handled = await Effect.runPromise(handle)
  if (Option.isNone(handled) || handled.value.result !== "x" || handled.value.encodedResult !== "x") {
    throw new Error("effect/ai: the trivial tool did not return its input")
  }
  cases.push({
    what: rowNames.effectAiPromise,
    run: async (n) => {
      for (let i = 0; i < n; i++) await Effect.runPromise(handle)
    }
  })
  cases.push({
    what: rowNames.effectAiFiber,
    run: async (n) => {
      await Effect.runPromise(Effect.forEach(Array.from({ length: n }), () => handle, { discard: true }))
    }
  })

  // ai (Vercel AI SDK): the steps generateText takes for one tool call. Its
  // parseToolCall looks the tool up with an own-property check and validates
  // with safeValidateTypes (via safeParseJSON when the input is the model's
  // JSON text) over asSchema(tool.inputSchema), made afresh on every call; its
  // executeToolCall then runs the tool through executeTool's async generator.
  const ZodFields = z.object({ a: z.string(), b: z.number(), c: z.boolean() })
  const vercelTools = { t: vercelTool({ description: "Tool 0.", inputSchema: ZodFields, execute: async ({ a }) => a }) }
  const lookup = (name: string) =>
    Object.hasOwn(vercelTools, name) ? vercelTools[name as keyof typeof vercelTools] : undefined
  const text = JSON.stringify(input)
  // generateText passes getOwn(toolsContext, name) as the context: undefined for a tool without one.
  const options = { toolCallId: "call", messages: [], context: undefined as never }
  const vercelValidated = async () => {
    const t = lookup("t")!
    const parsed = await safeValidateTypes({ value: input, schema: asSchema(t.inputSchema) })
    if (!parsed.success) throw parsed.error
    return await t.execute(parsed.value, options)
  }
  const vercelParsed = async () => {
    const t = lookup("t")!
    const parsed = await safeParseJSON({ text, schema: asSchema(t.inputSchema) })
    if (!parsed.success) throw parsed.error
    let output: unknown
    for await (const part of executeTool({ tool: t, input: parsed.value, options })) output = part.output
    return output
  }
  if (await vercelValidated() !== "x" || await vercelParsed() !== "x") {
    throw new Error("ai: the trivial tool did not return its input")
  }
  cases.push({
    what: rowNames.aiValidated,
    run: async (n) => {
      for (let i = 0; i < n; i++) await vercelValidated()
    }
  })
  cases.push({
    what: rowNames.aiParsed,
    run: async (n) => {
      for (let i = 0; i < n; i++) await vercelParsed()
    }
  })

  // @openai/agents: FunctionTool.invoke parses the model's JSON text with the
  // tool's zod schema, runs execute and turns a failure into a model-visible
  // string (so check the result: a failed parse would not throw).
  const agentsT = agentsTool({ name: "t", description: "Tool 0.", parameters: ZodFields, execute: async ({ a }) => a })
  const runContext = new RunContext()
  if (await agentsT.invoke(runContext, text) !== "x") {
    throw new Error("@openai/agents: the trivial tool did not return its input")
  }
  cases.push({
    what: rowNames.agents,
    run: async (n) => {
      for (let i = 0; i < n; i++) await agentsT.invoke(runContext, text)
    }
  })

  const loadBefore = os.loadavg()[0]!
  const rows = await perCall(cases, calls, repetitions)
  const load = [loadBefore, os.loadavg()[0]!] as const
  await app.dispose()
  for (const r of rows) {
    log(`  ${r.what.padEnd(66)} ${r.micros.toFixed(2)} µs (${r.min.toFixed(2)}-${r.max.toFixed(2)})`)
  }
  log(`  load average (1 min) before and after: ${load.map((l) => l.toFixed(2)).join(", ")}`)

  // functionSchemas, cold: fresh tools each time, so nothing is cached. The
  // garbage of building the tools is collected first: it is not the cost
  // being measured.
  const functionSchemas: Array<{ n: number; millis: number }> = []
  for (const n of [100, 1000]) {
    const samples: Array<number> = []
    // Cheap to take and noisy (a collection during one doubles it): more samples.
    for (let r = 0; r < Math.max(repetitions, 15); r++) {
      const reg = Registry.make(Toolkit.make(...makeGraded(n, `r${r}x`)))
      gc?.()
      const start = performance.now()
      const schemas = reg.functionSchemas({ autonomous: true })
      samples.push(performance.now() - start)
      if (schemas.length !== n || schemas[0]?.strict !== true) throw new Error("functionSchemas: wrong result")
    }
    functionSchemas.push({ n, millis: median(samples) })
    log(`  functionSchemas for ${n} tools (cold)`.padEnd(68) + ` ${median(samples).toFixed(2)} ms`)
  }
  // The same tools again: definitions are made once per tool and kept.
  const warmRegistry = Registry.make(Toolkit.make(...makeGraded(1000, "warm")))
  warmRegistry.functionSchemas({ autonomous: true })
  const warmSamples: Array<number> = []
  for (let r = 0; r < repetitions; r++) {
    const start = performance.now()
    warmRegistry.functionSchemas({ autonomous: true })
    warmSamples.push(performance.now() - start)
  }
  const functionSchemasWarm = median(warmSamples)
  log(`  functionSchemas for 1000 tools (again, warm)`.padEnd(68) + ` ${functionSchemasWarm.toFixed(2)} ms`)

  // The agent loop per round: a scripted model asking for one trivial call a round.
  const rounds = 200
  const toolkit = Toolkit.make(graded!)
  const turn = ScriptedModel.calls(ScriptedModel.call("d0.t", input))
  const roundSamples: Array<number> = []
  const agentRun = () => {
    const script = [...Array.from({ length: rounds - 1 }, () => turn), ScriptedModel.text("done")]
    return Effect.runPromise(
      Agent.run({ toolkit, prompt: "?", maxRounds: rounds }).pipe(Effect.provide(ScriptedModel.layer(script)))
    )
  }
  const done = await agentRun() // check it does what is measured
  if (done.stopped !== "answer" || done.calls.length !== rounds - 1 || !done.calls.every((c) => c.ok)) {
    throw new Error("agent loop: the scripted run did not make its calls")
  }
  // Warm up as the call cases do (about 2,000 rounds): the first runs are
  // many times slower while the JIT compiles the loop. A run is a few
  // milliseconds, so take more samples than for the call cases, and no forced
  // collection before each: a full collection before so short a run slows it
  // several times over, which no real loop sees.
  for (let w = 0; w < 10; w++) await agentRun()
  for (let r = 0; r < Math.max(repetitions, 25); r++) {
    const start = performance.now()
    await agentRun()
    roundSamples.push(((performance.now() - start) * 1000) / rounds)
  }
  const roundMicros = median(roundSamples)

  // Each traced row's spans reached its receiver: the row measured an exporter at work.
  await Effect.runPromise(Scope.close(tracedScope, Exit.void))
  const exportedBytes: Record<string, number> = {}
  for (const { what, process: receiver } of receivers) {
    receiver.stdin!.end()
    const bytes = await new Promise<number>((resolve) =>
      receiver.stdout!.once("data", (line: Buffer) => resolve(Number(String(line).trim())))
    )
    if (bytes === 0) throw new Error(`${what}: no span reached the OTLP receiver`)
    exportedBytes[what] = bytes
    log(
      `  spans exported over OTLP/HTTP, ${what.slice(what.lastIndexOf("by "))}`.padEnd(68) +
        ` ${(bytes / 1e6).toFixed(1)} MB`
    )
  }
  log(`  agent loop, per round (model turn + one call)`.padEnd(68) + ` ${roundMicros.toFixed(1)} µs`)

  // Memory of 10,000 audit events in the memory sink.
  gc?.()
  const before = process.memoryUsage().heapUsed
  const kept = Audit.memory()
  await Effect.runPromise(
    Effect.forEach(
      Array.from({ length: 10_000 }, (_, i) => i),
      (i) => Audit.record({ type: "called", tool: "d0.t", input: { a: `x${i}`, b: i, c: true } }),
      { discard: true }
    ).pipe(
      Effect.provide(kept.layer)
    )
  )
  gc?.()
  const auditBytesPerEvent = (process.memoryUsage().heapUsed - before) / 10_000
  if (kept.entries.length !== 10_000) throw new Error("audit: events were lost")
  log(
    `  memory of 10,000 audit events (memory sink)`.padEnd(68) +
      ` ${Math.round(auditBytesPerEvent)} bytes each${gc ? "" : " (no --expose-gc: rough)"}`
  )
  return { rows, load, functionSchemas, functionSchemasWarm, roundMicros, auditBytesPerEvent, exportedBytes }
}
