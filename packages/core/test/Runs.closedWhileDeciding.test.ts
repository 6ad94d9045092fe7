// A durable run's proposal whose run is cancelled, or whose deadline passes,
// while a human's card for it is open (Proposal.approve claimed it, then asked):
// when the human answers, nothing goes out, and the proposal does not come
// back to be approved.
import { describe, expect, it } from "@effect/vitest"
import { Deferred, type Duration, Effect, Fiber, Result } from "effect"
import { TestClock } from "effect/testing"
import { HumanConfirm, Invocation, Proposal, Runs, ScriptedModel } from "@graded/core"
import { human, stores } from "./runsFixture.js"
import { makeDesk } from "./supportDesk.js"

const { call, calls } = ScriptedModel

// A person whose card is open: the UI tells us it was asked, then waits for our answer.
const slowHuman = (
  asked: Deferred.Deferred<void>,
  answer: Deferred.Deferred<HumanConfirm.Decision>
): HumanConfirm.UI => ({
  confirm: () => Effect.andThen(Deferred.succeed(asked, undefined), Deferred.await(answer))
})

// A run waiting on one send, and Alice's approval of it forked with her card
// open: `answer` closes the card, `approving` is her approval's fiber.
const aliceDeciding = (options: { readonly decisionTimeout?: Duration.Input } = {}) =>
  Effect.gen(function*() {
    const desk = makeDesk()
    const kept = yield* stores()
    const started = yield* Runs.start({ toolkit: desk.support, prompt: "Send it.", ...options }).pipe(
      Effect.provide(ScriptedModel.layer([calls(call("chat.sendMessage", { text: "Hi" }))])),
      Effect.provide(kept)
    )
    if (started.status !== "waiting") return yield* Effect.die(new Error("the run did not wait"))
    const id = started.pending[0]!.id
    const asked = yield* Deferred.make<void>()
    const answer = yield* Deferred.make<HumanConfirm.Decision>()
    const approving = yield* Effect.forkChild(
      Proposal.approve(desk.support, id, { lease: "1 day" }).pipe(
        Invocation.within({ actor: "agent:alice" }),
        Effect.provide(HumanConfirm.layer(slowHuman(asked, answer))),
        Effect.provide(kept),
        Effect.result
      )
    )
    yield* Deferred.await(asked)
    // Bob calls the run off while Alice's card is still open.
    const cancel = Invocation.within({ actor: "agent:bob" })(
      Runs.cancel(started.runId, { reason: "the customer called" })
    )
      .pipe(Effect.provide(kept))
    return { answer, approving, cancel, desk, id, kept }
  })

describe("Runs: a proposal closed while a human decides it", () => {
  it.effect("cancel while a human's card is open: the approval that comes after the cancel delivers nothing", () =>
    Effect.gen(function*() {
      const { answer, approving, cancel, desk } = yield* aliceDeciding()
      yield* cancel
      yield* Deferred.succeed(answer, HumanConfirm.approve("agent:alice"))
      yield* Fiber.join(approving)
      // The run was cancelled before anyone approved; nothing of it goes out.
      expect(desk.effects.delivered).toEqual([])
    }))

  it.effect("cancel while a human's card is open, then an invalid edit: the proposal does not come back to be approved", () =>
    Effect.gen(function*() {
      const { answer, approving, cancel, desk, id, kept } = yield* aliceDeciding()
      yield* cancel
      // An edit the schema refuses (empty text), which would otherwise leave it waiting as it was.
      yield* Deferred.succeed(answer, HumanConfirm.approve("agent:alice", { to: "customer:42", text: "  " }))
      yield* Fiber.join(approving)
      const after = yield* Proposal.get(id).pipe(Effect.provide(kept))
      // Later, Carol approves it from the queue.
      const late = yield* Effect.result(
        Proposal.approve(desk.support, id).pipe(
          human("agent:carol", HumanConfirm.approve("agent:carol")),
          Effect.provide(kept)
        )
      )
      expect({ status: after.status, late: Result.isFailure(late), delivered: desk.effects.delivered }).toEqual({
        status: "rejected",
        late: true,
        delivered: []
      })
    }))

  it.effect("a decision timeout passes while the card is open: the late approval delivers nothing", () =>
    Effect.gen(function*() {
      const { answer, approving, desk } = yield* aliceDeciding({ decisionTimeout: "1 hour" })
      yield* TestClock.adjust("2 hours")
      yield* Deferred.succeed(answer, HumanConfirm.approve("agent:alice"))
      yield* Fiber.join(approving)
      expect(desk.effects.delivered).toEqual([])
    }))
})
