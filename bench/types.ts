// pnpm --dir bench bench:types: the type-check cost alone. Measures every
// variant (bench/typecheck.ts), then graded against bare effect Schema in
// interleaved pairs on both compilers, and rewrites only the "Type-check
// cost" section of docs/PERFORMANCE.md (the rest of the page is kept).
import { readFileSync, writeFileSync } from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { measure, measurePairs, typecheckSection } from "./typecheck.js"

const here = path.dirname(fileURLToPath(import.meta.url))
const repetitions = Number(process.env.BENCH_REPETITIONS ?? 5)
const sizes = (process.env.BENCH_SIZES ?? "10,100,500").split(",").map(Number)
const pairCount = Number(process.env.BENCH_PAIRS ?? 9)

const startedAt = Date.now()

console.log(`Type-check cost, ${repetitions} repetitions each (medians):`)
const results = measure(sizes, repetitions, console.log)
console.log(`graded against bare effect Schema, ${pairCount} interleaved pairs on each compiler:`)
const pairs = measurePairs(500, pairCount, console.log)

const page = path.join(here, "../docs/PERFORMANCE.md")
const current = readFileSync(page, "utf8")
const heading = "## Type-check cost\n"
const at = current.indexOf(heading)
const next = at === -1 ? -1 : current.indexOf("\n## ", at + heading.length)
const section = typecheckSection(results, pairs, repetitions, startedAt)
writeFileSync(
  page,
  at === -1
    ? `${current.trimEnd()}\n\n${section}`
    : `${current.slice(0, at)}${section}${next === -1 ? "" : current.slice(next)}`
)
console.log("wrote its section of docs/PERFORMANCE.md")
