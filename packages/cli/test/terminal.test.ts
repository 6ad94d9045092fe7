// The terminal confirmation, for real: `graded` runs in a pseudo-terminal
// (@lydell/node-pty), and the test reads the screen (@xterm/headless) and
// types the answers a person would.
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, describe, expect, it } from "vitest"
import { built } from "../../../test/built.js"
import { killAll, spawn } from "./pty.js"

const here = path.dirname(fileURLToPath(import.meta.url))
// The built command and module: plain node runs them, with no compile at each start.
const bin = built("packages/cli/src/main.ts")
const config = built("examples/support-desk/src/graded.config.ts")
const desk = path.resolve(here, "../../../examples/support-desk")
const dir = mkdtempSync(path.join(tmpdir(), "graded-cli-"))

const graded = (...args: Array<string>) => spawn(process.execPath, [bin, ...args], { cwd: desk })

const auditOf = (file: string) => readFileSync(file, "utf8").trim().split("\n").map((line) => JSON.parse(line))

afterAll(() => {
  killAll()
  rmSync(dir, { recursive: true, force: true })
})

describe("graded invoke in a terminal", () => {
  it("runs in a real pseudo-terminal: the program sees a TTY, and the screen shows what it drew", async () => {
    const probe = spawn(process.execPath, [
      "-e",
      "process.stdout.write(`tty ${process.stdin.isTTY} ${process.stdout.isTTY} ${process.stdout.columns}x${process.stdout.rows}\\nxxxxx\\rab\\n`)"
    ], { cwd: desk, cols: 120, rows: 40 })
    const { code, screen } = await probe.exited
    expect(code).toBe(0)
    expect(screen).toContain("tty true true 120x40")
    // A carriage return moves the cursor, so a person sees "abxxx", not "xxxxxab".
    expect(screen).toContain("abxxx")
  }, 120_000)

  it("shows the exact payload and sends once the person approves", async () => {
    const audit = path.join(dir, "approve.jsonl")
    const cli = graded(
      "invoke",
      "chat.sendMessage",
      "{\"text\":\"Hello Mei\"}",
      "-m",
      config,
      "--audit",
      audit
    )
    const card = await cli.waitFor("Approve, edit or reject? [a/e/r]")
    expect(card).toContain("SEND: Send a chat message (chat.sendMessage)")
    expect(card).toContain("\"to\": \"c-42\"")
    expect(card).toContain("\"text\": \"Hello Mei\"")
    // Nothing is sent while the question is open.
    expect(auditOf(audit).map((e) => e.type)).toEqual(["called", "confirm-requested"])
    cli.type("a")
    const done = await cli.exited
    expect(done.screen).toContain("\"sent\": true")
    expect(done.code).toBe(0)
    expect(auditOf(audit).map((e) => e.type)).toEqual([
      "called",
      "confirm-requested",
      "decided",
      "delivered",
      "completed"
    ])
  }, 120_000)

  it("takes an edit, validates it again, and sends the edit", async () => {
    const audit = path.join(dir, "edit.jsonl")
    const cli = graded(
      "invoke",
      "chat.sendMessage",
      "{\"text\":\"Helo\"}",
      "-m",
      config,
      "--audit",
      audit
    )
    await cli.waitFor("Approve, edit or reject? [a/e/r]")
    cli.type("e")
    await cli.waitFor("New payload as one line of JSON")
    cli.type("{\"to\":\"c-42\",\"text\":\"Hello, corrected\"}")
    const done = await cli.exited
    expect(done.code).toBe(0)
    const entries = auditOf(audit)
    expect(entries.find((e) => e.type === "decided")).toMatchObject({ decision: "approved", edited: true })
    expect(entries.filter((e) => e.type === "delivered")).toHaveLength(1)
  }, 120_000)

  it("an invalid edit sends nothing and says what was wrong", async () => {
    const audit = path.join(dir, "invalid.jsonl")
    const cli = graded(
      "invoke",
      "chat.sendMessage",
      "{\"text\":\"Hi\"}",
      "-m",
      config,
      "--audit",
      audit
    )
    await cli.waitFor("Approve, edit or reject? [a/e/r]")
    cli.type("e")
    await cli.waitFor("New payload as one line of JSON")
    cli.type("{\"to\":\"c-42\",\"text\":\"   \"}")
    const done = await cli.exited
    expect(done.code).toBe(1)
    expect(done.screen).toContain("is invalid, nothing was delivered")
    expect(auditOf(audit).filter((e) => e.type === "delivered")).toEqual([])
  }, 120_000)

  it("rejects with the reason typed, and sends nothing", async () => {
    const audit = path.join(dir, "reject.jsonl")
    const cli = graded(
      "invoke",
      "chat.sendMessage",
      "{\"text\":\"Hi\"}",
      "-m",
      config,
      "--audit",
      audit
    )
    await cli.waitFor("Approve, edit or reject? [a/e/r]")
    cli.type("r")
    await cli.waitFor("Reason:")
    cli.type("not today")
    const done = await cli.exited
    expect(done.code).toBe(1)
    expect(done.screen).toContain("rejected by cli:")
    expect(done.screen).toContain("not today")
    expect(auditOf(audit).filter((e) => e.type === "delivered")).toEqual([])
  }, 120_000)
})
