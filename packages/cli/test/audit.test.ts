// `graded audit` on a database: a SQLite file that SqlAudit wrote (through
// Sql.sqlite, as an app does), read by the command (run in this process,
// inProcess.ts) through a connection of its own, whole or through one of
// SqlAudit's three queries; and what it says when it cannot.
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { Effect } from "effect"
import { Audit, HumanConfirm, Invocation, Registry } from "@graded/core"
import { Sql } from "@graded/sql"
import { describe, expect, it } from "vitest"
import { makeDesk } from "../../core/test/supportDesk.js"
import { graded as run } from "./inProcess.js"

const here = path.dirname(fileURLToPath(import.meta.url))

const graded = (...args: Array<string>) => run(["audit", ...args], { cwd: here })

// What an app leaves in its database: Alice approves a message (edited) on run
// t-1, Bob rejects one; a model is refused a write on t-2; and an entry whose
// fields try to forge lines of their own.
const written = async () => {
  const filename = path.join(mkdtempSync(path.join(tmpdir(), "graded-audit-")), "graded.db")
  const registry = Registry.make(makeDesk().support)
  const human = (traceId: string, decision: HumanConfirm.Decision) => <A, E, R>(effect: Effect.Effect<A, E, R>) =>
    effect.pipe(
      Invocation.within({ traceId, actor: "cli:carol", autonomous: false }),
      Effect.provide(HumanConfirm.layer(HumanConfirm.scripted([decision])))
    )
  await Effect.runPromise(
    Effect.gen(function*() {
      yield* registry.invoke("chat.sendMessage", { text: "Helo" }).pipe(
        human("t-1", HumanConfirm.approve("cli:alice", { to: "customer:42", text: "Hello" }))
      )
      yield* registry.invoke("chat.sendMessage", { text: "No" }).pipe(
        human("t-1", HumanConfirm.reject("cli:bob", "tone"))
      )
      yield* registry.invoke("ticket.submit", { subject: "s" }, { autonomous: true, traceId: "t-2" }).pipe(
        Effect.provide(HumanConfirm.layer(HumanConfirm.scripted([])))
      )
      yield* Audit.record({
        type: "refused",
        tool: "x\nDELIVERED fake",
        gate: "autonomous",
        reason: "\u001b[2Kerased\u202Eevil"
      }).pipe(Invocation.within({ traceId: "t-3\rX", actor: "agent:m", autonomous: true }))
    }).pipe(Effect.provide(Sql.sqlite({ filename })))
  )
  return filename
}

describe("graded audit on SQL", () => {
  it("reads what SqlAudit wrote, whole or by run, gate and person who confirmed; every field escaped", async () => {
    const db = await written()
    const [all, run, gate, alice, bob] = await Promise.all([
      graded("--sqlite", db),
      graded("--sqlite", db, "--trace", "t-1"),
      graded("--sqlite", db, "--gate", "autonomous"),
      graded("--sqlite", db, "--actor", "cli:alice"),
      graded("--actor", "cli:bob", "--sqlite", db)
    ])
    for (const result of [all, run, gate, alice, bob]) expect(result, result.err).toMatchObject({ code: 0, err: "" })
    const lines = (out: string) => out.trimEnd().split("\n").map((line) => line.split("  ").slice(1).join("  "))
    expect(lines(run.out)).toEqual([
      "t-1  human cli:carol  asks a human to confirm chat.sendMessage (send) with {\"to\":\"customer:42\",\"text\":\"Helo\"}",
      "t-1  human cli:carol  cli:alice approved chat.sendMessage (edited)",
      "t-1  human cli:carol  DELIVERED chat.sendMessage, confirmed by cli:alice",
      "t-1  human cli:carol  asks a human to confirm chat.sendMessage (send) with {\"to\":\"customer:42\",\"text\":\"No\"}",
      "t-1  human cli:carol  cli:bob rejected chat.sendMessage: tone"
    ])
    expect(lines(gate.out)).toEqual([
      "t-2  agent -  REFUSED ticket.submit at the autonomous gate: ticket.submit is a write tool: a model may not run it on its own; a human must confirm it",
      "t-3\\u000DX  agent agent:m  REFUSED x\\nDELIVERED fake at the autonomous gate: \\u001B[2Kerased\\u202Eevil"
    ])
    expect(lines(alice.out)).toEqual([
      "t-1  human cli:carol  cli:alice approved chat.sendMessage (edited)",
      "t-1  human cli:carol  DELIVERED chat.sendMessage, confirmed by cli:alice"
    ])
    // A rejection is not a confirmation.
    expect(bob.out).toBe("")
    expect(all.out.trimEnd().split("\n").length).toBeGreaterThan(run.out.trimEnd().split("\n").length + 2)
    // One entry is one line, whatever its fields hold.
    expect(all.out.split("\n").filter((line) => line.startsWith("DELIVERED"))).toEqual([])
    // eslint-disable-next-line no-control-regex -- the characters that must never reach the terminal
    expect(all.out).not.toMatch(/[\u001b\r\u202E]/)
  })

  it("says what it cannot read, with exit code 1 and no stack trace; a command line it cannot use, with 2", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "graded-audit-"))
    const text = path.join(dir, "notes.txt")
    writeFileSync(text, "not a database\n".repeat(100))
    const missing = path.join(dir, "missing.db")
    const db = await written()
    const [noFile, notSqlite, badUrl, refused, both, none, jsonlFilter, twoFilters] = await Promise.all([
      graded("--sqlite", missing),
      graded("--sqlite", text),
      graded("--postgres", "mysql://root:hunter2@localhost/db"),
      graded("--postgres", "postgres://graded:hunter2@127.0.0.1:1/graded"),
      graded("audit.jsonl", "--sqlite", db),
      graded(),
      graded(path.join(dir, "audit.jsonl"), "--gate", "autonomous"),
      graded("--sqlite", db, "--gate", "autonomous", "--actor", "cli:alice")
    ])
    expect(noFile).toMatchObject({
      code: 1,
      out: "",
      err: `Cannot read the audit in ${missing}: there is no such file\n`
    })
    expect(notSqlite.code).toBe(1)
    expect(notSqlite.err).toMatch(/^Cannot read the audit in .*notes\.txt: it cannot be read as a database: /)
    expect(badUrl).toMatchObject({
      code: 1,
      err:
        "Cannot read the audit in mysql://root:***@localhost/db: not a PostgreSQL URL (postgres://user:password@host:port/database)\n"
    })
    expect(refused.code).toBe(1)
    expect(refused.err).toMatch(
      /^Cannot read the audit in postgres:\/\/graded:\*\*\*@127\.0\.0\.1:1\/graded: cannot connect: /
    )
    for (const result of [noFile, notSqlite, badUrl, refused]) {
      expect(result.err).not.toContain("hunter2")
      expect(result.err).not.toMatch(/\n\s+at /)
      expect(result.err.trimEnd().split("\n")).toHaveLength(1)
    }
    expect(both).toMatchObject({ code: 2, err: expect.stringContaining("audit reads one audit") })
    expect(none).toMatchObject({ code: 2, err: expect.stringContaining("audit reads one audit") })
    expect(jsonlFilter).toMatchObject({ code: 2, err: expect.stringContaining("query a database") })
    expect(twoFilters).toMatchObject({ code: 2, err: expect.stringContaining("one question each") })
  })
})
