// The synthetic graded program whose type-check cost is measured: N tools of
// mixed grades (3-field inputs), one toolkit, Agent.run over its read tools and
// HumanConfirm over the rest. One generator, so that the benchmark
// (bench/typecheck.ts) and the compiler-cost guard (type-tests/scale.test.ts)
// measure the same program. No imports: both sides import it as it is.

/** The effect Schema fields of every generated tool's input (and of each send tool's payload). */
export const fields = `{ a: Schema.String, b: Schema.Number, c: Schema.Boolean }`

export interface Options {
  /** Also assign the confirmed program to an Effect that requires nothing, so that a capability left unprovided fails the check. */
  readonly runnable?: boolean
}

export const gradedProgram = (n: number, options: Options = {}): string => {
  const lines = [
    `import { Effect, Schema } from "effect"`,
    `import { Agent, HumanConfirm, Tool, Toolkit } from "@graded/core"`
  ]
  const confirmed: Array<string> = []
  for (let i = 0; i < n; i++) {
    const common = `title: "t${i}", description: "Tool ${i}.", input: Schema.Struct(${fields})`
    if (i % 3 === 0) {
      lines.push(
        `export const t${i} = Tool.read("d${i}.t${i}", { ${common}, output: Schema.String, run: ({ a }) => Effect.succeed(a) })`
      )
    } else if (i % 3 === 1) {
      lines.push(
        `export const t${i} = Tool.write("d${i}.t${i}", { ${common}, output: Schema.String, run: ({ a }) => Effect.succeed(a) })`
      )
    } else {lines.push(
        `export const t${i} = Tool.send("d${i}.t${i}", { ${common}, payload: Schema.Struct(${fields}), output: Schema.String, prepare: (input) => Effect.succeed(input), deliver: (c) => Effect.succeed(c.payload.a) })`
      )}
    if (i % 3 !== 0) confirmed.push(`t${i}.invoke({ a: "x", b: 1, c: true })`)
  }
  lines.push(`export const toolkit = Toolkit.make(${Array.from({ length: n }, (_, i) => `t${i}`).join(", ")})`)
  lines.push(`export const agent = Agent.run({ toolkit: Toolkit.readOnly(toolkit), prompt: "?" })`)
  lines.push(
    `export const confirmed = Effect.all([${
      confirmed.join(", ")
    }]).pipe(Effect.provide(HumanConfirm.layer(HumanConfirm.scripted([]))))`
  )
  if (options.runnable === true) lines.push(`export const runnable: Effect.Effect<unknown, unknown, never> = confirmed`)
  return lines.join("\n")
}

/**
 * What the graded program above declares and does, written with bare effect
 * Schema (the second baseline of bench/typecheck.ts): per tool an input struct
 * and an output schema, and a handler that decodes the input, runs, and
 * encodes the output; on a send (a third of the tools) also a payload struct,
 * a typed `prepare` that builds the payload and a typed `deliver` that takes
 * it, the handler decoding the payload between the two (as an edit a human
 * made is decoded); and the same invocations of every write and send tool,
 * combined with `Effect.all`. No grades, names, toolkit or agent: what is
 * left is the work graded's rules come on top of.
 */
export const sameWorkProgram = (n: number): string => {
  const lines = [`import { Effect, Schema } from "effect"`]
  const invoked: Array<string> = []
  for (let i = 0; i < n; i++) {
    lines.push(`export const i${i} = Schema.Struct(${fields})`)
    lines.push(`export const o${i} = Schema.String`)
    if (i % 3 !== 2) {
      lines.push(`export const run${i} = (input: typeof i${i}.Type) => Effect.succeed(input.a)`)
      lines.push(
        `export const h${i} = (u: unknown) => Effect.flatMap(Schema.decodeUnknownEffect(i${i})(u), (input) => Effect.flatMap(run${i}(input), Schema.encodeEffect(o${i})))`
      )
    } else {
      lines.push(`export const p${i} = Schema.Struct(${fields})`)
      lines.push(`export const prepare${i} = (input: typeof i${i}.Type) => Effect.succeed(input)`)
      lines.push(`export const deliver${i} = (payload: typeof p${i}.Type) => Effect.succeed(payload.a)`)
      lines.push(
        `export const h${i} = (u: unknown) => Effect.flatMap(Schema.decodeUnknownEffect(i${i})(u), (input) => prepare${i}(input).pipe(Effect.flatMap(Schema.decodeUnknownEffect(p${i})), Effect.flatMap(deliver${i}), Effect.flatMap(Schema.encodeEffect(o${i}))))`
      )
    }
    if (i % 3 !== 0) invoked.push(`h${i}({ a: "x", b: 1, c: true })`)
  }
  lines.push(`export const handlers = { ${Array.from({ length: n }, (_, i) => `t${i}: h${i}`).join(", ")} }`)
  lines.push(`export const invoked = Effect.all([${invoked.join(", ")}])`)
  return lines.join("\n")
}
