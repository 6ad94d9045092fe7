// `graded` in a process of its own. Twice as a user starts it, node
// bin/graded.mjs, which compiles the command and the module it loads through
// tsx (test/docs.test.ts runs the documented command lines that way too); then
// what only a process has, on the same main.ts built once (test/built.ts), as
// a tsx start costs seconds of CPU: standard input and output as pipes, the
// exit code of the process, a reader that closes the pipe early. The rest of
// what the command does is tested in process (inProcess.ts).
import { execFile, spawn } from "node:child_process"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"
import { built } from "../../../test/built.js"

const here = path.dirname(fileURLToPath(import.meta.url))
const bin = path.resolve(here, "../bin/graded.mjs")
const desk = path.resolve(here, "../../../examples/support-desk")
const main = built("packages/cli/src/main.ts")
const m = ["-m", "src/graded.config.ts"]
const builtModule = ["-m", built("examples/support-desk/src/graded.config.ts")]

// Asynchronous on purpose: a worker blocked in spawnSync cannot answer vitest.
const run = (program: string, args: ReadonlyArray<string>, input = "") =>
  new Promise<{ out: string; err: string; code: number | null }>((resolve) => {
    const child = execFile(
      process.execPath,
      [program, ...args],
      { cwd: desk, encoding: "utf8", timeout: 120_000 },
      (error, out, err) => {
        resolve({ out, err, code: error === null ? 0 : typeof error.code === "number" ? error.code : null })
      }
    )
    child.stdin?.end(input)
  })
const graded = (args: ReadonlyArray<string>) => run(bin, args)
const gradedBuilt = (args: ReadonlyArray<string>, input?: string) => run(main, args, input)

// A start through tsx compiles the command: seconds, more on a busy machine.
describe("graded, started as a user starts it", { timeout: 240_000 }, () => {
  it("--help prints the usage and the examples", async () => {
    const { code, out } = await graded(["--help"])
    expect(code).toBe(0)
    expect(out).toContain("USAGE")
    expect(out).toContain("$ graded list --autonomous --page ticket")
  })

  it("list loads the module, compiled on the fly, and lists its tools", async () => {
    const { code, out } = await graded(["list", ...m, "--autonomous"])
    expect(code).toBe(0)
    expect(out).toContain("kb.search             read   offered")
  })

  it("invoke: a send shows its card and goes out once the answer piped into standard input approves it", async () => {
    const { code, out } = await gradedBuilt(["invoke", "chat.sendMessage", "{\"text\":\"Hi\"}", ...builtModule], "a\n")
    expect(code).toBe(0)
    expect(out).toContain("Approve, edit or reject? [a/e/r]")
    expect(JSON.parse(out.slice(out.indexOf("{\n  \"ok\"")))).toMatchObject({ ok: true, data: { sent: true } })
  })

  it("a reader that closes the pipe early (`graded audit file | head -1`) ends the command quietly, exit code 0", async () => {
    const file = path.join(mkdtempSync(path.join(tmpdir(), "graded-smoke-")), "audit.jsonl")
    const entry = (i: number) =>
      JSON.stringify({
        at: "2026-11-30T12:00:00.000Z",
        traceId: `t-${i}`,
        actor: "agent:bot",
        autonomous: true,
        type: "called",
        tool: "kb.search",
        input: {}
      })
    writeFileSync(file, `${Array.from({ length: 50_000 }, (_, i) => entry(i)).join("\n")}\n`)
    const child = spawn(process.execPath, [main, "audit", file], { cwd: desk })
    let err = ""
    child.stderr.on("data", (chunk: Buffer) => void (err += chunk.toString()))
    // The first lines read, the pipe is closed, as `head -1` does.
    child.stdout.once("data", () => child.stdout.destroy())
    const code = await new Promise<number | null>((resolve) => child.on("close", (exit) => resolve(exit)))
    expect(err).toBe("")
    expect(code).toBe(0)
  })

  it("a command line that does not parse: what is wrong, exit code 2", async () => {
    const { code, err, out } = await gradedBuilt(["list", ...builtModule, "--frob"])
    expect(code).toBe(2)
    expect(err).toContain("Unrecognized flag: --frob in command graded list")
    expect(out).toBe("")
  })
})
