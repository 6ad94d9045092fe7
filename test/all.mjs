#!/usr/bin/env node
// `pnpm test`: every check, stopping after the first group that fails; then
// each step's wall time and CPU time (its processes included, where the system
// reports it: Linux's /proc).
//
// 1. The static checks side by side (the type-checks, tsd, lint: each mostly
//    one core, and none needs the others), their output printed as each ends.
// 2. vitest's unit project, then its system project (vitest.config.ts), each
//    spreading its files over the cores.
//
// `pnpm test <path or name>...` runs only the vitest tests that match, in both
// projects: a contributor's quick loop over one area.
import { spawn } from "node:child_process"
import console from "node:console"
import { readFileSync } from "node:fs"
import process from "node:process"

const filters = process.argv.slice(2).filter((arg) => arg !== "--")

// Seconds of CPU used by the finished processes this one has waited for (utime + stime), or undefined off Linux.
// A step's own CPU is what it adds; steps that run side by side are counted together.
const childrenCpu = () => {
  try {
    const fields = readFileSync("/proc/self/stat", "utf8").replace(/^.*\) /, "").split(" ")
    // After the command name, fields 16 and 17 of the file (cutime, cstime), in clock ticks of 1/100 s.
    return (Number(fields[13]) + Number(fields[14])) / 100
  } catch {
    return undefined
  }
}

// Runs one step; `quiet` keeps its output until it ends (for steps that run side by side).
const run = (name, [command, ...args], quiet) =>
  new Promise((resolve) => {
    const start = Date.now()
    // pnpm puts node_modules/.bin on PATH, so the tools are found as pnpm's scripts find them.
    const child = spawn(command, args, { stdio: quiet ? ["ignore", "pipe", "pipe"] : "inherit" })
    let output = ""
    if (quiet) {
      child.stdout.on("data", (chunk) => void (output += chunk))
      child.stderr.on("data", (chunk) => void (output += chunk))
    }
    const end = (status, problem) => {
      if (quiet) process.stdout.write(`\n── ${name} ──\n${output}`)
      resolve({ name, wall: (Date.now() - start) / 1000, failed: status === 0 ? undefined : problem })
    }
    child.on("error", (error) => end(1, error.message))
    child.on("close", (code, signal) => end(code, signal ?? `exit code ${code}`))
  })

// Groups run in turn; the steps of a group side by side.
const groups = filters.length > 0
  ? [[["vitest", ["vitest", "run", ...filters]]]]
  : [
    [
      ["typecheck", ["tsc", "--noEmit", "-p", "tsconfig.json"]],
      ["typecheck bench", ["tsc", "--noEmit", "-p", "bench/tsconfig.json"]],
      ["types (tsd)", ["pnpm", "run", "-s", "test:types"]],
      ["lint", ["eslint", ".", "--max-warnings", "0"]]
    ],
    [["unit", ["vitest", "run", "--project", "unit"]]],
    [["system", ["vitest", "run", "--project", "system"]]]
  ]

const began = Date.now()
const cpuAtStart = childrenCpu()
const rows = []
let failed = []
for (const steps of groups) {
  const cpu = childrenCpu()
  const start = Date.now()
  const results = await Promise.all(steps.map(([name, command]) => run(name, command, steps.length > 1)))
  const used = childrenCpu()
  rows.push(...results.map((result) => ({ name: result.name, wall: result.wall })))
  if (steps.length > 1) rows.push({ name: "  side by side", wall: (Date.now() - start) / 1000 })
  rows.at(-1).cpu = cpu === undefined ? undefined : used - cpu
  failed = results.filter((result) => result.failed !== undefined)
  if (failed.length > 0) break
}

const width = Math.max(...rows.map((row) => row.name.length))
const seconds = (value) => value === undefined ? "       -" : value.toFixed(1).padStart(8)
console.log(`\n${"step".padEnd(width)}   wall s    CPU s`)
for (const { cpu, name, wall } of rows) console.log(`${name.padEnd(width)} ${seconds(wall)} ${seconds(cpu)}`)
const cpuAtEnd = childrenCpu()
console.log(
  `${"total".padEnd(width)} ${seconds((Date.now() - began) / 1000)} ${
    seconds(cpuAtEnd === undefined ? undefined : cpuAtEnd - cpuAtStart)
  }`
)
for (const { failed: problem, name } of failed) console.error(`\n${name} failed (${problem})`)
if (failed.length > 0) process.exit(1)
