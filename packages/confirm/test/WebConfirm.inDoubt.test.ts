// In-doubt deliveries, supervised runs and expiry on the web confirm page,
// over real HTTP: a delivery that stopped is a card of its own, marked done or
// retried (with the same delivery key) by whoever is signed in, once; a
// proposal shows the run waiting on it; an expired one is not offered and
// cannot be decided.
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Layer } from "effect"
import { TestClock } from "effect/testing"
import { Audit, HumanConfirm, Invocation, Proposal, ProposalStore, Runs, RunStore, ScriptedModel } from "@graded/core"
import { WebConfirm } from "@graded/confirm"
import { client, makeMailer } from "./proposalPage.js"

const people = { "token-of-alice-0123456789abcdef": "alice", "token-of-bob-0123456789abcdef00": "bob" }
const [alice, bob] = Object.keys(people) as [string, string]

// The server's decisions are audited where it was started: `audit`, when given.
const serving = (options: Partial<WebConfirm.Common> = {}, audit?: Audit.Memory) =>
  Effect.gen(function*() {
    const mailer = makeMailer()
    const { server } = yield* WebConfirm.make({ users: people, ...options, proposals: { toolkit: mailer.toolkit } })
      .pipe(Effect.provide(audit?.layer ?? Layer.empty))
    return { mailer, server, as: (token: string) => client(server.origin, token) }
  })

describe("WebConfirm: in-doubt deliveries", () => {
  it.live("a delivery that stopped is its own card, with its delivery key; marked done by the signed-in person, once", () =>
    Effect.gen(function*() {
      const audit = Audit.memory()
      const { as, mailer } = yield* serving({}, audit)
      const id = yield* mailer.propose("Your refund is on its way.")
      const stopped = yield* mailer.stopMidDelivery(id)
      expect(stopped).toMatchObject({ status: "in-doubt", deliveryKey: expect.any(String) })
      const [card, ...others] = yield* as(alice).cards
      expect(others).toEqual([])
      expect(card).toMatchObject({
        id,
        kind: "in-doubt",
        title: "In doubt: Send an email",
        deliveryKey: stopped.deliveryKey,
        payload: { to: "customer:42", text: "Your refund is on its way." }
      })
      expect(card.description).toContain("This delivery stopped and may have gone out (approved by agent:alice)")
      // A body naming someone else is ignored: the decider is who signed in.
      const marked = yield* as(alice).resolve(card, { by: "mallory", action: "mark-done", note: "seen in the outbox" })
      expect(marked).toEqual({ status: 200, body: { message: "Marked done by alice." } })
      expect(yield* Proposal.get(id)).toMatchObject({
        status: "delivered",
        decision: { by: "alice", reason: "seen in the outbox" }
      })
      expect(audit.entries).toMatchObject([{ type: "in-doubt", action: "marked-done", by: "alice", proposal: id }])
      // Settled: gone from the page, and a replay is told who settled it.
      expect(yield* as(alice).cards).toEqual([])
      const replay = yield* as(bob).resolve(card, { action: "mark-done" })
      expect(replay).toMatchObject({
        status: 409,
        body: { error: `already decided by alice (delivered): ${id} was not delivered again`, by: "alice" }
      })
      expect(mailer.state.sent).toEqual([])
    }).pipe(Effect.provide(ProposalStore.memory)))

  it.live("a delivery whose process stopped is listed in doubt once its lease passed, recovered by the page itself", () =>
    Effect.gen(function*() {
      const audit = Audit.memory()
      const { as, mailer } = yield* serving({}, audit)
      const id = yield* mailer.propose("Your refund is on its way.")
      // Approved elsewhere with a short lease, then stuck inside `deliver`: as
      // a process that hung or died there, nobody settles it and nobody runs
      // Proposal.recover but the page.
      mailer.state.stall = true
      const stuck = yield* Effect.forkChild(
        Proposal.approve(mailer.toolkit, id, { lease: "100 millis" }).pipe(
          Effect.provide(HumanConfirm.layer(HumanConfirm.scripted([HumanConfirm.approve("agent:alice")]))),
          Invocation.within({ actor: "agent:alice" })
        )
      )
      while (mailer.state.entered === 0) yield* Effect.sleep("5 millis")
      expect((yield* Proposal.get(id)).status).toBe("delivering")
      // Listed as the page polls it, until the lease has passed (generously bounded).
      let cards = yield* as(alice).cards
      for (let i = 0; i < 200 && cards.length === 0; i++) {
        yield* Effect.sleep("25 millis")
        cards = yield* as(alice).cards
      }
      expect(cards).toMatchObject([{ id, kind: "in-doubt", deliveryKey: expect.any(String) }])
      expect((yield* Proposal.get(id)).status).toBe("in-doubt")
      expect(audit.entries).toContainEqual(
        expect.objectContaining({ type: "in-doubt", action: "surfaced", proposal: id, by: "agent:alice" })
      )
      yield* Fiber.interrupt(stuck)
      expect(mailer.state.sent).toEqual([])
    }).pipe(Effect.provide(ProposalStore.memory)))

  it.live("a retry asks through the page, delivers what the card showed with the same delivery key, once", () =>
    Effect.gen(function*() {
      const audit = Audit.memory()
      const { as, mailer } = yield* serving({}, audit)
      const id = yield* mailer.propose("Your refund is on its way.")
      const { deliveryKey } = yield* mailer.stopMidDelivery(id)
      const [card] = yield* as(bob).cards
      const retried = yield* as(bob).resolve(card, { action: "retry" })
      expect(retried).toEqual({
        status: 200,
        body: { message: "Retried by bob: delivered with the same delivery key." }
      })
      expect(mailer.state.sent).toEqual([{
        payload: { to: "customer:42", text: "Your refund is on its way." },
        key: deliveryKey
      }])
      expect(yield* Proposal.get(id)).toMatchObject({ status: "delivered", decision: { by: "bob" }, deliveryKey })
      expect(audit.entries.filter((entry) => entry.type === "in-doubt")).toMatchObject([
        { action: "retried", by: "bob", proposal: id }
      ])
      const again = yield* as(alice).resolve(card, { action: "retry" })
      expect(again).toMatchObject({ status: 409, body: { by: "bob", status: "delivered" } })
      expect(yield* as(alice).resolve(card, { action: "mark-done" })).toMatchObject({ status: 409 })
      expect(mailer.state.sent).toHaveLength(1)
    }).pipe(Effect.provide(ProposalStore.memory)))

  it.live("a card cut short can be marked done, never retried: what would go out again was not all shown", () =>
    Effect.gen(function*() {
      const { as, mailer } = yield* serving({ maxChars: 60 })
      const id = yield* mailer.propose("x".repeat(500))
      yield* mailer.stopMidDelivery(id)
      const [card] = yield* as(alice).cards
      expect(card.cut).toContainEqual({ field: "payload", shown: 60, total: 539 })
      const retry = yield* as(alice).resolve(card, { action: "retry" })
      expect(retry.status).toBe(422)
      expect(retry.body.error).toMatch(/not shown in full .*: it can be marked done, not retried$/)
      expect(yield* Proposal.get(id)).toMatchObject({ status: "in-doubt" })
      expect(yield* as(alice).resolve(card, { action: "mark-done" })).toMatchObject({ status: 200 })
      expect(mailer.state.sent).toEqual([])
    }).pipe(Effect.provide(ProposalStore.memory)))

  it.live("an edited delivery in doubt shows the edit on its card, and a retry delivers the edit", () =>
    Effect.gen(function*() {
      const { as, mailer } = yield* serving()
      const id = yield* mailer.propose("Your refund is on its way.")
      const edited = { to: "customer:42", text: "Your refund of 40 EUR is on its way." }
      const { deliveryKey } = yield* mailer.stopMidDelivery(id, "agent:alice", edited)
      const [card] = yield* as(bob).cards
      // The card shows what alice approved, not what the model proposed.
      expect(card).toMatchObject({ kind: "in-doubt", payload: edited })
      const retried = yield* as(bob).resolve(card, { action: "retry" })
      expect(retried).toMatchObject({ status: 200 })
      expect(mailer.state.sent).toEqual([{ payload: edited, key: deliveryKey }])
      expect(yield* Proposal.get(id)).toMatchObject({ status: "delivered", approved: edited })
    }).pipe(Effect.provide(ProposalStore.memory)))

  it.live("a retry of a record changed since the card was shown is refused and leaves it in doubt", () =>
    Effect.gen(function*() {
      const { as, mailer } = yield* serving()
      const id = yield* mailer.propose("Your refund is on its way.")
      yield* mailer.stopMidDelivery(id)
      const [card] = yield* as(alice).cards
      // The store's record changes under the page (a tampered row, a bad migration).
      tampering.on = true
      const retry = yield* as(alice).resolve(card, { action: "retry" })
      expect(retry).toEqual({
        status: 409,
        body: { error: `${id} changed since the card was shown: reload the page; nothing was retried` }
      })
      tampering.on = false
      expect(yield* Proposal.get(id)).toMatchObject({ status: "in-doubt" })
      expect(mailer.state.sent).toEqual([])
    }).pipe(Effect.provide(Layer.provide(tampering.layer, ProposalStore.memory))))
})

// A store whose records read back changed while `on` (graded's own stores are
// frozen: a wrapper stands in for a tampered database).
const tampering = {
  on: false,
  layer: Layer.effect(
    ProposalStore.ProposalStore,
    Effect.map(ProposalStore.ProposalStore, (store): ProposalStore.ProposalStore.Service => ({
      ...store,
      get: (id) =>
        tampering.on
          ? Effect.map(
            store.get(id),
            // What a card shows and a retry delivers: the payload, and what was approved.
            (proposal) => ({
              ...proposal,
              payload: { to: "attacker@example.com", text: "hi" },
              ...(proposal.approved !== undefined ? { approved: { to: "attacker@example.com", text: "hi" } } : {})
            })
          )
          : store.get(id)
    }))
  )
}

describe("WebConfirm: supervised runs and expiry", () => {
  it.live("a proposal a run waits on shows the run; approved on the page, the run resumes and finishes", () =>
    Effect.gen(function*() {
      const { as, mailer } = yield* serving()
      const stores = yield* Effect.map(
        Layer.build(
          Layer.merge(RunStore.memory, Layer.succeedContext(yield* Effect.context<ProposalStore.ProposalStore>()))
        ),
        Layer.succeedContext
      )
      const started = yield* Runs.start({ toolkit: mailer.toolkit, prompt: "Tell them", runId: "run-7" }).pipe(
        Effect.provide(ScriptedModel.layer([
          ScriptedModel.calls(ScriptedModel.call("mail.send", { to: "customer:42", text: "Done!" }))
        ])),
        Effect.provide(stores)
      )
      expect(started.status).toBe("waiting")
      const [card] = yield* as(alice).cards
      expect(card).toMatchObject({ kind: "proposal", runId: "run-7", payload: { to: "customer:42", text: "Done!" } })
      expect(yield* as(alice).decide(card, { action: "approve" }))
        .toEqual({ status: 200, body: { message: "Approved by alice." } })
      const resumed = yield* Runs.resume("run-7", { toolkit: mailer.toolkit }).pipe(
        Effect.provide(ScriptedModel.layer([ScriptedModel.text("Sent.")])),
        Effect.provide(stores)
      )
      expect(resumed.status).toBe("finished")
      expect(mailer.state.sent.map((sent) => sent.payload.text)).toEqual(["Done!"])
    }).pipe(Effect.provide(ProposalStore.memory)))

  // On the TestClock: the card is listed before it expires however slow the machine.
  it.effect("an expired proposal is not offered, and deciding it anyway is 409 expired; nothing is sent", () =>
    Effect.gen(function*() {
      const { as, mailer } = yield* serving()
      const id = yield* mailer.propose("Only for a minute", { expireAfter: "1 minute" })
      const [card] = yield* as(alice).cards
      expect(card).toMatchObject({ id, expiresAt: (yield* Proposal.get(id)).expiresAt })
      yield* TestClock.adjust("61 seconds")
      // Before any listing has recovered it, the store still says pending: the page refuses it anyway.
      for (const body of [{ action: "approve" }, { action: "edit", payload: card.payload }, { action: "reject" }]) {
        const answer = yield* as(alice).decide(card, body)
        expect(answer.status).toBe(409)
        expect(answer.body.error).toMatch(new RegExp(`^expired: no human decided ${id} before `))
      }
      expect((yield* Proposal.get(id)).status).toBe("pending")
      // The next listing recovers first: the store marks it expired, and the page says the same.
      expect(yield* as(alice).cards).toEqual([])
      expect((yield* Proposal.get(id)).status).toBe("expired")
      const late = yield* as(alice).decide(card, { action: "approve" })
      expect(late.status).toBe(409)
      expect(late.body.error).toMatch(new RegExp(`^expired: no human decided ${id} before `))
      expect(mailer.state.sent).toEqual([])
    }).pipe(Effect.provide(ProposalStore.memory)))
})
