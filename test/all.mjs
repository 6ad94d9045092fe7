#!/usr/bin/env node
// `pnpm test`: every check, one after the other, stopping at the first that
// fails; then each step's wall time and CPU time (its processes included, where
// the system reports it: Linux's /proc).
//
// `pnpm test <path or name>...` runs only the vitest tests that match, in both
// projects: a contributor's quick loop over one area.
import { spawnSync } from "node:child_process"
import { readFileSync } from "node:fs"
import console from "node:console"
import process from "node:process"

const filters = process.argv.slice(2).filter((arg) => arg !== "--")

// Seconds of CPU used by the children this process has waited for (utime + stime), or undefined off Linux.
const childrenCpu = () => {
  try {
    const fields = readFileSync("/proc/self/stat", "utf8").replace(/^.*\) /, "").split(" ")
    // After the command name: field 14 and 15 of the file are cutime and cstime, in clock ticks (100 a second).
    return (Number(fields[13]) + Number(fields[14])) / 100
  } catch {
    return undefined
  }
}

const steps = filters.length > 0
  ? [["vitest", ["vitest", "run", ...filters]]]
  : [
    ["typecheck", ["tsc", "--noEmit", "-p", "tsconfig.json"]],
    ["typecheck bench", ["tsc", "--noEmit", "-p", "bench/tsconfig.json"]],
    ["unit", ["vitest", "run", "--project", "unit"]],
    ["system", ["vitest", "run", "--project", "system"]],
    ["types (tsd)", ["pnpm", "run", "-s", "test:types"]],
    ["lint", ["eslint", ".", "--max-warnings", "0"]]
  ]

const done = []
let failed
for (const [name, [command, ...args]] of steps) {
  const cpu = childrenCpu()
  const start = Date.now()
  // pnpm puts node_modules/.bin on PATH, so the tools are found as pnpm's scripts find them.
  const { status, signal } = spawnSync(command, args, { stdio: "inherit" })
  const used = childrenCpu()
  done.push({ name, wall: (Date.now() - start) / 1000, cpu: cpu === undefined ? undefined : used - cpu })
  if (status !== 0) {
    failed = `${name} failed (${signal ?? `exit code ${status}`})`
    break
  }
}

const width = Math.max(...done.map((step) => step.name.length))
console.log(`\n${"step".padEnd(width)}   wall s    CPU s`)
for (const { cpu, name, wall } of done) {
  console.log(
    `${name.padEnd(width)} ${wall.toFixed(1).padStart(8)} ${
      cpu === undefined ? "       -" : cpu.toFixed(1).padStart(8)
    }`
  )
}
const total = done.reduce((sum, step) => ({ wall: sum.wall + step.wall, cpu: sum.cpu + (step.cpu ?? 0) }), {
  wall: 0,
  cpu: 0
})
console.log(`${"total".padEnd(width)} ${total.wall.toFixed(1).padStart(8)} ${total.cpu.toFixed(1).padStart(8)}`)
if (failed !== undefined) {
  console.error(`\n${failed}`)
  process.exit(1)
}
