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
