// An approval that stops half way: interrupted while the human decides, or
// while delivering, or its process gone past its lease. Nothing is delivered
// twice, and nothing stays "approving" for good.
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Schema, TestClock } from "effect"
import { Audit, HumanConfirm, Proposal, ProposalStore, Registry, Tool, Toolkit } from "@graded/core"
import { makeDesk } from "./supportDesk.js"

const setup = Effect.gen(function*() {
  const deliveryStarted = yield* Deferred.make<void>()
  const human = yield* Deferred.make<HumanConfirm.Decision>()
  const delivered: Array<string> = []
  let hang = true
  const Notify = Tool.send("chat.notify", {
    title: "Notify",
    description: "Notifies the customer.",
    input: Schema.Struct({ text: Schema.String }),
    payload: Schema.Struct({ text: Schema.String }),
    output: Schema.Boolean,
    prepare: ({ text }) => Effect.succeed({ text }),
    deliver: (confirmed) =>
      Effect.zipRight(
        Deferred.succeed(deliveryStarted, undefined),
        hang ? Effect.never : Effect.sync(() => (delivered.push(confirmed.payload.text), true))
      )
  })
  const toolkit = Toolkit.make(Notify)
  yield* Registry.make(Toolkit.make(Tool.proposal(Notify))).invoke("chat.notify.propose", { text: "hi" }, {
    autonomous: true,
    traceId: "t-1"
  })
  const [proposal] = yield* Proposal.list({ status: "pending" })
  const ui = HumanConfirm.layer({ confirm: () => Deferred.await(human) })
  const untilStatus = (status: Proposal.Status) =>
    Effect.repeat(Effect.zipRight(Effect.yieldNow(), Proposal.get(proposal!.id)), { until: (p) => p.status === status })
  return {
    id: proposal!.id,
    toolkit,
    human,
    deliveryStarted,
    delivered,
    ui,
    untilStatus,
    stopHanging: () => hang = false
  }
})

describe("Proposal.approve, stopped half way", () => {
  it.effect("interrupted while the human decides: back to pending, and a later approval delivers once", () =>
    Effect.gen(function*() {
      const t = yield* setup
      const fiber = yield* Effect.fork(Proposal.approve(t.toolkit, t.id).pipe(Effect.provide(t.ui)))
      yield* t.untilStatus("approving")
      yield* Fiber.interrupt(fiber)
      expect((yield* Proposal.get(t.id)).status).toBe("pending")
      t.stopHanging()
      yield* Deferred.succeed(t.human, HumanConfirm.approve("agent:alice"))
      const approved = yield* Proposal.approve(t.toolkit, t.id).pipe(Effect.provide(t.ui))
      expect(approved.proposal.status).toBe("delivered")
      expect(t.delivered).toEqual(["hi"])
    }).pipe(Effect.provide(ProposalStore.memory)))

  it.effect("interrupted while delivering: failed with the reason, never delivered again", () =>
    Effect.gen(function*() {
      const t = yield* setup
      yield* Deferred.succeed(t.human, HumanConfirm.approve("agent:alice"))
      const fiber = yield* Effect.fork(Proposal.approve(t.toolkit, t.id).pipe(Effect.provide(t.ui)))
      yield* Deferred.await(t.deliveryStarted)
      yield* Fiber.interrupt(fiber)
      const settled = yield* Proposal.get(t.id)
      expect(settled).toMatchObject({ status: "failed", decision: { reason: Proposal.interruptedWhileDelivering } })
      t.stopHanging()
      const again = yield* Effect.flip(Proposal.approve(t.toolkit, t.id).pipe(Effect.provide(t.ui)))
      expect(again).toBeInstanceOf(ProposalStore.AlreadyDecided)
      expect(t.delivered).toEqual([])
    }).pipe(Effect.provide(ProposalStore.memory)))

  it.effect("a process gone past its lease: another settles it as failed and audits it; the late approval delivers nothing", () =>
    Effect.gen(function*() {
      const t = yield* setup
      t.stopHanging()
      const audit = Audit.memory()
      const fiber = yield* Effect.fork(
        Proposal.approve(t.toolkit, t.id, { lease: "1 minute" }).pipe(Effect.provide(t.ui))
      )
      const claimed = yield* t.untilStatus("approving")
      expect(claimed.leaseUntil).toBe(new Date(60_000).toISOString())
      // Not yet past the lease: nothing to recover.
      expect(yield* Proposal.recover).toEqual([])
      yield* TestClock.adjust("2 minutes")
      const recovered = yield* Proposal.recover.pipe(Effect.provide(audit.layer))
      expect(recovered.map((p) => [p.id, p.status])).toEqual([[t.id, "failed"]])
      expect(recovered[0]?.decision?.reason).toBe(ProposalStore.leaseEnded(claimed))
      expect(audit.entries).toMatchObject([{ type: "refused", tool: "chat.notify", gate: "lease" }])
      // The human finally approves: the lease is gone, so nothing is sent.
      yield* Deferred.succeed(t.human, HumanConfirm.approve("agent:alice"))
      const late = yield* Effect.flip(Fiber.join(fiber))
      expect(late).toBeInstanceOf(ProposalStore.AlreadyDecided)
      expect(t.delivered).toEqual([])
      expect((yield* Proposal.get(t.id)).status).toBe("failed")
    }).pipe(Effect.provide(ProposalStore.memory)))
})

describe("Proposal.tool: a cap on what one run may queue", () => {
  it.effect("past maxPendingPerTrace the proposal tool refuses; another run may still propose", () =>
    Effect.gen(function*() {
      const { SendReply } = makeDesk()
      const registry = Registry.make(Toolkit.make(Tool.proposal(SendReply, { maxPendingPerTrace: 3 })))
      const propose = (traceId: string) =>
        registry.invoke("chat.sendMessage.propose", { text: "spam" }, { autonomous: true, traceId })
      const results = []
      for (let i = 0; i < 5; i++) results.push(yield* propose("t-flood"))
      expect(results.map((r) => r.ok)).toEqual([true, true, true, false, false])
      expect(results[3]).toMatchObject({ code: "refused", gate: "proposal" })
      expect(results[3]?.error).toContain("at most 3 wait at once")
      expect((yield* propose("t-other")).ok).toBe(true)
      expect(yield* Proposal.list({ status: "pending" })).toHaveLength(4)
    }).pipe(Effect.provide(ProposalStore.memory)))
})
