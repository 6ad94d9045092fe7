import { Effect, Schema } from "effect"
const dist = process.env.DIST ?? "../packages/core/dist/index.js"
const { Audit, Registry, Tool, Toolkit } = await import(dist)
const Fields = { a: Schema.String, b: Schema.Number, c: Schema.Boolean }
const input = { a: "x", b: 1, c: true }
const t = Tool.read("d0.t", { title: "t", description: "Tool 0.", input: Schema.Struct(Fields), output: Schema.String, run: ({ a }) => Effect.succeed(a) })
const registry = Registry.make(Toolkit.make(t))
const invoke = registry.invoke("d0.t", input)
const decode = Schema.decodeUnknown(Schema.Struct(Fields))
const bare = (u) => Effect.flatMap(decode(u), ({ a }) => Effect.succeed(a))
const memory = Audit.memory()
const ring = Audit.ring(1024)
const drop = Audit.layerSync(() => {})
const n = 20000
const loop = (eff) => Effect.forEach(Array.from({ length: n }), () => eff, { discard: true })
const cases = {
  bare: () => Effect.runSync(loop(bare(input))),
  none: () => Effect.runSync(loop(invoke)),
  drop: () => Effect.runSync(loop(invoke).pipe(Effect.provide(drop))),
  ring: () => Effect.runSync(loop(invoke).pipe(Effect.provide(ring.layer))),
  memory: () => { Effect.runSync(loop(invoke).pipe(Effect.provide(memory.layer))); memory.entries.length = 0 },
}
const only = process.env.ONLY?.split(",")
const names = Object.keys(cases).filter((k) => !only || only.includes(k))
for (const k of names) for (let i = 0; i < 5; i++) cases[k]()
const samples = Object.fromEntries(names.map((k) => [k, []]))
for (let r = 0; r < (Number(process.env.REPS) || 15); r++) for (const k of names) {
  globalThis.gc?.({ type: "minor" })
  const s = performance.now(); cases[k](); samples[k].push((performance.now() - s) * 1000 / n)
}
const med = (a) => [...a].sort((x, y) => x - y)[a.length >> 1]
for (const k of names) console.log(k.padEnd(8), med(samples[k]).toFixed(3), "µs")
