// The terminal confirmation, for real: `graded` runs in a pseudo-terminal
// (tmux), and the test reads the screen and types the answers a person would.
import { execFileSync } from "node:child_process"
import { mkdtempSync, readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, describe, expect, it } from "vitest"

const here = path.dirname(fileURLToPath(import.meta.url))
const bin = path.resolve(here, "../bin/graded.mjs")
const desk = path.resolve(here, "../../../examples/support-desk")
const socket = `graded-test-${process.pid}`
const dir = mkdtempSync(path.join(tmpdir(), "graded-cli-"))

const tmux = (...args: Array<string>) => execFileSync("tmux", ["-L", socket, ...args], { encoding: "utf8" })
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const quote = (s: string) => `'${s.replaceAll("'", "'\\''")}'`

let sessions = 0

const start = (args: ReadonlyArray<string>) => {
  const name = `s${++sessions}`
  const command = `cd ${quote(desk)} && node ${quote(bin)} ${args.map(quote).join(" ")}; echo EXIT=$?; sleep 60`
  tmux("new-session", "-d", "-s", name, "-x", "200", "-y", "60", command)
  const screen = () => tmux("capture-pane", "-p", "-J", "-t", name, "-S", "-300")
  return {
    screen,
    waitFor: async (text: string) => {
      for (let i = 0; i < 600; i++) {
        const now = screen()
        if (now.includes(text)) return now
        await sleep(50)
      }
      throw new Error(`"${text}" never appeared. The screen:\n${screen()}`)
    },
    type: (text: string) => {
      tmux("send-keys", "-t", name, "-l", text)
      tmux("send-keys", "-t", name, "Enter")
    }
  }
}

const auditOf = (file: string) => readFileSync(file, "utf8").trim().split("\n").map((line) => JSON.parse(line))

afterAll(() => {
  try {
    tmux("kill-server")
  } catch {
    // already gone
  }
})

describe("graded invoke in a terminal", () => {
  it("is in a real pseudo-terminal (tmux is installed by .ci/run)", () => {
    expect(execFileSync("tmux", ["-V"], { encoding: "utf8" })).toMatch(/^tmux /)
  })

  it("shows the exact payload and sends once the person approves", async () => {
    const audit = path.join(dir, "approve.jsonl")
    const cli = start(["invoke", "chat.sendMessage", "{\"text\":\"Hello Mei\"}", "-m", "src/graded.config.ts", "--audit", audit])
    const card = await cli.waitFor("Approve, edit or reject? [a/e/r]")
    expect(card).toContain("SEND: Send a chat message (chat.sendMessage)")
    expect(card).toContain("\"to\": \"c-42\"")
    expect(card).toContain("\"text\": \"Hello Mei\"")
    // Nothing is sent while the question is open.
    expect(auditOf(audit).map((e) => e.type)).toEqual(["called", "confirm-requested"])
    cli.type("a")
    const done = await cli.waitFor("EXIT=")
    expect(done).toContain("\"sent\": true")
    expect(done).toContain("EXIT=0")
    expect(auditOf(audit).map((e) => e.type)).toEqual(["called", "confirm-requested", "decided", "delivered", "completed"])
  }, 60_000)

  it("takes an edit, validates it again, and sends the edit", async () => {
    const audit = path.join(dir, "edit.jsonl")
    const cli = start(["invoke", "chat.sendMessage", "{\"text\":\"Helo\"}", "-m", "src/graded.config.ts", "--audit", audit])
    await cli.waitFor("Approve, edit or reject? [a/e/r]")
    cli.type("e")
    await cli.waitFor("New payload as one line of JSON")
    cli.type("{\"to\":\"c-42\",\"text\":\"Hello, corrected\"}")
    const done = await cli.waitFor("EXIT=")
    expect(done).toContain("EXIT=0")
    const entries = auditOf(audit)
    expect(entries.find((e) => e.type === "decided")).toMatchObject({ decision: "approved", edited: true })
    expect(entries.filter((e) => e.type === "delivered")).toHaveLength(1)
  }, 60_000)

  it("an invalid edit sends nothing and says what was wrong", async () => {
    const audit = path.join(dir, "invalid.jsonl")
    const cli = start(["invoke", "chat.sendMessage", "{\"text\":\"Hi\"}", "-m", "src/graded.config.ts", "--audit", audit])
    await cli.waitFor("Approve, edit or reject? [a/e/r]")
    cli.type("e")
    await cli.waitFor("New payload as one line of JSON")
    cli.type("{\"to\":\"c-42\",\"text\":\"   \"}")
    const done = await cli.waitFor("EXIT=")
    expect(done).toContain("EXIT=1")
    expect(done).toContain("is invalid, nothing was delivered")
    expect(auditOf(audit).filter((e) => e.type === "delivered")).toEqual([])
  }, 60_000)

  it("rejects with the reason typed, and sends nothing", async () => {
    const audit = path.join(dir, "reject.jsonl")
    const cli = start(["invoke", "chat.sendMessage", "{\"text\":\"Hi\"}", "-m", "src/graded.config.ts", "--audit", audit])
    await cli.waitFor("Approve, edit or reject? [a/e/r]")
    cli.type("r")
    await cli.waitFor("Reason:")
    cli.type("not today")
    const done = await cli.waitFor("EXIT=")
    expect(done).toContain("EXIT=1")
    expect(done).toContain("rejected by cli:")
    expect(done).toContain("not today")
    expect(auditOf(audit).filter((e) => e.type === "delivered")).toEqual([])
  }, 60_000)
})
