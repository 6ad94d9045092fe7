// pnpm bench: measures, side by side in one run, and writes docs/PERFORMANCE.md.
// Runtime first: the type-check runs would load the machine under it.
import { execFileSync } from "node:child_process"
import { writeFileSync } from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { measureRuntime } from "./runtime.js"
import { type Measure, measure } from "./typecheck.js"

const here = path.dirname(fileURLToPath(import.meta.url))
const repetitions = Number(process.env.BENCH_REPETITIONS ?? 5)
const sizes = [10, 100, 500]

console.log(`Runtime, ${repetitions} repetitions each (medians):`)
const runtime = await measureRuntime(repetitions, console.log)
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

Read these with two caveats. At N = 100 graded's \`Toolkit.make\` still runs its duplicate-name check (about
290,000 instantiations, growing with the square of the count), and at N = 500 it does not, so the slope between them
understates what each tool costs on its own: a tool definition alone is about 830 instantiations with tsc 7 and
Agent.run plus Toolkit.make add about 150 more per tool, against about 490 for a bare Schema struct with its handler.
And the check-time ratio at 500 includes checking graded's own sources (about 2.5 s on tsc 6 at N = 10, before any
tool), which a published build with declaration files would not pay; it misses the 1.5 target as measured. What
would fix both: ship declaration files, and make \`Tool.read/write/send\` cheaper to infer (fewer type parameters,
the honesty check only on the \`run\` result).

What changed to get here: \`Toolkit.readOnly\` and \`Agent.run\`'s check used to recurse over the toolkit's tuple,
which costs the compiler the square of its length; at 500 tools the toolkit line alone passed five million
instantiations and failed with "Type instantiation is excessively deep". \`Toolkit.readOnly\` now returns a list
type, \`Agent.run\` walks the tuple only when it has an offender to name, and the duplicate-name check of
\`Toolkit.make\` runs for toolkits of up to 100 tools (past that, \`Toolkit.make\` still refuses a duplicate where it is
made, and names are still checked where each tool is defined). type-tests/scale.test.ts keeps 500 tools compiling.

## Runtime

One dispatch of a trivial read tool (3-field input, returns a string), ${"`"}20,000${"`"} calls a repetition.

| path | µs per call |
|---|---|
${runtime.rows.map((r) => `| ${r.what} | ${r.micros.toFixed(2)} |`).join("\n")}

| other figure | value | target |
|---|---|---|
| functionSchemas, 100 tools (cold) | ${runtime.functionSchemas[0]!.millis.toFixed(1)} ms | |
| functionSchemas, 1,000 tools (cold) | ${runtime.functionSchemas[1]!.millis.toFixed(1)} ms | under 10 ms |
| agent loop per round (scripted model turn + one call) | ${runtime.roundMicros.toFixed(0)} µs | under 50 µs |
| memory per audit event (memory sink, 10,000 events) | ${Math.round(runtime.auditBytesPerEvent)} bytes | |

graded's registry misses its runtime targets by a wide margin (the in-fiber target is 1 µs; the standalone target is
twice the bare baseline). Each invocation does more than the baseline: it merges the invocation context into a
FiberRef, decodes with excess properties refused and every error collected, encodes the output, serializes and
trims it (twice serialized: once to fit, once to audit its size), and records two audit entries, each stamping the
time and context. The next step is to profile that path and remove work: serialize once, skip trimming when the
first serialization fits, build audit entries only when a sink is provided, and decode with a cached parser. The
same causes make the agent loop's round and the cold function schemas for 1,000 tools miss their targets.

## Not measured yet

The runtime and type-check figures for ai and @openai/agents are still to be added to this run.
`
writeFileSync(path.join(here, "../docs/PERFORMANCE.md"), doc)
console.log("wrote docs/PERFORMANCE.md")
