// An approval that stops half way: interrupted while the human decides, or
// while delivering, or its process gone past its lease. Nothing is delivered
// twice, and nothing stays "approving" for good.
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Layer, Schema } from "effect"
import { TestClock } from "effect/testing"
import { Audit, HumanConfirm, Invocation, Proposal, ProposalStore, Registry, Tool, Toolkit } from "@graded/core"
import { makeDesk } from "./supportDesk.js"

const setup = Effect.gen(function*() {
  const deliveryStarted = yield* Deferred.make<void>()
  const human = yield* Deferred.make<HumanConfirm.Decision>()
  const delivered: Array<string> = []
  const keys: Array<string> = []
  let hang = true
  const Notify = Tool.send("chat.notify", {
    title: "Notify",
    description: "Notifies the customer.",
    input: Schema.Struct({ text: Schema.String }),
    payload: Schema.Struct({ text: Schema.String }),
    output: Schema.Boolean,
    prepare: ({ text }) => Effect.succeed({ text }),
    deliver: (confirmed) =>
      // The key first: Effect 4 may run the fiber waiting on `deliveryStarted`
      // at once, before this one's next step.
      Effect.andThen(
        Effect.andThen(
          Effect.sync(() => keys.push(confirmed.idempotencyKey)),
          Deferred.succeed(deliveryStarted, undefined)
        ),
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
    Effect.repeat(Effect.andThen(Effect.yieldNow, Proposal.get(proposal!.id)), { until: (p) => p.status === status })
  return {
    id: proposal!.id,
    toolkit,
    human,
    deliveryStarted,
    delivered,
    keys,
    ui,
    untilStatus,
    stopHanging: () => hang = false
  }
})

describe("Proposal.approve, stopped half way", () => {
  it.effect("interrupted while the human decides: back to pending, and a later approval delivers once", () =>
    Effect.gen(function*() {
      const t = yield* setup
      const fiber = yield* Effect.forkChild(Proposal.approve(t.toolkit, t.id).pipe(Effect.provide(t.ui)))
      yield* t.untilStatus("approving")
      yield* Fiber.interrupt(fiber)
      expect((yield* Proposal.get(t.id)).status).toBe("pending")
      t.stopHanging()
      yield* Deferred.succeed(t.human, HumanConfirm.approve("agent:alice"))
      const approved = yield* Proposal.approve(t.toolkit, t.id).pipe(Effect.provide(t.ui))
      expect(approved.proposal.status).toBe("delivered")
      expect(t.delivered).toEqual(["hi"])
    }).pipe(Effect.provide(ProposalStore.memory)))

  it.effect("interrupted after its delivery began: in doubt with the reason, never delivered again by approve", () =>
    Effect.gen(function*() {
      const t = yield* setup
      yield* Deferred.succeed(t.human, HumanConfirm.approve("agent:alice"))
      const fiber = yield* Effect.forkChild(Proposal.approve(t.toolkit, t.id).pipe(Effect.provide(t.ui)))
      yield* Deferred.await(t.deliveryStarted)
      yield* Fiber.interrupt(fiber)
      const settled = yield* Proposal.get(t.id)
      expect(settled).toMatchObject({
        status: "in-doubt",
        deliveryKey: t.keys[0],
        decision: { reason: Proposal.interruptedWhileDelivering }
      })
      expect(settled.leaseUntil).toBeUndefined()
      t.stopHanging()
      const again = yield* Effect.flip(Proposal.approve(t.toolkit, t.id).pipe(Effect.provide(t.ui)))
      expect(again).toBeInstanceOf(ProposalStore.AlreadyDecided)
      expect(again).toMatchObject({ status: "in-doubt" })
      expect(t.delivered).toEqual([])
      expect(t.keys).toHaveLength(1)
      // Nor does recover touch it again.
      expect(yield* Proposal.recover).toEqual([])
    }).pipe(Effect.provide(ProposalStore.memory)))

  it.effect("a retry of an edited delivery in doubt shows and delivers the edit, under the same key; an edit on the retry is refused", () =>
    Effect.gen(function*() {
      const t = yield* setup
      yield* Deferred.succeed(t.human, HumanConfirm.approve("agent:alice", { text: "hi, edited by alice" }))
      const fiber = yield* Effect.forkChild(Proposal.approve(t.toolkit, t.id).pipe(Effect.provide(t.ui)))
      yield* Deferred.await(t.deliveryStarted)
      yield* Fiber.interrupt(fiber)
      expect(yield* Proposal.get(t.id)).toMatchObject({
        status: "in-doubt",
        approved: { text: "hi, edited by alice" },
        decision: { edited: true }
      })
      t.stopHanging()
      // Asked again: the human sees what was approved, not what the model proposed.
      const shown: Array<unknown> = []
      const retrying = (decision: HumanConfirm.Decision) =>
        Proposal.retry(t.toolkit, t.id).pipe(Effect.provide(HumanConfirm.layer({
          confirm: (view) => Effect.sync(() => (shown.push(view.payload), decision))
        })))
      const edited = yield* Effect.flip(retrying(HumanConfirm.approve("agent:bob", { text: "something else" })))
      expect(edited).toMatchObject({ _tag: "@graded/core/ToolError/Refused", gate: "proposal" })
      expect(t.delivered).toEqual([])
      expect((yield* Proposal.get(t.id)).status).toBe("in-doubt")
      const retried = yield* retrying(HumanConfirm.approve("agent:bob"))
      expect(retried.proposal.status).toBe("delivered")
      expect(shown).toEqual([{ text: "hi, edited by alice" }, { text: "hi, edited by alice" }])
      expect(t.delivered).toEqual(["hi, edited by alice"])
      expect(new Set(t.keys).size).toBe(1)
    }).pipe(Effect.provide(ProposalStore.memory)))

  it.effect("an approval gone past its lease goes back to pending, audited; the late approval delivers nothing and leaves the next human's approval alone", () =>
    Effect.gen(function*() {
      const t = yield* setup
      t.stopHanging()
      const audit = Audit.memory()
      const fiber = yield* Effect.forkChild(
        Proposal.approve(t.toolkit, t.id, { lease: "1 minute" }).pipe(Effect.provide(t.ui))
      )
      const claimed = yield* t.untilStatus("approving")
      expect(claimed.leaseUntil).toBe(new Date(60_000).toISOString())
      // Not yet past the lease: nothing to recover.
      expect(yield* Proposal.recover).toEqual([])
      yield* TestClock.adjust("2 minutes")
      const recovered = yield* Proposal.recover.pipe(Effect.provide(audit.layer))
      expect(recovered.map((p) => [p.id, p.status, p.decision])).toEqual([[t.id, "pending", undefined]])
      expect(audit.entries).toMatchObject([{ type: "refused", tool: "chat.notify", gate: "lease" }])
      // Another human takes it and is asked.
      const bob = yield* Deferred.make<HumanConfirm.Decision>()
      const second = yield* Effect.forkChild(
        Proposal.approve(t.toolkit, t.id).pipe(
          Effect.provide(HumanConfirm.layer({ confirm: () => Deferred.await(bob) })),
          Invocation.within({ actor: "agent:bob" })
        )
      )
      yield* t.untilStatus("approving")
      // The first human finally approves: the lease is gone, so nothing is sent, and bob's approval stands.
      yield* Deferred.succeed(t.human, HumanConfirm.approve("agent:alice"))
      const late = yield* Effect.flip(Fiber.join(fiber))
      expect(late).toBeInstanceOf(ProposalStore.AlreadyDecided)
      expect(t.delivered).toEqual([])
      expect(yield* Proposal.get(t.id)).toMatchObject({ status: "approving", decision: { by: "agent:bob" } })
      yield* Deferred.succeed(bob, HumanConfirm.approve("agent:bob"))
      expect((yield* Fiber.join(second)).proposal.status).toBe("delivered")
      expect(t.delivered).toEqual(["hi"])
    }).pipe(Effect.provide(ProposalStore.memory)))

  it.effect("a delivery gone past its lease: recover surfaces it in doubt; a human's retry delivers it with the same key", () =>
    Effect.gen(function*() {
      const t = yield* setup
      const audit = Audit.memory()
      yield* Deferred.succeed(t.human, HumanConfirm.approve("agent:alice"))
      const fiber = yield* Effect.forkChild(
        Proposal.approve(t.toolkit, t.id, { lease: "1 minute" }).pipe(
          Effect.provide(t.ui),
          Invocation.within({ actor: "agent:alice" })
        )
      )
      yield* Deferred.await(t.deliveryStarted)
      const delivering = yield* Proposal.get(t.id)
      expect(delivering).toMatchObject({ status: "delivering", deliveryKey: t.keys[0] })
      yield* TestClock.adjust("2 minutes")
      const recovered = yield* Proposal.recover.pipe(Effect.provide(audit.layer))
      expect(recovered).toMatchObject([{
        id: t.id,
        status: "in-doubt",
        deliveryKey: t.keys[0],
        decision: { by: "agent:alice", reason: ProposalStore.leaseEnded(delivering) }
      }])
      expect(audit.entries).toMatchObject([
        { type: "in-doubt", tool: "chat.notify", proposal: t.id, action: "surfaced", by: "agent:alice" }
      ])
      // The stopped process goes away without changing it.
      yield* Fiber.interrupt(fiber)
      expect((yield* Proposal.get(t.id)).status).toBe("in-doubt")
      // A retry asks the human again, and delivers under the first key.
      t.stopHanging()
      const retried = yield* Proposal.retry(t.toolkit, t.id).pipe(
        Effect.provide(HumanConfirm.layer(HumanConfirm.scripted([HumanConfirm.approve("agent:bob")]))),
        Invocation.within({ actor: "agent:bob" }),
        Effect.provide(audit.layer)
      )
      expect(retried.proposal).toMatchObject({ status: "delivered", deliveryKey: t.keys[0] })
      expect(t.keys).toHaveLength(2)
      expect(t.keys[1]).toBe(t.keys[0])
      expect(t.delivered).toEqual(["hi"])
      expect(audit.entries).toContainEqual(
        expect.objectContaining({ type: "in-doubt", proposal: t.id, action: "retried", by: "agent:bob" })
      )
      expect(audit.entries).toContainEqual(
        expect.objectContaining({ type: "decided", by: "agent:bob", decision: "approved" })
      )
      // Delivered: no second retry.
      expect(yield* Effect.flip(Proposal.retry(t.toolkit, t.id).pipe(Effect.provide(t.ui)))).toBeInstanceOf(
        ProposalStore.AlreadyDecided
      )
    }).pipe(Effect.provide(ProposalStore.memory)))

  it.effect("a retry turned down settles failed; a retry interrupted before it began stays in doubt", () =>
    Effect.gen(function*() {
      const t = yield* setup
      yield* Deferred.succeed(t.human, HumanConfirm.approve("agent:alice"))
      const fiber = yield* Effect.forkChild(Proposal.approve(t.toolkit, t.id).pipe(Effect.provide(t.ui)))
      yield* Deferred.await(t.deliveryStarted)
      yield* Fiber.interrupt(fiber)
      const inDoubt = yield* Proposal.get(t.id)
      expect(inDoubt.status).toBe("in-doubt")
      // Interrupted while the human decides: in doubt again, with its reason.
      const waiting = yield* Deferred.make<HumanConfirm.Decision>()
      const retry = yield* Effect.forkChild(
        Proposal.retry(t.toolkit, t.id).pipe(
          Effect.provide(HumanConfirm.layer({ confirm: () => Deferred.await(waiting) }))
        )
      )
      yield* t.untilStatus("approving")
      yield* Fiber.interrupt(retry)
      expect(yield* Proposal.get(t.id)).toMatchObject({
        status: "in-doubt",
        deliveryKey: inDoubt.deliveryKey,
        decision: { reason: Proposal.interruptedWhileDelivering }
      })
      const refused = yield* Effect.flip(
        Proposal.retry(t.toolkit, t.id).pipe(
          Effect.provide(HumanConfirm.layer(HumanConfirm.scripted([HumanConfirm.reject("agent:bob", "it went out")])))
        )
      )
      expect(refused).toMatchObject({ _tag: "@graded/core/ToolError/Rejected" })
      expect(yield* Proposal.get(t.id)).toMatchObject({
        status: "failed",
        decision: { by: "agent:bob", reason: "it went out" }
      })
      expect(t.delivered).toEqual([])
      expect(t.keys).toHaveLength(1)
    }).pipe(Effect.provide(ProposalStore.memory)))
})

describe("Proposal.markDone", () => {
  it.effect("settles an in-doubt delivery delivered in the human's name, audited; refused from a model's fiber", () =>
    Effect.gen(function*() {
      const t = yield* setup
      yield* Deferred.succeed(t.human, HumanConfirm.approve("agent:alice"))
      const fiber = yield* Effect.forkChild(Proposal.approve(t.toolkit, t.id).pipe(Effect.provide(t.ui)))
      yield* Deferred.await(t.deliveryStarted)
      // A delivery still running is not marked: it settles itself.
      expect(yield* Effect.flip(Proposal.markDone(t.id))).toMatchObject({ status: "delivering" })
      yield* Fiber.interrupt(fiber)
      expect((yield* Proposal.get(t.id)).status).toBe("in-doubt")
      const audit = Audit.memory()
      const byModel = yield* Effect.flip(
        Invocation.within({ autonomous: true, actor: "agent:bot" })(Proposal.markDone(t.id))
      )
      expect(byModel).toMatchObject({ _tag: "@graded/core/ToolError/Refused", gate: "autonomous" })
      expect((yield* Proposal.get(t.id)).status).toBe("in-doubt")
      const done = yield* Proposal.markDone(t.id, { note: "seen in the chat log" }).pipe(
        Invocation.within({ actor: "agent:carol" }),
        Effect.provide(audit.layer)
      )
      expect(done).toMatchObject({
        status: "delivered",
        decision: { by: "agent:carol", edited: false, reason: "seen in the chat log" }
      })
      expect(yield* Proposal.get(t.id)).toEqual(done)
      expect(audit.entries).toMatchObject([
        { type: "in-doubt", tool: "chat.notify", proposal: t.id, action: "marked-done", by: "agent:carol" }
      ])
      expect(t.delivered).toEqual([])
      // Delivered is final: not marked twice, not retried.
      expect(yield* Effect.flip(Proposal.markDone(t.id))).toBeInstanceOf(ProposalStore.AlreadyDecided)
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

  // A store written before `list`'s `traceId` filter ignores it and answers
  // with every pending proposal: the cap still counts only the run's own.
  const ignoresTrace = Layer.effect(
    ProposalStore.ProposalStore,
    Effect.map(ProposalStore.ProposalStore, (store) => ({
      ...store,
      list: (filter?: ProposalStore.ProposalStore.Filter) =>
        store.list(filter === undefined ? undefined : { status: filter.status, runId: filter.runId })
    }))
  ).pipe(Layer.provide(ProposalStore.memory))

  it.effect("a store that ignores the trace filter: other runs' proposals do not count against a run's cap", () =>
    Effect.gen(function*() {
      const { SendReply } = makeDesk()
      const registry = Registry.make(Toolkit.make(Tool.proposal(SendReply, { maxPendingPerTrace: 2 })))
      const propose = (traceId: string) =>
        registry.invoke("chat.sendMessage.propose", { text: "spam" }, { autonomous: true, traceId })
      const others = []
      for (let i = 0; i < 2; i++) others.push(yield* propose("t-other"))
      expect(others.map((r) => r.ok)).toEqual([true, true])
      const results = []
      for (let i = 0; i < 3; i++) results.push(yield* propose("t-flood"))
      expect(results.map((r) => r.ok)).toEqual([true, true, false])
      expect(results[2]?.error).toContain("this run has 2 proposals waiting")
      // The store answers every pending proposal, the other run's too.
      expect(yield* Proposal.list({ status: "pending", traceId: "t-flood" })).toHaveLength(4)
    }).pipe(Effect.provide(ignoresTrace)))
})
