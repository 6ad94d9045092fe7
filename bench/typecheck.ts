// Type-check cost, side by side: the same N tools (3-field inputs) written
// with graded, with @effect/ai, with bare effect Schema and handlers, in
// plain TypeScript, with ai (Vercel AI SDK) and with @openai/agents (both on
// zod 4), each checked by tsc 6 and by the native tsc 7.
import { execFileSync } from "node:child_process"
import { mkdirSync, rmSync, writeFileSync } from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { fields, gradedProgram } from "./program.js"

const here = path.dirname(fileURLToPath(import.meta.url))
const generated = path.join(here, ".generated")

const zodFields = `z.object({ a: z.string(), b: z.number(), c: z.boolean() })`

// graded as a user installs it: the compiled declaration files (run.ts
// builds them first). The sources row is what this workspace checks.
export const gradedVariant = "graded (Agent.run + HumanConfirm)"
export const gradedSourcesVariant = "graded, from its TypeScript sources"
const gradedBuildTypes = path.join(here, "../packages/core/dist/index.d.ts")
const extraOptions: Record<string, object> = {
  [gradedVariant]: { paths: { "@graded/core": [gradedBuildTypes] } }
}

const variants: Record<string, (n: number) => string> = {
  "plain TypeScript": (n) => {
    const lines = [`export interface Input { readonly a: string; readonly b: number; readonly c: boolean }`]
    for (let i = 0; i < n; i++) lines.push(`export const t${i} = (input: Input): string => input.a + ${i}`)
    lines.push(`export const tools = { ${Array.from({ length: n }, (_, i) => `t${i}`).join(", ")} }`)
    return lines.join("\n")
  },
  "effect Schema + handlers": (n) => {
    const lines = [`import { Effect, Schema } from "effect"`]
    for (let i = 0; i < n; i++) {
      lines.push(`export const s${i} = Schema.Struct(${fields})`)
      lines.push(
        `export const h${i} = (u: unknown) => Effect.flatMap(Schema.decodeUnknown(s${i})(u), (input) => Effect.succeed(input.a))`
      )
    }
    lines.push(`export const handlers = { ${Array.from({ length: n }, (_, i) => `t${i}: h${i}`).join(", ")} }`)
    return lines.join("\n")
  },
  "@effect/ai Tool + Toolkit + toLayer": (n) => {
    const lines = [`import { Effect, Schema } from "effect"`, `import { Tool, Toolkit } from "@effect/ai"`]
    for (let i = 0; i < n; i++) {
      lines.push(`export const t${i} = Tool.make("t${i}", { parameters: ${fields}, success: Schema.String })`)
    }
    lines.push(`export const toolkit = Toolkit.make(${Array.from({ length: n }, (_, i) => `t${i}`).join(", ")})`)
    lines.push(
      `export const layer = toolkit.toLayer({ ${
        Array.from({ length: n }, (_, i) => `t${i}: ({ a }) => Effect.succeed(a)`).join(", ")
      } })`
    )
    return lines.join("\n")
  },
  [gradedVariant]: (n) => gradedProgram(n),
  [gradedSourcesVariant]: (n) => gradedProgram(n),
  "ai tool() + generateText": (n) => {
    const lines = [`import { generateText, tool, type LanguageModel } from "ai"`, `import { z } from "zod"`]
    for (let i = 0; i < n; i++) {
      lines.push(
        `export const t${i} = tool({ description: "Tool ${i}.", inputSchema: ${zodFields}, execute: async ({ a }) => a })`
      )
    }
    lines.push(`export const tools = { ${Array.from({ length: n }, (_, i) => `t${i}`).join(", ")} }`)
    lines.push(`declare const model: LanguageModel`)
    lines.push(`export const result = generateText({ model, tools, prompt: "?" })`)
    return lines.join("\n")
  },
  "@openai/agents tool() + Agent": (n) => {
    const lines = [`import { Agent, tool } from "@openai/agents"`, `import { z } from "zod"`]
    for (let i = 0; i < n; i++) {
      lines.push(
        `export const t${i} = tool({ name: "t${i}", description: "Tool ${i}.", parameters: ${zodFields}, execute: async ({ a }) => a })`
      )
    }
    lines.push(
      `export const agent = new Agent({ name: "a", instructions: "?", tools: [${
        Array.from({ length: n }, (_, i) => `t${i}`).join(", ")
      }] })`
    )
    return lines.join("\n")
  }
}

const compilers = {
  "tsc 6.0": path.join(here, "node_modules/typescript/bin/tsc"),
  "tsc 7.0 (native)": path.join(here, "node_modules/typescript7/bin/tsc")
}

export interface Measure {
  readonly variant: string
  readonly compiler: string
  readonly n: number
  readonly instantiations: number
  readonly types: number
  readonly checkSeconds: number
  readonly memoryKb: number
}

const number = (text: string, label: string) => {
  const match = new RegExp(`${label}:\\s+([\\d.,]+)`).exec(text)
  return match === null ? Number.NaN : Number(match[1]!.replaceAll(",", ""))
}

const median = (values: ReadonlyArray<number>) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)]!
}

export const measure = (
  sizes: ReadonlyArray<number>,
  repetitions: number,
  log: (line: string) => void
): Array<Measure> => {
  rmSync(generated, { recursive: true, force: true })
  const results: Array<Measure> = []
  for (const n of sizes) {
    for (const [variant, write] of Object.entries(variants)) {
      const dir = path.join(generated, `${variant.replace(/[^a-z0-9]+/gi, "-")}-${n}`)
      mkdirSync(dir, { recursive: true })
      writeFileSync(path.join(dir, "index.ts"), write(n))
      writeFileSync(
        path.join(dir, "tsconfig.json"),
        JSON.stringify({
          extends: "../../../tsconfig.base.json",
          compilerOptions: { skipLibCheck: true, ...extraOptions[variant] },
          include: ["index.ts"]
        })
      )
      for (const [compiler, bin] of Object.entries(compilers)) {
        const runs: Array<{ instantiations: number; types: number; check: number; memory: number }> = []
        for (let r = 0; r < repetitions; r++) {
          let out = ""
          try {
            out = execFileSync("node", [bin, "--noEmit", "--extendedDiagnostics", "-p", dir], {
              encoding: "utf8",
              maxBuffer: 1 << 24
            })
          } catch (error) {
            const failed = error as { stdout?: string }
            throw new Error(
              `${variant} at N = ${n} does not type-check with ${compiler}:\n${failed.stdout?.slice(0, 2000)}`
            )
          }
          runs.push({
            instantiations: number(out, "Instantiations"),
            types: number(out, "Types"),
            check: number(out, "Check time"),
            memory: number(out, "Memory used")
          })
        }
        const result = {
          variant,
          compiler,
          n,
          instantiations: median(runs.map((x) => x.instantiations)),
          types: median(runs.map((x) => x.types)),
          checkSeconds: median(runs.map((x) => x.check)),
          memoryKb: median(runs.map((x) => x.memory))
        }
        log(
          `  ${compiler.padEnd(17)} ${variant.padEnd(36)} N=${
            String(n).padEnd(4)
          } ${result.instantiations} inst, ${result.checkSeconds}s`
        )
        results.push(result)
      }
    }
  }
  return results
}
