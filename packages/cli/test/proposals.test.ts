// `graded pending` and `graded decide` on one SQLite file, the command line run
// in this process (inProcess.ts), each run with a connection of its own: a
// proposal recorded by one is listed and decided by the next, as after a
// restart. A delivery whose process dies is a real process, killed.
import { execFile } from "node:child_process"
import { existsSync, mkdtempSync, readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import * as path from "node:path"
import { DatabaseSync } from "node:sqlite"
import { fileURLToPath } from "node:url"
import { Effect } from "effect"
import { TestClock } from "effect/testing"
import { Proposal, Runs, ScriptedModel } from "@graded/core"
import { Sql, SqlAudit } from "@graded/sql"
import { describe, expect, it } from "vitest"
import { built } from "../../../test/built.js"
import { toolkit } from "./fixtures/proposals.config.js"
import { graded as run, useEnv } from "./inProcess.js"

const here = path.dirname(fileURLToPath(import.meta.url))
const fixtures = path.resolve(here, "fixtures")

const store = () => {
  const dir = mkdtempSync(path.join(tmpdir(), "graded-proposals-"))
  const env = {
    GRADED_TEST_DB: path.join(dir, "graded.db"),
    GRADED_TEST_DELIVERED: path.join(dir, "delivered.jsonl")
  }
  // fixtures/proposals.config.ts reads them as each command runs: this test's files, until it ends.
  useEnv(env)
  const graded = (args: ReadonlyArray<string>, input = "", module = "proposals.config.ts") =>
    run(["-m", module, ...args], { cwd: fixtures, input })
  // `decide approve` in a process of its own (the built command), killed
  // (SIGKILL, no cleanup) once the delivery went out, before it is settled.
  const approveAndDie = (id: string) =>
    new Promise<string | null>((resolve) => {
      const child = execFile(
        process.execPath,
        [
          built("packages/cli/src/main.ts"),
          "-m",
          built("packages/cli/test/fixtures/proposals.config.ts"),
          "decide",
          id,
          "approve"
        ],
        { cwd: fixtures, env: { ...process.env, ...env, GRADED_TEST_CRASH: "1" }, timeout: 120_000 },
        (error) => resolve(error?.signal ?? null)
      )
      child.stdin?.end("a\n")
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
  const sqlite = Sql.sqlite({ filename: env.GRADED_TEST_DB })
  // A delivery whose process died inside `deliver`, after the message went
  // out: `decide approve` in a process killed there (SIGKILL, no cleanup),
  // then, once its lease has passed (16 minutes later on the clock),
  // `Proposal.recover` from another process marks it in doubt.
  const crashWhileDelivering = async (id: string) => {
    expect(await approveAndDie(id)).toBe("SIGKILL")
    expect((await stored(id)).status).toBe("delivering")
    const moved = await Effect.runPromise(
      Effect.gen(function*() {
        yield* TestClock.setTime(Date.now() + 16 * 60_000)
        return yield* Proposal.recover
      }).pipe(Effect.provide(sqlite), Effect.provide(TestClock.layer()))
    )
    expect(moved.map((p) => [p.id, p.status])).toEqual([[id, "in-doubt"]])
  }
  // The same crash, then its lease set in the past, as 16 minutes later: the
  // row is what the dead process left once its lease has passed, and no
  // process has recovered it yet.
  // Set with a client of the test's own: Sql.sqlite keeps its connection.
  const crashedLeasePassed = async (id: string) => {
    expect(await approveAndDie(id)).toBe("SIGKILL")
    const db = new DatabaseSync(env.GRADED_TEST_DB)
    try {
      db.prepare(
        `UPDATE graded_proposals SET lease_until = '2000-01-01T00:00:00.000Z' WHERE seq = ? AND status = 'delivering'`
      ).run(Number(id.slice(2)))
    } finally {
      db.close()
    }
    expect((await stored(id)).status).toBe("delivering")
  }
  const audited = () => Effect.runPromise(SqlAudit.entries().pipe(Effect.provide(sqlite)))
  return { graded, delivered, propose, stored, crashWhileDelivering, crashedLeasePassed, audited, sqlite }
}

// A test that kills a process starts the built command: under a second of CPU, longer on a busy machine.
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
    expect(second.err).toMatch(new RegExp(`Proposal ${id} was already decided \\(delivered by cli:\\S+ at \\S+\\)`))
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
    expect(again.err).toMatch(/already decided \(rejected by cli:\S+ at \S+\)/)
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

  it(
    "decide edit opens the card at the edit question; the edit is validated again; an invalid one delivers nothing and says why",
    async () => {
      const { delivered, graded, propose, stored } = store()
      const id = await propose("Helo")
      const invalid = await graded(["decide", id, "edit"], `{"to":"customer:42"}\n`)
      expect(invalid.code).toBe(1)
      expect(invalid.out).toContain(`"text": "Helo"`)
      expect(invalid.out).toContain("New payload as one line of JSON (empty to go back):")
      expect(invalid.out).not.toContain("Approve, edit or reject?")
      expect(invalid.err).toMatch(
        /The edit by cli:\S+ to chat\.sendMessage is invalid, nothing was delivered: [\s\S]*text/
      )
      expect(delivered()).toEqual([])
      expect((await stored(id)).status).toBe("pending")
      // Not JSON: asked again; then a valid edit is delivered, once, as edited.
      const edited = await graded(["decide", id, "edit"], `{oops\n{"to":"customer:42","text":"Hello, corrected"}\n`)
      expect(edited.code).toBe(0)
      expect(edited.out).toContain("That is not JSON.")
      expect(edited.out).toMatch(new RegExp(`${id} delivered by cli:\\S+ \\(edited\\)`))
      expect(delivered()).toEqual([
        expect.objectContaining({ payload: { to: "customer:42", text: "Hello, corrected" } })
      ])
      expect(await stored(id)).toMatchObject({ status: "delivered", decision: { edited: true } })
      const twice = await graded(["decide", id, "edit"], `{"to":"customer:42","text":"again"}\n`)
      expect(twice.code).toBe(1)
      expect(twice.err).toMatch(/already decided \(delivered by cli:\S+ at \S+\)/)
      expect(delivered()).toHaveLength(1)
      // An empty line goes back to the usual question, where `a` approves as stored.
      const other = await propose("As it is")
      const back = await graded(["decide", other, "edit"], "\na\n")
      expect(back.code).toBe(0)
      expect(back.out).toContain("Approve, edit or reject? [a/e/r]")
      expect(delivered()[1]).toMatchObject({ payload: { text: "As it is" } })
    }
  )

  it(
    "an in-doubt delivery: pending shows it apart with its key; retry delivers again with the same key; then it is decided",
    async () => {
      const { crashWhileDelivering, delivered, graded, propose, stored } = store()
      const waiting = await propose("Still waiting")
      const id = await propose("Your refund is on its way")
      await crashWhileDelivering(id)
      const first = delivered()
      expect(first).toHaveLength(1)
      const key = (first[0] as { idempotencyKey: string }).idempotencyKey
      expect(key).toMatch(/^[0-9a-f-]{36}$/)

      const listed = await graded(["pending"])
      expect(listed.code).toBe(0)
      const [before, after] = listed.out.split("In doubt:")
      expect(before).toContain(`${waiting}  chat.sendMessage (send)  Send a chat message\n`)
      expect(before).not.toContain(id)
      expect(after).toContain("decide <id> done")
      expect(after).toContain(`${id}  chat.sendMessage (send)  Send a chat message  [in-doubt]`)
      expect(after).toMatch(
        new RegExp(
          `delivery key ${key}: its delivery, approved by cli:\\S+, stopped before it settled .*it may have gone out`
        )
      )
      const json = (await graded(["pending", "--json"])).out.trim().split("\n").map((line) => JSON.parse(line))
      expect(json.map((p) => [p.id, p.status, p.deliveryKey])).toEqual([
        [waiting, "pending", undefined],
        [id, "in-doubt", key]
      ])

      // Not approved again as if nothing had happened.
      const approve = await graded(["decide", id, "approve"], "a\n")
      expect(approve.code).toBe(1)
      expect(approve.err).toMatch(new RegExp(`Proposal ${id} was already decided \\(in-doubt by cli:\\S+ at \\S+\\)`))
      expect(delivered()).toHaveLength(1)

      const retried = await graded(["decide", id, "retry"], "a\n")
      expect(retried.code).toBe(0)
      expect(retried.out).toContain(`"text": "Your refund is on its way"`)
      expect(retried.out).toMatch(new RegExp(`${id} delivered by cli:\\S+`))
      expect(delivered()).toHaveLength(2)
      expect(delivered()[1]).toMatchObject({ idempotencyKey: key, payload: { text: "Your refund is on its way" } })
      expect(await stored(id)).toMatchObject({ status: "delivered", deliveryKey: key })

      const decided = await Promise.all(["retry", "done"].map((decision) => graded(["decide", id, decision], "a\n")))
      for (const [i, decision] of ["retry", "done"].entries()) {
        const again = decided[i]!
        expect(again.code, decision).toBe(1)
        expect(again.err, decision).toMatch(
          new RegExp(`Proposal ${id} is delivered, not in doubt \\(decided by cli:\\S+\\)`)
        )
      }
      const early = await Promise.all(["retry", "done"].map((decision) => graded(["decide", waiting, decision], "a\n")))
      for (const [i, decision] of ["retry", "done"].entries()) {
        expect(early[i]!.code, decision).toBe(1)
        expect(early[i]!.err, decision).toContain(`Proposal ${waiting} is pending, not in doubt: nothing was delivered`)
      }
      const retryWithReason = await graded(["decide", waiting, "retry", "--reason", "x"])
      expect(retryWithReason.code).toBe(2)
      expect(delivered()).toHaveLength(2)
    }
  )

  it(
    "pending recovers first: a delivery whose process died is listed in doubt, an expired proposal is not offered, each audited",
    async () => {
      const { audited, crashedLeasePassed, graded, propose, sqlite, stored } = store()
      const id = await propose("Your refund is on its way")
      await crashedLeasePassed(id)
      // A run's proposal that nobody decided within a millisecond.
      const late = await Effect.runPromise(
        Runs.start({ toolkit, prompt: "Tell the customer.", runId: "run-late", decisionTimeout: "1 millis" }).pipe(
          Effect.provide(
            ScriptedModel.layer([ScriptedModel.calls(ScriptedModel.call("chat.sendMessage", { text: "Too late" }))])
          ),
          Effect.provide(sqlite)
        )
      )
      const expiring = late.status === "waiting" ? late.pending[0]!.id : ""
      await new Promise((resolve) => setTimeout(resolve, 5))

      const listed = await graded(["pending"])
      expect(listed.code).toBe(0)
      const [before, after] = listed.out.split("In doubt:")
      expect(before!.trim()).toBe("No proposal is pending.")
      expect(after).toContain(`${id}  chat.sendMessage (send)  Send a chat message  [in-doubt]`)
      expect(await stored(id)).toMatchObject({ status: "in-doubt" })
      expect(await stored(expiring)).toMatchObject({ status: "expired" })
      // Audited as Proposal.recover audits, in the module's sink.
      const entries = await audited()
      expect(entries).toContainEqual(expect.objectContaining({ type: "in-doubt", action: "surfaced", proposal: id }))
      expect(entries).toContainEqual(expect.objectContaining({ type: "refused", gate: "expiry" }))
    }
  )

  it("decide done marks an in-doubt delivery delivered, with who and the note; a second done is refused", async () => {
    const { crashWhileDelivering, delivered, graded, propose, stored } = store()
    const id = await propose("Went out before the crash")
    await crashWhileDelivering(id)
    const done = await graded(["decide", id, "done", "--reason", "the customer has it"])
    expect(done.code).toBe(0)
    expect(done.out).toMatch(new RegExp(`^${id} marked delivered by cli:\\S+: the customer has it$`, "m"))
    const record = await stored(id)
    expect(record.status).toBe("delivered")
    expect(record.decision).toMatchObject({ reason: "the customer has it" })
    expect(record.decision?.by).toMatch(/^cli:/)
    const again = await graded(["decide", id, "done"])
    expect(again.code).toBe(1)
    expect(again.err).toMatch(/is delivered, not in doubt \(decided by cli:\S+\)/)
    expect(delivered()).toHaveLength(1)
    const pending = await graded(["pending"])
    expect(pending.out.trim()).toBe("No proposal is pending.")
  })

  it(
    "forged ids: an id with control characters, or shaped like SQL, is an unknown proposal, shown escaped",
    async () => {
      const { delivered, graded, propose, stored } = store()
      const id = await propose("Keep me")
      const decisions = ["approve", "edit", "done", "retry"]
      const attempts = await Promise.all(
        decisions.map((decision) => graded(["decide", `${id}\u001b[2K\rDELIVERED`, decision], "a\n"))
      )
      for (const [i, decision] of decisions.entries()) {
        const forged = attempts[i]!
        expect(forged.code, decision).toBe(1)
        expect(forged.err, decision).toContain(String.raw`There is no proposal ${id}\u001B[2K\u000DDELIVERED`)
        expect(forged.err + forged.out, decision).not.toContain("\u001b")
      }
      const sql = await graded(["decide", `${id}' OR '1'='1`, "reject", "--reason", "x"])
      expect(sql.code).toBe(1)
      expect(sql.err).toContain("There is no proposal")
      expect((await stored(id)).status).toBe("pending")
      expect(delivered()).toEqual([])
    }
  )
})

describe("graded runs beside the app, on the SQLite file the app shares", { timeout: 240_000 }, () => {
  it("the app's waiting run is listed by another process, decided there, and finishes when the app resumes it", async () => {
    const { delivered, graded, sqlite } = store()
    // The app: starts a run on the shared file; its send waits as a proposal.
    const started = await Effect.runPromise(
      Runs.start({ toolkit, prompt: "Tell the customer.", runId: "run-shell-1", context: { actor: "agent:bot" } }).pipe(
        Effect.provide(
          ScriptedModel.layer([ScriptedModel.calls(ScriptedModel.call("chat.sendMessage", { text: "On its way" }))])
        ),
        Effect.provide(sqlite)
      )
    )
    expect(started.status).toBe("waiting")
    const id = started.status === "waiting" ? started.pending[0]!.id : ""
    // The command, through a connection of its own: `graded runs` reads the same file.
    const listed = await graded(["runs"])
    expect(listed.code).toBe(0)
    expect(listed.out).toContain("run-shell-1")
    expect(listed.out).toContain("waiting")
    expect(listed.out).toContain(id)
    // Then the person at the keyboard approves the run's proposal.
    const approved = await graded(["decide", id, "approve"], "a\n")
    expect(approved.code).toBe(0)
    expect(delivered()).toMatchObject([{ payload: { to: "customer:42", text: "On its way" } }])
    // The app resumes: the model is told, and the run finishes; nothing is sent again.
    const resumed = await Effect.runPromise(
      Runs.resume("run-shell-1", { toolkit }).pipe(
        Effect.provide(ScriptedModel.layer([ScriptedModel.text("Told them.")])),
        Effect.provide(sqlite)
      )
    )
    expect(resumed).toMatchObject({ status: "finished", result: { answer: "Told them." } })
    const after = await graded(["runs", "--json"])
    expect(after.code).toBe(0)
    expect(JSON.parse(after.out.trim())).toMatchObject({ id: "run-shell-1", status: "finished" })
    expect(delivered()).toHaveLength(1)
  })

  it("runs recovers first: a run waiting on a delivery whose process died shows it in doubt", async () => {
    const { crashedLeasePassed, graded, sqlite } = store()
    const started = await Effect.runPromise(
      Runs.start({ toolkit, prompt: "Tell the customer.", runId: "run-crashed" }).pipe(
        Effect.provide(
          ScriptedModel.layer([ScriptedModel.calls(ScriptedModel.call("chat.sendMessage", { text: "On its way" }))])
        ),
        Effect.provide(sqlite)
      )
    )
    const id = started.status === "waiting" ? started.pending[0]!.id : ""
    await crashedLeasePassed(id)
    const listed = await graded(["runs"])
    expect(listed.code).toBe(0)
    expect(listed.out).toContain(`waits on ${id}  chat.sendMessage (send)  in-doubt`)
  })
})
