// Crashes with real processes on one SQLite file: a child process (built by test/built.ts) runs
// part of the work and is killed with SIGKILL where the test wants it dead;
// then this process, as the app restarted (a new pool on the file, nothing
// kept in memory), recovers and goes on. The "outside system" is a file each
// delivery appends a line to, with its idempotency key: its line count says
// what went out, and nothing may go out twice without a human saying so.
import { describe, expect, it } from "@effect/vitest"
import { Effect, Result } from "effect"
import { HumanConfirm, Invocation, type LanguageModel, Proposal, Runs, RunStore, ScriptedModel } from "@graded/core"
import { Sql, SqlAudit } from "@graded/sql"
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { built } from "../../../test/built.js"
import { tempDir } from "./databases.js"
import { makeOutsideDesk, nestedDesk, sent } from "./outsideDesk.js"

const root = fileURLToPath(new URL("../../..", import.meta.url))
const { call, calls, text } = ScriptedModel

// Generous: a child's start (loading graded) is slow on a loaded machine.
const patience = 90_000
const timeout = 4 * patience

interface Child {
  readonly process: ChildProcess
  readonly output: () => string
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
}

const spawnChild = (...args: ReadonlyArray<string>) =>
  Effect.acquireRelease(
    Effect.sync((): Child => {
      const child = spawn(process.execPath, [built("packages/sql/test/crashProcess.ts"), ...args], {
        cwd: root,
        stdio: ["ignore", "pipe", "pipe"]
      })
      let output = ""
      child.stdout!.on("data", (chunk) => output += chunk)
      child.stderr!.on("data", (chunk) => output += chunk)
      const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
        child.once("exit", (code, signal) => resolve({ code, signal }))
      )
      return { process: child, output: () => output, exited }
    }),
    (child) =>
      Effect.promise(async () => {
        if (child.process.exitCode === null && child.process.signalCode === null) {
          child.process.kill("SIGKILL")
          await child.exited
        }
      })
  )

// Polls until `check` gives a value; a child that exits first fails the test with what it printed.
const waitFor = <A>(child: Child, what: string, check: () => A | undefined) =>
  Effect.promise(async () => {
    const deadline = Date.now() + patience
    for (;;) {
      const found = check()
      if (found !== undefined) return found
      if (child.process.exitCode !== null || child.process.signalCode !== null) {
        throw new Error(`the child exited (${child.process.exitCode}) before ${what}:\n${child.output()}`)
      }
      if (Date.now() > deadline) throw new Error(`no ${what} after ${patience} ms:\n${child.output()}`)
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
  })

const kill = (child: Child) =>
  Effect.promise(async () => {
    child.process.kill("SIGKILL")
    const { signal } = await child.exited
    expect(signal).toBe("SIGKILL")
  })

const readMarker = (marker: string): any =>
  fs.existsSync(marker) ? JSON.parse(fs.readFileSync(marker, "utf8")) : undefined

const results = (messages: ReadonlyArray<LanguageModel.Message>) =>
  messages.flatMap((message) => message.role === "tool" ? [JSON.parse(message.content)] : [])

const human =
  (by: string, ...decisions: ReadonlyArray<HumanConfirm.Decision>) => <A, E, R>(self: Effect.Effect<A, E, R>) =>
    Invocation.within({ actor: by })(self).pipe(Effect.provide(HumanConfirm.layer(HumanConfirm.scripted(decisions))))

// A test's files, and the app on its database as it comes up after a restart: a new pool for each step.
const setup = Effect.gen(function*() {
  const dir = yield* tempDir
  const filename = path.join(dir, "app.db")
  const outside = path.join(dir, "outside.jsonl")
  const marker = path.join(dir, "marker.json")
  const app = <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.provide(self, Sql.sqlite({ filename }))
  const desk = makeOutsideDesk(outside)
  // Recovers, as an app does on start, until the proposal's lease has passed and it moved.
  const recoverLapsed = (id: string) =>
    Effect.gen(function*() {
      const deadline = Date.now() + patience
      const moved: Array<Proposal.Proposal> = []
      for (;;) {
        moved.push(...(yield* Proposal.recover.pipe(app)))
        const proposal = yield* Proposal.get(id).pipe(app)
        if (proposal.status !== "approving" && proposal.status !== "delivering") return { proposal, moved }
        if (Date.now() > deadline) return yield* Effect.die(new Error(`${id} is still ${proposal.status}`))
        yield* Effect.sleep("100 millis")
      }
    })
  const audit = SqlAudit.entries().pipe(app)
  // The app starts a run whose model asks to send one message; it waits for a human.
  const startRun = (runId: string) =>
    Effect.gen(function*() {
      const started = yield* Runs.start({
        toolkit: desk.support,
        prompt: "Tell the customer the refund is on its way.",
        runId,
        context: { actor: "agent:alice", traceId: `t-${runId}` }
      }).pipe(
        Effect.provide(ScriptedModel.layer([calls(call("chat.sendMessage", { text: "Your refund is on its way." }))])),
        app
      )
      if (started.status !== "waiting") return yield* Effect.die(new Error(`the run is ${started.status}`))
      expect(started.pending).toMatchObject([{ tool: "chat.sendMessage", status: "pending", runId }])
      return started.pending[0]!.id
    })
  const resume = (runId: string, ...turns: ReadonlyArray<ScriptedModel.Turn>) =>
    Runs.resume(runId, { toolkit: desk.support }).pipe(Effect.provide(ScriptedModel.layer(turns)), app)
  return { filename, outside, marker, app, desk, recoverLapsed, audit, startRun, resume }
})

describe("crashes on one SQLite file, with processes killed by SIGKILL", () => {
  it.live(
    "killed while its run waits for a decision: a new process finds the same proposal waiting; decided, the run finishes, delivered once",
    () =>
      Effect.gen(function*() {
        const { app, audit, desk, filename, marker, outside, resume } = yield* setup
        const child = yield* spawnChild("start-and-wait", filename, outside, marker)
        const seen = yield* waitFor(child, "the run waiting and polled", () => {
          const found = readMarker(marker)
          return found?.polls >= 2 ? found : undefined
        })
        yield* kill(child)
        expect(seen.started).toMatchObject({
          status: "waiting",
          runId: "run-crash",
          pending: [{ tool: "chat.sendMessage", status: "pending" }]
        })
        const pending = seen.started.pending[0] as Proposal.Proposal

        // The app restarts: nothing lapsed, the run waits as it was left.
        expect(yield* Proposal.recover.pipe(app)).toEqual([])
        const stored = yield* Effect.flatMap(RunStore.RunStore, (runs) => runs.get("run-crash")).pipe(app)
        expect(stored).toMatchObject({ status: "waiting", actor: "agent:alice", traceId: "t-crash" })
        expect(stored.state.turn?.outcomes).toEqual([
          expect.objectContaining({ call: expect.objectContaining({ tool: "kb.search", ok: true }) }),
          { proposal: pending.id }
        ])
        const waiting = yield* resume("run-crash") // no model turn: a waiting run asks none
        expect(waiting).toEqual({ status: "waiting", runId: "run-crash", pending: [pending] })
        expect(yield* Proposal.list({ runId: "run-crash" }).pipe(app)).toEqual([pending])
        expect(sent(outside)).toEqual([])

        // A human decides in another process; the app resumes.
        const approved = yield* Proposal.approve(desk.support, pending.id).pipe(
          human("agent:bob", HumanConfirm.approve("agent:bob")),
          app
        )
        expect(sent(outside)).toEqual([
          {
            key: approved.proposal.deliveryKey,
            to: "customer:42",
            text: "Your refund is on its way.",
            pid: process.pid
          }
        ])
        const finished = yield* resume("run-crash", text("Told the customer."))
        if (finished.status !== "finished") return expect.unreachable()
        expect(finished.result).toMatchObject({ answer: "Told the customer.", rounds: 2 })
        expect(results(finished.result.messages)).toMatchObject([
          { ok: true, data: [{ id: "kb-1", title: "About refund" }] },
          { ok: true, data: { delivered: true }, note: "agent:bob approved it" }
        ])
        expect(sent(outside)).toHaveLength(1)
        const runEntries = (yield* audit).flatMap((entry) => entry.type === "run" ? [entry.status] : [])
        expect(runEntries).toEqual(["waiting", "resumed", "finished"])
      }),
    timeout
  )

  it.live(
    "killed while the model is thinking: once the run's lease passes, another process resumes it from its last turn",
    () =>
      Effect.gen(function*() {
        const { app, desk, filename, marker, outside, resume } = yield* setup
        const child = yield* spawnChild("start-and-think", filename, outside, marker)
        yield* waitFor(child, "the model asked a second time", () => readMarker(marker)?.asked === 2 ? true : undefined)
        yield* kill(child)
        const held = yield* Effect.flatMap(RunStore.RunStore, (runs) => runs.get("run-think")).pipe(app)
        expect(held).toMatchObject({ status: "running", state: { round: 1, calls: [{ tool: "kb.search", ok: true }] } })
        expect(held.leaseUntil).toBeDefined()
        // Until the dead process's lease passes, the run is busy; then this process takes it.
        const asked: Array<LanguageModel.Request> = []
        const deadline = Date.now() + patience
        let resumed: Result.Result<Runs.Outcome<any>, unknown>
        for (;;) {
          resumed = yield* Effect.result(resume("run-think", (request) => {
            asked.push(request)
            return calls(call("chat.sendMessage", { text: "On its way." }))
          }))
          if (Result.isSuccess(resumed)) break
          expect(resumed.failure).toMatchObject({ _tag: "@graded/core/RunStore/RunBusy", status: "running" })
          expect(Date.now()).toBeLessThan(deadline)
          yield* Effect.sleep("100 millis")
        }
        // The model was asked once, with the read it had already made; nothing of round 1 ran again.
        expect(asked).toHaveLength(1)
        expect(results(asked[0]!.messages)).toEqual([{ ok: true, data: [{ id: "kb-1", title: "About refund" }] }])
        expect(resumed.success).toMatchObject({ status: "waiting", pending: [{ tool: "chat.sendMessage" }] })
        if (resumed.success.status !== "waiting") return
        yield* Proposal.approve(desk.support, resumed.success.pending[0]!.id).pipe(
          human("agent:bob", HumanConfirm.approve("agent:bob")),
          app
        )
        const finished = yield* resume("run-think", text("Done."))
        if (finished.status !== "finished") return expect.unreachable()
        expect(finished.result.calls.map((c) => [c.tool, c.ok])).toEqual([["kb.search", true], [
          "chat.sendMessage",
          true
        ]])
        expect(sent(outside)).toHaveLength(1)
      }),
    timeout
  )

  it.live(
    "killed while a sub-agent's nested run waits on its model: the restart goes on with the same child run, its send waits with its path and is delivered once",
    () =>
      Effect.gen(function*() {
        const { app, filename, marker, outside } = yield* setup
        const child = yield* spawnChild("start-nested-and-think", filename, outside, marker)
        yield* waitFor(child, "the desk's model asked a second time", () =>
          readMarker(marker)?.asked === 2 ? true : undefined)
        yield* kill(child)
        const stored = yield* Effect.flatMap(RunStore.RunStore, (runs) =>
          runs.list()).pipe(app)
        expect(stored.map((run) => [run.id, run.status]).sort()).toEqual([
          ["run-nested", "running"],
          ["run-nested:1:call_desk", "running"]
        ])
        // This process: its own tools, the same file.
        const toolkit = nestedDesk(makeOutsideDesk(outside))
        const asked: Array<LanguageModel.Request> = []
        const answer = (request: LanguageModel.Request) => {
          asked.push(request)
          const inner = request.messages[0]?.role === "system"
          const told = request.messages.filter((message) =>
            message.role === "tool"
          ).length
          return inner
            ? told === 1 ? calls(call("chat.sendMessage", { text: "On its way." })) : text("Told them.")
            : text("The desk told them.")
        }
        const resume = Runs.resume("run-nested", { toolkit }).pipe(
          Effect.provide(ScriptedModel.layer([answer, answer, answer])),
          app
        )
        const deadline = Date.now() + patience
        let resumed: Result.Result<Runs.Outcome<any>, unknown>
        for (;;) {
          resumed = yield* Effect.result(resume)
          if (Result.isSuccess(resumed)) break
          expect(resumed.failure).toMatchObject({ _tag: "@graded/core/RunStore/RunBusy" })
          expect(Date.now()).toBeLessThan(deadline)
          yield* Effect.sleep("100 millis")
        }
        // The desk's model was asked once, with the read it had made; the outer model not at all.
        expect(asked).toHaveLength(1)
        expect(resumed.success).toMatchObject({
          status: "waiting",
          pending: [{ tool: "chat.sendMessage", path: ["agent.desk"], runId: "run-nested:1:call_desk" }]
        })
        if (resumed.success.status !== "waiting") return
        const after = yield* Effect.flatMap(RunStore.RunStore, (runs) => runs.list()).pipe(app)
        expect(after).toHaveLength(2)
        yield* Proposal.approve(toolkit, resumed.success.pending[0]!.id).pipe(
          human("agent:bob", HumanConfirm.approve("agent:bob")),
          Effect.provide(ScriptedModel.layer([])),
          app
        )
        const finished = yield* resume
        expect(finished).toMatchObject({
          status: "finished",
          result: { answer: "The desk told them.", calls: [{ tool: "agent.desk", ok: true, output: "Told them." }] }
        })
        expect(sent(outside)).toHaveLength(1)
      }),
    timeout
  )

  for (
    const [point, where] of [
      ["ui", "inside the HumanConfirm UI once the human pressed approve"],
      ["decided", "after the approval was decided and audited, before the delivery was recorded"]
    ] as const
  ) {
    it.live(
      `killed ${where}: recovered after the lease, the proposal is pending, nothing went out, a new approval delivers once`,
      () =>
        Effect.gen(function*() {
          const { app, audit, desk, filename, marker, outside, recoverLapsed, resume, startRun } = yield* setup
          const id = yield* startRun("run-b")
          const child = yield* spawnChild("approve", filename, outside, marker, id, point)
          yield* waitFor(child, `the approval stopped (${point})`, () =>
            readMarker(marker)?.stopped === point || undefined)
          yield* kill(child)
          const stuck = yield* Proposal.get(id).pipe(app)
          expect(stuck).toMatchObject({ status: "approving", decision: { by: "agent:alice" } })
          expect(stuck.deliveryKey).toBeUndefined()

          const { moved, proposal } = yield* recoverLapsed(id)
          expect(proposal.status).toBe("pending")
          expect(proposal.decision).toBeUndefined()
          expect(moved.map((p) => [p.id, p.status])).toEqual([[id, "pending"]])
          const entries = yield* audit
          expect(entries).toContainEqual(
            expect.objectContaining({ type: "refused", tool: "chat.sendMessage", gate: "lease" })
          )
          expect(entries.some((entry) =>
            entry.type === "decided" && entry.decision === "approved"
          )).toBe(
            point === "decided"
          )
          expect(entries.filter((entry) => entry.type === "delivered")).toEqual([])
          expect(sent(outside)).toEqual([])

          // The run still waits for it; a human approves again, once.
          expect(yield* resume("run-b")).toMatchObject({ status: "waiting", pending: [{ id, status: "pending" }] })
          const approved = yield* Proposal.approve(desk.support, id).pipe(
            human("agent:bob", HumanConfirm.approve("agent:bob")),
            app
          )
          expect(approved.proposal).toMatchObject({ status: "delivered", decision: { by: "agent:bob" } })
          const again = yield* Effect.flip(
            Proposal.approve(desk.support, id).pipe(human("agent:bob", HumanConfirm.approve("agent:bob")), app)
          )
          expect(again).toMatchObject({ _tag: "@graded/core/ProposalStore/AlreadyDecided", status: "delivered" })
          const finished = yield* resume("run-b", text("Told them."))
          if (finished.status !== "finished") return expect.unreachable()
          expect(results(finished.result.messages)).toMatchObject([{ ok: true, note: "agent:bob approved it" }])
          expect(sent(outside)).toEqual([
            {
              key: approved.proposal.deliveryKey,
              to: "customer:42",
              text: "Your refund is on its way.",
              pid: process.pid
            }
          ])
        }),
      timeout
    )
  }

  // Killed inside the tool's deliver, after the outside effect: the proposal
  // is in doubt, and only a human settles it, one way or the other.
  const killedWhileDelivering = Effect.gen(function*() {
    const context = yield* setup
    const { app, audit, desk, filename, marker, outside, recoverLapsed, resume, startRun } = context
    const id = yield* startRun("run-c")
    const child = yield* spawnChild("approve", filename, outside, marker, id, "deliver")
    const [line] = yield* waitFor(child, "the delivery's line outside", () => {
      const lines = sent(outside)
      return lines.length > 0 ? lines : undefined
    })
    yield* kill(child)
    expect(line).toMatchObject({ to: "customer:42", text: "Your refund is on its way.", pid: child.process.pid })
    const stuck = yield* Proposal.get(id).pipe(app)
    expect(stuck).toMatchObject({ status: "delivering", deliveryKey: line!.key })

    const { moved, proposal } = yield* recoverLapsed(id)
    expect(proposal).toMatchObject({ status: "in-doubt", deliveryKey: line!.key })
    expect(proposal.decision?.reason).toContain("it may have gone out")
    expect(moved.map((p) => [p.id, p.status])).toEqual([[id, "in-doubt"]])
    expect(yield* audit).toContainEqual(
      expect.objectContaining({ type: "in-doubt", action: "surfaced", proposal: id, tool: "chat.sendMessage" })
    )
    // Nothing delivers it again by itself: recover, resume, or an approval.
    expect(yield* Proposal.recover.pipe(app)).toEqual([])
    expect(yield* resume("run-c")).toMatchObject({ status: "waiting", pending: [{ id, status: "in-doubt" }] })
    const approve = yield* Effect.flip(
      Proposal.approve(desk.support, id).pipe(human("agent:bob", HumanConfirm.approve("agent:bob")), app)
    )
    expect(approve).toMatchObject({
      _tag: "@graded/core/ProposalStore/AlreadyDecided",
      id,
      status: "in-doubt",
      by: "agent:alice"
    })
    expect(approve.message).toContain("already decided")
    expect(sent(outside)).toEqual([line])
    return { ...context, id, line: line! }
  })

  it.live(
    "killed inside deliver after the outside effect: in doubt, never re-run silently; a retry goes out with the same key",
    () =>
      Effect.gen(function*() {
        const { app, audit, desk, id, line, outside, resume } = yield* killedWhileDelivering
        const retried = yield* Proposal.retry(desk.support, id).pipe(
          human("agent:bob", HumanConfirm.approve("agent:bob")),
          app
        )
        expect(retried.proposal).toMatchObject({
          status: "delivered",
          deliveryKey: line.key,
          decision: { by: "agent:bob" }
        })
        // The outside system got the same key twice: it can tell the second is the first again.
        const lines = sent(outside)
        expect(lines).toHaveLength(2)
        expect(lines.map((l) => l.key)).toEqual([line.key, line.key])
        expect(yield* audit).toContainEqual(
          expect.objectContaining({ type: "in-doubt", action: "retried", proposal: id, by: "agent:bob" })
        )
        const finished = yield* resume("run-c", text("Sent, after a retry."))
        if (finished.status !== "finished") return expect.unreachable()
        expect(results(finished.result.messages)).toMatchObject([
          { ok: true, data: { delivered: true }, note: "agent:bob approved it" }
        ])
        expect(
          yield* Effect.flip(
            Proposal.retry(desk.support, id).pipe(human("agent:bob", HumanConfirm.approve("agent:bob")), app)
          )
        ).toMatchObject({ _tag: "@graded/core/ProposalStore/AlreadyDecided", status: "delivered" })
        expect(sent(outside)).toHaveLength(2)
      }),
    timeout
  )

  it.live(
    "killed inside deliver after the outside effect: a human marks it done, and the run goes on told so",
    () =>
      Effect.gen(function*() {
        const { app, audit, desk, id, line, outside, resume } = yield* killedWhileDelivering
        const done = yield* Invocation.within({ actor: "agent:bob" })(
          Proposal.markDone(id, { note: "checked the chat: the customer got it" })
        ).pipe(app)
        expect(done).toMatchObject({
          status: "delivered",
          decision: { by: "agent:bob", reason: "checked the chat: the customer got it" }
        })
        expect(done.output).toBeUndefined()
        expect(yield* audit).toContainEqual(
          expect.objectContaining({ type: "in-doubt", action: "marked-done", proposal: id, by: "agent:bob" })
        )
        const finished = yield* resume("run-c", text("It had gone out."))
        if (finished.status !== "finished") return expect.unreachable()
        expect(results(finished.result.messages)).toMatchObject([
          { ok: true, note: "agent:bob marked it delivered; its output is not known" }
        ])
        expect(
          yield* Effect.flip(
            Proposal.retry(desk.support, id).pipe(human("agent:bob", HumanConfirm.approve("agent:bob")), app)
          )
        ).toMatchObject({ _tag: "@graded/core/ProposalStore/AlreadyDecided", status: "delivered" })
        expect(sent(outside)).toEqual([line])
      }),
    timeout
  )
})
