// `graded runs`, `resume` and `cancel`, run in this process through the real
// command line (inProcess.ts), against one RunStore.memory and ProposalStore.memory
// that the fixture module builds once: @graded/sql has no run store on this
// commit, so a run cannot yet be shared between processes. The human's
// decisions are made as an app makes them, with `Proposal.approve` under a
// HumanConfirm.
import { Effect } from "effect"
import { HumanConfirm, Invocation, Proposal, Runs, RunStore } from "@graded/core"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"
import { delivered, layer, toolkit } from "./fixtures/runs.config.js"
import { graded as cli } from "./inProcess.js"

const fixtures = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "fixtures")

// One command line, as `graded -m <module> ...args` would run it; what it
// printed (without the last line break) and its exit code.
const graded = async (args: ReadonlyArray<string>, module = "runs.config.ts", by = "cli:alice") => {
  const ran = await cli(["-m", module, ...args], { cwd: fixtures, by })
  return { ...ran, out: ran.out.replace(/\n$/, ""), err: ran.err.replace(/\n$/, "") }
}

const start = (runId: string, prompt: string) =>
  Effect.runPromise(
    Runs.start({ toolkit, prompt, runId, context: { actor: "agent:desk", traceId: `trace-${runId}` } }).pipe(
      Effect.provide(layer)
    )
  )

// Alice decides on the app's page: approve (with an edit) or reject.
const approve = (id: string, edit?: unknown) =>
  Effect.runPromise(
    Proposal.approve(toolkit, id).pipe(
      Invocation.within({ actor: "web:alice" }),
      Effect.provide(HumanConfirm.layer(HumanConfirm.scripted([HumanConfirm.approve("web:alice", edit)]))),
      Effect.provide(layer)
    )
  )

describe("graded runs, resume and cancel", { timeout: 60_000 }, () => {
  it("runs lists each run with its status, actor, trace, round and what a waiting run waits on", async () => {
    const waiting = await start("run-list-1", "Your refund is on its way")
    expect(waiting.status).toBe("waiting")
    const proposal = waiting.status === "waiting" ? waiting.pending[0]!.id : ""
    const listed = await graded(["runs", "--status", "waiting"])
    expect(listed.code).toBe(0)
    expect(listed.out).toContain("run-list-1  waiting  by agent:desk, trace trace-run-list-1, round 1")
    expect(listed.out).toContain(`  waits on ${proposal}  chat.sendMessage (send)  pending`)
    const json = await graded(["runs", "--json", "--status", "waiting"])
    const lines = json.out.trim().split("\n").map((line) => JSON.parse(line))
    expect(lines).toContainEqual(expect.objectContaining({
      id: "run-list-1",
      status: "waiting",
      actor: "agent:desk",
      traceId: "trace-run-list-1",
      round: 1,
      open: [{ id: proposal, tool: "chat.sendMessage", grade: "send", status: "pending" }]
    }))
    // A filter keeps to its status.
    const finished = await graded(["runs", "--json", "--status", "finished"])
    expect(finished.out.split("\n").filter(Boolean).map((line) => JSON.parse(line).status)).not.toContain("waiting")
    const bad = await graded(["runs", "--status", "paused"])
    expect(bad.code).toBe(2)
  })

  it("resume: waiting while a decision is open; once approved, the run finishes and prints the answer", async () => {
    const started = await start("run-resume-1", "It is fixed")
    const proposal = started.status === "waiting" ? started.pending[0]!.id : ""
    const early = await graded(["resume", "run-resume-1"])
    expect(early.code).toBe(0)
    expect(early.out).toContain("run-resume-1 is waiting for a human to decide:")
    expect(early.out).toContain(`  ${proposal}  chat.sendMessage (send)  Send a chat message`)
    expect(early.out).toContain(`payload: {"to":"customer:42","text":"It is fixed"}`)
    expect(delivered).not.toContainEqual({ to: "customer:42", text: "It is fixed" })

    await approve(proposal, { to: "customer:42", text: "It is fixed, sorry" })
    const done = await graded(["resume", "run-resume-1"])
    expect(done.code).toBe(0)
    expect(done.out).toContain("run-resume-1 finished after 2 round(s).")
    expect(done.out).toContain(
      String.raw`answer: "It is fixed: the send said {\"ok\":true,\"data\":{\"delivered\":true}`
    )
    // Delivered once, by the approval; the resume delivered nothing.
    expect(delivered.filter((p) => JSON.stringify(p).includes("It is fixed"))).toEqual([
      { to: "customer:42", text: "It is fixed, sorry" }
    ])
    const listed = await graded(["runs", "--status", "finished"])
    expect(listed.out).toContain("run-resume-1  finished")
    expect(listed.out).toContain("answer: \"It is fixed: the send said")
  })

  it("what the model wrote is printed escaped: no ANSI, carriage return or bidirectional override reaches the terminal", async () => {
    const started = await start("run-escape-1", "ok\u001b[2K\rDONE \u202Eevil")
    const proposal = started.status === "waiting" ? started.pending[0]!.id : ""
    await approve(proposal)
    for (const args of [["resume", "run-escape-1"], ["runs"], ["resume", "run-escape-1"]]) {
      const shown = await graded(args)
      expect(shown.code).toBe(0)
      for (const hidden of ["\u001b", "\r", "\u202e"]) expect(shown.out).not.toContain(hidden)
    }
    const answered = await graded(["resume", "run-escape-1"])
    expect(answered.out).toContain(String.raw`answer: "ok\u001b[2K\rDONE \u202Eevil: the send said`)
  })

  it("cancel: needs a reason; records the person at the keyboard; rejects the open proposals; nothing is delivered after", async () => {
    const started = await start("run-cancel-1", "Cancel me")
    const proposal = started.status === "waiting" ? started.pending[0]!.id : ""
    const missing = await graded(["cancel", "run-cancel-1"])
    expect(missing.code).toBe(2)
    expect(missing.err).toContain("needs --reason")
    const cancelled = await graded(["cancel", "run-cancel-1", "--reason", "the customer called"], undefined, "cli:bob")
    expect(cancelled.code).toBe(0)
    expect(cancelled.out).toBe(`run-cancel-1 cancelled by cli:bob: the customer called\nrejected: ${proposal}`)
    const stored = await Effect.runPromise(
      Effect.flatMap(RunStore.RunStore, (runs) => runs.get("run-cancel-1")).pipe(Effect.provide(layer))
    )
    expect(stored.state.ended).toMatchObject({ status: "cancelled", by: "cli:bob", reason: "the customer called" })
    const record = await Effect.runPromise(Proposal.get(proposal).pipe(Effect.provide(layer)))
    expect(record).toMatchObject({ status: "rejected", decision: { by: "cli:bob" } })
    // A late approval delivers nothing.
    await expect(approve(proposal)).rejects.toThrow(/already decided \(rejected by cli:bob at \S+\)/)
    expect(delivered).not.toContainEqual(expect.objectContaining({ text: "Cancel me" }))
    const resumed = await graded(["resume", "run-cancel-1"])
    expect(resumed.out).toBe("run-cancel-1 was cancelled by cli:bob: the customer called")
    const again = await graded(["cancel", "run-cancel-1", "--reason", "again"])
    expect(again.code).toBe(1)
    expect(again.err).toContain("Run run-cancel-1 is cancelled; it cannot be cancelled")
  })

  it("a run another process holds: resume and cancel say so, exit code 1, and change nothing", async () => {
    await start("run-busy-1", "Busy")
    const store = await Effect.runPromise(Effect.provide(RunStore.RunStore, layer))
    const inAnHour = new Date(Date.now() + 3_600_000).toISOString()
    await Effect.runPromise(store.claim("run-busy-1", inAnHour, new Date().toISOString()))
    for (const args of [["resume", "run-busy-1"], ["cancel", "run-busy-1", "--reason", "x"]]) {
      const busy = await graded(args)
      expect(busy.code).toBe(1)
      expect(busy.err).toContain(`Run run-busy-1 is being run by another process (held until ${inAnHour})`)
    }
    expect((await Effect.runPromise(store.get("run-busy-1"))).status).toBe("running")
  })

  it("an unknown run, a module without a RunStore or without a model: said clearly, with an exit code", async () => {
    const unknown = await graded(["resume", "run-404"])
    expect(unknown.code).toBe(1)
    expect(unknown.err).toBe("There is no run run-404")
    const forged = await graded(["cancel", "run-1\u001b[2K\rcancelled", "--reason", "x"])
    expect(forged.code).toBe(1)
    expect(forged.err).toBe(String.raw`There is no run run-1\u001B[2K\u000Dcancelled`)
    for (const args of [["runs"], ["resume", "run-1"], ["cancel", "run-1", "--reason", "x"]]) {
      const none = await graded(args, "nostore.config.ts")
      expect(none.code, args[0]).toBe(2)
      expect(none.err, args[0]).toContain("nostore.config.ts provides no RunStore")
    }
    const noModel = await graded(["resume", "run-1"], "runs-nomodel.config.ts")
    expect(noModel.code).toBe(2)
    expect(noModel.err).toContain("runs-nomodel.config.ts provides no LanguageModel")
  })

  it("the command run from a model's fiber (an app calling Cli.run inside a tool): every decision is refused, nothing changes", async () => {
    const started = await start("run-attack-1", "Forged approval")
    const proposal = started.status === "waiting" ? started.pending[0]!.id : ""
    // The app runs the command as a person named alice, but from code a model
    // triggered: the fiber is autonomous, and saying `by` does not lift that.
    const asModel = (args: ReadonlyArray<string>) =>
      cli(["-m", "runs.config.ts", ...args], {
        cwd: fixtures,
        by: "sso:alice",
        within: { autonomous: true, actor: "agent:desk" }
      })
    for (
      const args of [
        ["decide", proposal, "approve"],
        ["decide", proposal, "edit"],
        ["decide", proposal, "retry"],
        ["decide", proposal, "done"],
        ["decide", proposal, "reject", "--reason", "the model says so"],
        ["cancel", "run-attack-1", "--reason", "the model says so"]
      ]
    ) {
      const refused = await asModel(args)
      expect(refused.code, args.join(" ")).toBe(1)
      expect(refused.err, args.join(" ")).toContain("is a human's decision: refused in a fiber running for a model")
      expect(refused.out, args.join(" ")).not.toContain("Approve, edit or reject?")
    }
    const record = await Effect.runPromise(Proposal.get(proposal).pipe(Effect.provide(layer)))
    expect(record.status).toBe("pending")
    expect(record.decision).toBeUndefined()
    const run = await Effect.runPromise(
      Effect.flatMap(RunStore.RunStore, (runs) => runs.get("run-attack-1")).pipe(Effect.provide(layer))
    )
    expect(run.status).toBe("waiting")
    expect(delivered).not.toContainEqual(expect.objectContaining({ text: "Forged approval" }))
  })
})
