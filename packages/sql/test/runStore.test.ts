// SqlRunStore keeps each run's decoded state to spare a resume decoding it
// again; what it answers must still be what the database holds. Two layers on
// one SQLite file stand for two processes.
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { HumanConfirm, Invocation, Proposal, Runs, RunStore, ScriptedModel } from "@graded/core"
import { Sql } from "@graded/sql"
import * as path from "node:path"
import { makeDesk } from "../../core/test/supportDesk.js"
import { tempDir } from "./databases.js"

const { call, calls, text } = ScriptedModel

describe("SqlRunStore on a SQLite file shared by two processes", () => {
  it.effect("a run another process moved on is read as it now is, not as this process last read it", () =>
    Effect.gen(function*() {
      const desk = makeDesk()
      const filename = path.join(yield* tempDir, "app.db")
      const here = yield* Layer.build(Sql.sqlite({ filename }))
      const there = yield* Layer.build(Sql.sqlite({ filename }))
      const started = yield* Runs.start({ toolkit: desk.support, prompt: "File it.", runId: "run-1" }).pipe(
        Effect.provide(ScriptedModel.layer([calls(call("ticket.submit", { subject: "Refund" }))])),
        Effect.provide(here)
      )
      expect(started.status).toBe("waiting")
      const runs = Context.get(here, RunStore.RunStore)
      const before = yield* runs.get("run-1")
      expect(before.state.turn).toBeDefined()
      // Elsewhere: decided and resumed to the end.
      const [proposal] = yield* Proposal.list({ runId: "run-1" }).pipe(Effect.provide(there))
      yield* Invocation.within({ actor: "agent:alice" })(Proposal.approve(desk.support, proposal!.id)).pipe(
        Effect.provide(HumanConfirm.layer(HumanConfirm.scripted([HumanConfirm.approve("agent:alice")]))),
        Effect.provide(there)
      )
      const finished = yield* Runs.resume("run-1", { toolkit: desk.support }).pipe(
        Effect.provide(ScriptedModel.layer([text("Filed.")])),
        Effect.provide(there)
      )
      expect(finished.status).toBe("finished")
      // Here again: the stored run, as the other process left it.
      const after = yield* runs.get("run-1")
      expect(after.status).toBe("finished")
      expect(after.version).toBeGreaterThan(before.version)
      expect(after.state.turn).toBeUndefined()
      expect(after.state.ended).toEqual({ status: "finished", stopped: "answer", answer: "Filed." })
      expect(after.state.calls.map((c) => [c.tool, c.ok])).toEqual([["ticket.submit", true]])
      expect(desk.effects.submitted).toEqual(["Refund"])
      // And resuming here answers as it ended, delivering nothing again.
      const again = yield* Runs.resume("run-1", { toolkit: desk.support }).pipe(
        Effect.provide(ScriptedModel.layer([])),
        Effect.provide(here)
      )
      expect(again).toMatchObject({ status: "finished", result: { answer: "Filed." } })
      expect(desk.effects.submitted).toEqual(["Refund"])
    }))

  it.effect("save answers the run as the other process then reads it, and a stale save changes nothing", () =>
    Effect.gen(function*() {
      const filename = path.join(yield* tempDir, "app.db")
      const here = Context.get(yield* Layer.build(Sql.sqlite({ filename })), RunStore.RunStore)
      const there = Context.get(yield* Layer.build(Sql.sqlite({ filename })), RunStore.RunStore)
      const state: RunStore.State = {
        maxRounds: 4,
        maxCallsPerRound: 8,
        maxArgumentChars: 1000,
        context: {},
        round: 0,
        messages: [{ role: "user", content: "Hi" }],
        calls: [],
        usage: { inputTokens: 0, outputTokens: 0 },
        untrusted: [],
        refusedBefore: []
      }
      const at = "2026-01-01T00:00:00.000Z"
      const created = yield* here.create({
        id: "run-2",
        status: "running",
        version: 1,
        traceId: "t-2",
        createdAt: at,
        updatedAt: at,
        leaseUntil: "2999-01-01T00:00:00.000Z",
        state
      })
      const next: RunStore.State = {
        ...state,
        round: 1,
        messages: [...state.messages, { role: "assistant", content: "Hello", toolCalls: [] }]
      }
      const saved = yield* here.save({ ...created, status: "waiting", leaseUntil: undefined, state: next })
      expect(saved).toMatchObject({ id: "run-2", status: "waiting", version: 2, traceId: "t-2" })
      expect(saved.leaseUntil).toBeUndefined()
      expect(yield* there.get("run-2")).toEqual(saved)
      // Saved again at the version it replaced: refused, and the row is as it was.
      const stale = yield* Effect.flip(here.save({ ...created, state }))
      expect(stale).toBeInstanceOf(RunStore.RunBusy)
      expect((yield* there.get("run-2")).state).toEqual(next)
      expect((yield* here.get("run-2")).state).toEqual(next)
    }))
})
