// Runtime cost, side by side: one dispatch of a trivial tool (look up,
// gates, decode, run, encode, audit to memory) through graded's registry,
// against bare effect Schema and @effect/ai's toolkit handle.
import { Tool as AiTool, Toolkit as AiToolkit } from "@effect/ai"
import { Effect, Schema } from "effect"
import { Agent, Audit, Registry, ScriptedModel, Tool, Toolkit } from "@graded/core"

const Fields = { a: Schema.String, b: Schema.Number, c: Schema.Boolean }
const input = { a: "x", b: 1, c: true }

const median = (values: ReadonlyArray<number>) => [...values].sort((x, y) => x - y)[Math.floor(values.length / 2)]!

// Microseconds per call: the median over repetitions of `calls` calls each.
const perCall = async (calls: number, repetitions: number, run: (calls: number) => Promise<void> | void) => {
  await run(Math.min(calls, 1000)) // warm up
  const samples: Array<number> = []
  for (let r = 0; r < repetitions; r++) {
    const start = performance.now()
    await run(calls)
    samples.push(((performance.now() - start) * 1000) / calls)
  }
  return median(samples)
}

const makeGraded = (n: number, prefix = "d") =>
  Array.from({ length: n }, (_, i) =>
    Tool.read(`${prefix}${i}.t`, {
      title: "t",
      description: `Tool ${i}.`,
      input: Schema.Struct(Fields),
      output: Schema.String,
      run: ({ a }) => Effect.succeed(a)
    }))

export interface Runtime {
  readonly rows: ReadonlyArray<{ readonly what: string; readonly micros: number }>
  readonly functionSchemas: ReadonlyArray<{ readonly n: number; readonly millis: number }>
  readonly roundMicros: number
  readonly auditBytesPerEvent: number
}

export const measureRuntime = async (repetitions: number, log: (line: string) => void): Promise<Runtime> => {
  const calls = 20_000
  const rows: Array<{ what: string; micros: number }> = []
  const row = (what: string, micros: number) => {
    rows.push({ what, micros })
    log(`  ${what.padEnd(58)} ${micros.toFixed(2)} µs`)
  }

  // bare effect Schema: decode, run.
  const Struct = Schema.Struct(Fields)
  const decode = Schema.decodeUnknown(Struct)
  const bare = (u: unknown) => Effect.flatMap(decode(u), ({ a }) => Effect.succeed(a))
  row("bare Schema.decodeUnknown + run, Effect.runSync per call", await perCall(calls, repetitions, (n) => {
    for (let i = 0; i < n; i++) Effect.runSync(bare(input))
  }))
  row("bare Schema.decodeUnknown + run, in one fiber", await perCall(calls, repetitions, (n) => {
    Effect.runSync(Effect.forEach(Array.from({ length: n }), () => bare(input), { discard: true }))
  }))

  // graded: the registry, gates and all, auditing to memory.
  const [graded] = makeGraded(1)
  const registry = Registry.make(Toolkit.make(graded!))
  const audit = Audit.memory()
  const auditService = { write: (entry: Audit.Entry) => Effect.sync(() => void (audit.entries as Array<Audit.Entry>).push(entry)) }
  const invoke = registry.invoke("d0.t", input).pipe(Effect.provideService(Audit.Audit, auditService))
  row("graded registry.invoke, Effect.runPromise per call", await perCall(calls, repetitions, async (n) => {
    for (let i = 0; i < n; i++) await Effect.runPromise(invoke)
    ;(audit.entries as Array<Audit.Entry>).length = 0
  }))
  row("graded registry.invoke, in one fiber (as the agent loop calls it)", await perCall(calls, repetitions, async (n) => {
    await Effect.runPromise(Effect.forEach(Array.from({ length: n }), () => invoke, { discard: true }))
    ;(audit.entries as Array<Audit.Entry>).length = 0
  }))

  // @effect/ai: Toolkit handle.
  const AiT = AiTool.make("t", { parameters: Fields, success: Schema.String })
  const aiToolkit = AiToolkit.make(AiT)
  const handler = await Effect.runPromise(
    Effect.provide(aiToolkit, aiToolkit.toLayer({ t: ({ a }) => Effect.succeed(a) }))
  )
  const handle = handler.handle("t", input)
  row("@effect/ai toolkit handle, Effect.runPromise per call", await perCall(calls, repetitions, async (n) => {
    for (let i = 0; i < n; i++) await Effect.runPromise(handle)
  }))
  row("@effect/ai toolkit handle, in one fiber", await perCall(calls, repetitions, async (n) => {
    await Effect.runPromise(Effect.forEach(Array.from({ length: n }), () => handle, { discard: true }))
  }))

  // functionSchemas, cold: fresh tools each time, so nothing is cached.
  const functionSchemas: Array<{ n: number; millis: number }> = []
  for (const n of [100, 1000]) {
    const samples: Array<number> = []
    for (let r = 0; r < repetitions; r++) {
      const reg = Registry.make(Toolkit.make(...makeGraded(n, `r${r}x`)))
      const start = performance.now()
      reg.functionSchemas({ autonomous: true })
      samples.push(performance.now() - start)
    }
    functionSchemas.push({ n, millis: median(samples) })
    log(`  functionSchemas for ${n} tools (cold)`.padEnd(60) + ` ${median(samples).toFixed(2)} ms`)
  }

  // The agent loop per round: a scripted model asking for one trivial call a round.
  const rounds = 200
  const toolkit = Toolkit.make(graded!)
  const turn = ScriptedModel.calls(ScriptedModel.call("d0.t", input))
  const roundSamples: Array<number> = []
  for (let r = 0; r < repetitions; r++) {
    const script = [...Array.from({ length: rounds - 1 }, () => turn), ScriptedModel.text("done")]
    const start = performance.now()
    await Effect.runPromise(Agent.run({ toolkit, prompt: "?", maxRounds: rounds }).pipe(Effect.provide(ScriptedModel.layer(script))))
    roundSamples.push(((performance.now() - start) * 1000) / rounds)
  }
  const roundMicros = median(roundSamples)
  log(`  agent loop, per round (model turn + one call)`.padEnd(60) + ` ${roundMicros.toFixed(1)} µs`)

  // Memory of 10,000 audit events in the memory sink.
  const gc = (globalThis as { gc?: () => void }).gc
  gc?.()
  const before = process.memoryUsage().heapUsed
  const sink = Audit.memory()
  await Effect.runPromise(
    Effect.forEach(Array.from({ length: 10_000 }, (_, i) => i), (i) =>
      Audit.record({ type: "called", tool: "d0.t", input: { a: `x${i}`, b: i, c: true } }), { discard: true }).pipe(
        Effect.provide(sink.layer)
      )
  )
  gc?.()
  const auditBytesPerEvent = (process.memoryUsage().heapUsed - before) / 10_000
  log(`  memory of 10,000 audit events (memory sink)`.padEnd(60) + ` ${Math.round(auditBytesPerEvent)} bytes each${gc ? "" : " (no --expose-gc: rough)"}`)
  return { rows, functionSchemas, roundMicros, auditBytesPerEvent }
}
