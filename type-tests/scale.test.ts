// 500 tools of mixed grades, in one toolkit, wired into Agent.run (read-only)
// and into a HumanConfirm program, must compile: every check the compiler
// runs stays within its limits (a check that grows with the square of the
// toolkit used to exceed them). Instantiations are counted, not timed.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import ts from "typescript"
import { describe, expect, it } from "vitest"

const here = path.dirname(fileURLToPath(import.meta.url))

const program = (n: number) => {
  const fields = `{ a: Schema.String, b: Schema.Number, c: Schema.Boolean }`
  const lines = [`import { Effect, Schema } from "effect"`, `import { Agent, HumanConfirm, Tool, Toolkit } from "@graded/core"`]
  const confirmed: Array<string> = []
  for (let i = 0; i < n; i++) {
    const common = `title: "t${i}", description: "Tool ${i}.", input: Schema.Struct(${fields})`
    if (i % 3 === 0) lines.push(`export const t${i} = Tool.read("d${i}.t${i}", { ${common}, output: Schema.String, run: ({ a }) => Effect.succeed(a) })`)
    else if (i % 3 === 1) lines.push(`export const t${i} = Tool.write("d${i}.t${i}", { ${common}, output: Schema.String, run: ({ a }) => Effect.succeed(a) })`)
    else lines.push(`export const t${i} = Tool.send("d${i}.t${i}", { ${common}, payload: Schema.Struct(${fields}), output: Schema.String, prepare: (input) => Effect.succeed(input), deliver: (c) => Effect.succeed(c.payload.a) })`)
    if (i % 3 !== 0) confirmed.push(`t${i}.invoke({ a: "x", b: 1, c: true })`)
  }
  lines.push(`export const toolkit = Toolkit.make(${Array.from({ length: n }, (_, i) => `t${i}`).join(", ")})`)
  lines.push(`export const agent = Agent.run({ toolkit: Toolkit.readOnly(toolkit), prompt: "?" })`)
  lines.push(`export const confirmed = Effect.all([${confirmed.join(", ")}]).pipe(Effect.provide(HumanConfirm.layer(HumanConfirm.scripted([]))))`)
  lines.push(`export const runnable: Effect.Effect<unknown, unknown, never> = confirmed`)
  return lines.join("\n")
}

describe("a large toolkit", () => {
  it("500 tools compile, with Agent.run over the read ones and HumanConfirm over the rest", () => {
    const dir = mkdtempSync(path.join(here, ".scale-"))
    const file = path.join(dir, "index.ts")
    writeFileSync(file, program(500))
    const config = ts.getParsedCommandLineOfConfigFile(path.join(here, "tsconfig.json"), {}, {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: () => undefined
    })!
    const compiled = ts.createProgram([file], config.options)
    const errors = ts.getPreEmitDiagnostics(compiled, compiled.getSourceFile(file))
    expect(errors.map((d) => ts.flattenDiagnosticMessageText(d.messageText, "\n"))).toEqual([])
    const instantiations = (compiled.getTypeChecker() as unknown as { getInstantiationCount(): number }).getInstantiationCount()
    console.log(`500 tools: ${instantiations} instantiations`)
    rmSync(dir, { recursive: true, force: true })
  }, 120_000)
})
