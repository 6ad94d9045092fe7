import { execFile } from "node:child_process"
import { existsSync, mkdtempSync, readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { Effect } from "effect"
import { Proposal } from "@graded/core"
import { Sql } from "@graded/sql"
import { describe, expect, it } from "vitest"

const here = path.dirname(fileURLToPath(import.meta.url))
const bin = path.resolve(here, "../bin/graded.mjs")
const fixtures = path.resolve(here, "fixtures")

// Each call is its own process on one SQLite file: a proposal recorded by one
// is listed and decided by the next, as after a restart.
const store = () => {
  const dir = mkdtempSync(path.join(tmpdir(), "graded-proposals-"))
  const env = {
    ...process.env,
    GRADED_TEST_DB: path.join(dir, "graded.db"),
    GRADED_TEST_DELIVERED: path.join(dir, "delivered.jsonl")
  }
  const graded = (args: ReadonlyArray<string>, input = "", module = "proposals.config.ts") =>
    new Promise<{ out: string; err: string; code: number | null }>((resolve) => {
      const child = execFile(
        process.execPath,
        [bin, "-m", module, ...args],
        { cwd: fixtures, env, encoding: "utf8", timeout: 120_000 },
        (error, out, err) => {
          resolve({ out, err, code: error === null ? 0 : typeof error.code === "number" ? error.code : null })
        }
      )
      child.stdin?.end(input)
    })
  const delivered = (): Array<unknown> =>
    existsSync(env.GRADED_TEST_DELIVERED)
      ? readFileSync(env.GRADED_TEST_DELIVERED, "utf8").trim().split("\n").map((line) => JSON.parse(line))
      : []
  const propose = async (text: string) => {
    const { code, out } = await graded(["invoke", "chat.sendMessage.propose", JSON.stringify({ text })])
    expect(code).toBe(0)
    return JSON.parse(out).data.proposal as string
  }
  // The store as the app itself would read it, after the command has exited.
  const stored = (id: string) =>
    Effect.runPromise(Proposal.get(id).pipe(Effect.provide(Sql.sqlite({ filename: env.GRADED_TEST_DB }))))
  return { graded, delivered, propose, stored }
}

// Each test starts the command a few times; on a busy machine a start takes seconds.
describe("graded pending and decide", { timeout: 240_000 }, () => {
  it("pending lists what a proposal tool recorded in another process", async () => {
    const { graded, propose } = store()
    const id = await propose("Your refund is on its way")
    const { code, out } = await graded(["pending"])
    expect(code).toBe(0)
    expect(out).toContain(`${id}  chat.sendMessage (send)  Send a chat message`)
    expect(out).toMatch(/proposed \d{4}-\d\d-\d\dT[^ ]+ by cli:\S+, trace [0-9a-f-]{36}/)
    expect(out).toContain(`payload: {"to":"customer:42","text":"Your refund is on its way"}`)
    const json = await graded(["pending", "--json"])
    expect(json.code).toBe(0)
    const lines = json.out.trim().split("\n").map((line) => JSON.parse(line))
    expect(lines).toEqual([
      expect.objectContaining({
        id,
        tool: "chat.sendMessage",
        grade: "send",
        status: "pending",
        payload: { to: "customer:42", text: "Your refund is on its way" }
      })
    ])
  })

  it("decide approve shows the card, delivers once; a second decide says it was decided", async () => {
    const { delivered, graded, propose } = store()
    const id = await propose("Hello")
    const first = await graded(["decide", id, "approve"], "a\n")
    expect(first.code).toBe(0)
    expect(first.out).toContain("payload, exactly as it will go out:")
    expect(first.out).toContain(`"text": "Hello"`)
    expect(first.out).toMatch(new RegExp(`${id} delivered by cli:\\S+`))
    expect(delivered()).toEqual([expect.objectContaining({ payload: { to: "customer:42", text: "Hello" } })])
    const second = await graded(["decide", id, "approve"], "a\n")
    expect(second.code).toBe(1)
    expect(second.err).toMatch(new RegExp(`Proposal ${id} was already decided \\(delivered by cli:\\S+\\)`))
    expect(second.out).not.toContain("Approve, edit or reject?")
    expect(delivered()).toHaveLength(1)
    const pending = await graded(["pending"])
    expect(pending.out).toContain("No proposal is pending.")
  })

  it("decide reject records the reason and who rejected; reject needs a reason; unknown ids say so", async () => {
    const { delivered, graded, propose, stored } = store()
    const id = await propose("Wrong customer")
    const missing = await graded(["decide", id, "reject"])
    expect(missing.code).toBe(2)
    expect(missing.err).toContain("needs --reason")
    const rejected = await graded(["decide", id, "reject", "--reason", "wrong customer"])
    expect(rejected.code).toBe(0)
    expect(rejected.out).toMatch(new RegExp(`${id} rejected by cli:\\S+: wrong customer`))
    const record = await stored(id)
    expect(record.status).toBe("rejected")
    expect(record.decision).toMatchObject({ reason: "wrong customer", edited: false })
    expect(record.decision?.by).toMatch(/^cli:/)
    const json = await graded(["pending", "--json"])
    expect(json.out.trim()).toBe("")
    const again = await graded(["decide", id, "approve"], "a\n")
    expect(again.code).toBe(1)
    expect(again.err).toMatch(/already decided \(rejected by cli:\S+\)/)
    const unknown = await graded(["decide", "p-404", "reject", "--reason", "no"])
    expect(unknown.code).toBe(1)
    expect(unknown.err).toContain("There is no proposal p-404")
    expect(delivered()).toEqual([])
  })

  it("pending shows ANSI and bidirectional characters in a payload as escapes", async () => {
    const { graded, propose } = store()
    await propose("ok\u001b[2K\rDELIVERED \u202Eevil")
    const { code, out } = await graded(["pending"])
    expect(code).toBe(0)
    for (const hidden of ["\u001b", "\r", "\u202e"]) expect(out).not.toContain(hidden)
    expect(out).toContain(String.raw`ok\u001b[2K\rDELIVERED \u202Eevil`)
  })

  it("a module whose layer provides no ProposalStore: said, exit code 2", async () => {
    const { graded } = store()
    const pending = await graded(["pending"], "", "nostore.config.ts")
    expect(pending.code).toBe(2)
    expect(pending.err).toContain("nostore.config.ts provides no ProposalStore")
    const decide = await graded(["decide", "p-1", "reject", "--reason", "x"], "", "nostore.config.ts")
    expect(decide.code).toBe(2)
  })
})
