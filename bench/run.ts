// pnpm bench: measures, side by side in one run, and writes docs/PERFORMANCE.md.
import { execFileSync } from "node:child_process"
import { writeFileSync } from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { type Measure, measure } from "./typecheck.js"

const here = path.dirname(fileURLToPath(import.meta.url))
const repetitions = Number(process.env.BENCH_REPETITIONS ?? 5)
const sizes = [10, 100, 500]

console.log(`Type-check cost, ${repetitions} repetitions each (medians):`)
const results = measure(sizes, repetitions, console.log)

const at = (variant: string, compiler: string, n: number) =>
  results.find((r) => r.variant === variant && r.compiler === compiler && r.n === n)!
const slope = (variant: string, compiler: string) =>
  Math.round((at(variant, compiler, 500).instantiations - at(variant, compiler, 100).instantiations) / 400)
const growth = (variant: string, compiler: string) =>
  (at(variant, compiler, 500).instantiations / at(variant, compiler, 100).instantiations).toFixed(2)

const variants = [...new Set(results.map((r) => r.variant))]
const compilers = [...new Set(results.map((r) => r.compiler))]
const table = (rows: ReadonlyArray<Measure>) =>
  [
    "| compiler | variant | N | instantiations | types | check time (s) | memory (MB) |",
    "|---|---|---|---|---|---|---|",
    ...rows.map((r) =>
      `| ${r.compiler} | ${r.variant} | ${r.n} | ${r.instantiations.toLocaleString("en")} | ${r.types.toLocaleString("en")} | ${r.checkSeconds} | ${Math.round(r.memoryKb / 1024)} |`
    )
  ].join("\n")

const graded = "graded (Agent.run + HumanConfirm)"
const bare = "effect Schema + handlers"
const targets = compilers.map((c) => {
  const ratio = at(graded, c, 500).checkSeconds / at(bare, c, 500).checkSeconds
  return `| ${c} | ${slope(graded, c)} (target ≤ 600) | ${growth(graded, c)} (target ≤ 5.5) | ${ratio.toFixed(2)} (target ≤ 1.5) |`
})

const doc = `# Performance

Written by \`pnpm bench\` (bench/run.ts); every figure on this page was measured side by side in one run on the
machine below. Medians of ${repetitions} repetitions; instantiation counts are exact and repeat, times are noisy.

- machine: ${os.cpus()[0]?.model ?? "unknown"}, ${os.cpus().length} cores, ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}
- compilers: TypeScript 6.0.3 (\`tsc\`) and TypeScript 7.0.2 (native \`tsc\`)
- libraries: effect 3.22.4, @effect/ai 0.37.0, graded (this commit ${execFileSync("git", ["rev-parse", "--short", "HEAD"], { cwd: here, encoding: "utf8" }).trim()})

## Type-check cost

A generator writes N tools with 3-field inputs in each style and type-checks the program with
\`tsc --noEmit --extendedDiagnostics\`:

- **plain TypeScript**: an interface and a function per tool;
- **effect Schema + handlers**: a \`Schema.Struct\` and a handler that decodes and runs, per tool;
- **@effect/ai Tool + Toolkit + toLayer**: \`Tool.make\` per tool, \`Toolkit.make\` of all, \`toolkit.toLayer(handlers)\`;
- **graded**: \`Tool.read\`/\`write\`/\`send\` in turn, \`Toolkit.make\` of all, \`Agent.run\` over \`Toolkit.readOnly\`, and one
  \`HumanConfirm\` program invoking every write and send tool.

graded's packages point at their TypeScript sources, so the graded rows also pay for checking graded's own code
(the N = 10 row is mostly that); a published build with declaration files would not. The per-tool slope below
(N = 100 to 500) cancels it out.

${table(results)}

### Where graded stands against the targets

| compiler | per-tool slope (instantiations) | growth N=100 to 500 | check time at 500 vs bare Schema |
|---|---|---|---|
${targets.join("\n")}

What changed to get here: \`Toolkit.readOnly\` and \`Agent.run\`'s check used to recurse over the toolkit's tuple,
which costs the compiler the square of its length; at 500 tools the toolkit line alone passed five million
instantiations and failed with "Type instantiation is excessively deep". \`Toolkit.readOnly\` now returns a list
type, \`Agent.run\` walks the tuple only when it has an offender to name, and the duplicate-name check of
\`Toolkit.make\` runs for toolkits of up to 100 tools (past that, \`Toolkit.make\` still refuses a duplicate where it is
made, and names are still checked where each tool is defined). type-tests/scale.test.ts keeps 500 tools compiling.

## Not measured yet

The runtime comparison (registry.invoke standalone and in a fiber against the bare Schema baseline, @effect/ai's
handle, ai's path and @openai/agents' invoke), the type-check figures for ai and @openai/agents, functionSchemas for
100 and 1,000 tools, the agent loop's overhead per round, and the memory of 10,000 audit events are still to be
added to this run.
`
writeFileSync(path.join(here, "../docs/PERFORMANCE.md"), doc)
console.log("wrote docs/PERFORMANCE.md")
