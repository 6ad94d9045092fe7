import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { TestClock } from "effect/testing"
import {
  Agent,
  Audit,
  HumanConfirm,
  Invocation,
  Proposal,
  ProposalStore,
  Registry,
  ScriptedModel,
  Tool,
  Toolkit
} from "@graded/core"
import { makeDesk } from "./supportDesk.js"

const { call, calls, text } = ScriptedModel

// The human, through a UI: approving a proposal asks them like any other write or send.
const as = (...decisions: ReadonlyArray<HumanConfirm.Decision>) =>
  Effect.provide(HumanConfirm.layer(HumanConfirm.scripted(decisions)))

// The agent proposes; nothing is written or sent until a human approves.
const proposeBoth = (desk: ReturnType<typeof makeDesk>) =>
  Agent.run({
    toolkit: Toolkit.make(desk.KbSearch, Tool.proposal(desk.SubmitTicket), Tool.proposal(desk.SendReply)),
    prompt: "File it and tell the customer",
    context: { actor: "agent:bot" }
  }).pipe(
    Effect.provide(ScriptedModel.layer([
      calls(
        call("ticket.submit.propose", { subject: "VAT number wrong" }),
        call("chat.sendMessage.propose", { text: "We are on it." })
      ),
      text("Proposed both for a human.")
    ]))
  )

describe("Tool.proposal and Proposal", () => {
  it.effect("a model proposes a write and a send; nothing happens until a human decides", () =>
    Effect.gen(function*() {
      const desk = makeDesk()
      const result = yield* proposeBoth(desk)
      expect(result.calls.map((c) => c.ok)).toEqual([true, true])
      expect(desk.effects).toMatchObject({ submitted: [], delivered: [], prepared: 1 })
      const pending = yield* Proposal.list({ status: "pending" })
      expect(pending.map((p) => [p.tool, p.grade, p.payload, p.actor])).toEqual([
        ["ticket.submit", "write", { subject: "VAT number wrong" }, "agent:bot"],
        ["chat.sendMessage", "send", { to: "customer:42", text: "We are on it." }, "agent:bot"]
      ])
    }).pipe(Effect.provide(ProposalStore.memory)))

  it.effect("approval delivers exactly once; a second approval delivers nothing and says why", () =>
    Effect.gen(function*() {
      const desk = makeDesk()
      yield* proposeBoth(desk)
      const [ticket, message] = yield* Proposal.list()
      const approved = yield* Proposal.approve(desk.support, message!.id).pipe(as(HumanConfirm.approve("agent:alice")))
      expect(approved.proposal).toMatchObject({ status: "delivered", decision: { by: "agent:alice", edited: false } })
      expect(desk.effects.delivered).toEqual([{ to: "customer:42", text: "We are on it." }])
      const again = yield* Effect.flip(
        Proposal.approve(desk.support, message!.id).pipe(as(HumanConfirm.approve("agent:bob")))
      )
      expect(again).toBeInstanceOf(ProposalStore.AlreadyDecided)
      expect(again.message).toMatch(
        new RegExp(
          `^Proposal ${
            message!.id
          } was already decided \\(delivered by agent:alice at \\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z\\); nothing was delivered again$`
        )
      )
      expect(desk.effects.delivered).toEqual([{ to: "customer:42", text: "We are on it." }])
      // The write, approved with an edit.
      yield* Proposal.approve(desk.support, ticket!.id).pipe(
        as(HumanConfirm.approve("agent:alice", { subject: "VAT number (edited)" }))
      )
      expect(desk.effects.submitted).toEqual(["VAT number (edited)"])
      expect((yield* ProposalStore.ProposalStore.pipe(Effect.flatMap((s) => s.get(ticket!.id)))).decision?.edited).toBe(
        true
      )
    }).pipe(Effect.provide(ProposalStore.memory)))

  it.effect("an invalid edit delivers nothing and leaves the proposal pending", () =>
    Effect.gen(function*() {
      const desk = makeDesk()
      yield* proposeBoth(desk)
      const [, message] = yield* Proposal.list()
      const error = yield* Effect.flip(
        Proposal.approve(desk.support, message!.id).pipe(
          as(HumanConfirm.approve("agent:alice", { to: "customer:42", text: "" }))
        )
      )
      expect(error).toMatchObject({ _tag: "@graded/core/ToolError/InvalidEdit" })
      expect(desk.effects.delivered).toEqual([])
      expect((yield* Proposal.list({ status: "pending" })).map((p) => p.id)).toContain(message!.id)
    }).pipe(Effect.provide(ProposalStore.memory)))

  it.effect("rejection delivers nothing, is audited with who and why, and approval after it is refused", () => {
    const audit = Audit.memory()
    return Effect.gen(function*() {
      const desk = makeDesk()
      yield* proposeBoth(desk)
      const [, message] = yield* Proposal.list()
      const rejected = yield* Proposal.reject(message!.id, { by: "agent:alice", reason: "not our tone" })
      expect(rejected).toMatchObject({ status: "rejected", decision: { by: "agent:alice", reason: "not our tone" } })
      expect(audit.entries.filter((entry) => entry.type === "decided")).toMatchObject([
        { tool: message!.tool, by: "agent:alice", decision: "rejected", edited: false, reason: "not our tone" }
      ])
      const late = yield* Effect.flip(
        Proposal.approve(desk.support, message!.id).pipe(as(HumanConfirm.approve("agent:bob")))
      )
      expect(late).toBeInstanceOf(ProposalStore.AlreadyDecided)
      expect(desk.effects.delivered).toEqual([])
    }).pipe(Effect.provide(Layer.merge(ProposalStore.memory, audit.layer)))
  })

  it.effect("fifty concurrent approvals of one proposal deliver once", () =>
    Effect.gen(function*() {
      const desk = makeDesk()
      yield* proposeBoth(desk)
      const [, message] = yield* Proposal.list()
      const outcomes = yield* Effect.forEach(
        Array.from({ length: 50 }, (_, i) => i),
        (i) => Effect.result(Proposal.approve(desk.support, message!.id).pipe(as(HumanConfirm.approve(`agent:${i}`)))),
        { concurrency: "unbounded" }
      )
      expect(outcomes.filter((o) => o._tag === "Success")).toHaveLength(1)
      expect(desk.effects.delivered).toHaveLength(1)
    }).pipe(Effect.provide(ProposalStore.memory)))

  it.effect("approving from a fiber running for a model is refused and leaves the proposal pending", () =>
    Effect.gen(function*() {
      const desk = makeDesk()
      yield* proposeBoth(desk)
      const [, message] = yield* Proposal.list()
      const error = yield* Effect.flip(
        Invocation.within({ autonomous: true })(
          Proposal.approve(desk.support, message!.id).pipe(as(HumanConfirm.approve("agent:bot")))
        )
      )
      expect(error).toMatchObject({ _tag: "@graded/core/ToolError/Refused", gate: "autonomous" })
      expect(desk.effects.delivered).toEqual([])
      expect((yield* Proposal.list({ status: "pending" })).map((p) => p.id)).toContain(message!.id)
    }).pipe(Effect.provide(ProposalStore.memory)))

  it.effect("each delivery goes out under the key recorded before it ran: a send's Confirmed, a write's run", () =>
    Effect.gen(function*() {
      const desk = makeDesk()
      yield* proposeBoth(desk)
      const [ticket, message] = yield* Proposal.list()
      const sent = yield* Proposal.approve(desk.support, message!.id).pipe(as(HumanConfirm.approve("agent:alice")))
      const written = yield* Proposal.approve(desk.support, ticket!.id).pipe(as(HumanConfirm.approve("agent:alice")))
      expect(sent.proposal.deliveryKey).toEqual(expect.any(String))
      expect(written.proposal.deliveryKey).toEqual(expect.any(String))
      expect(desk.effects.keys).toEqual({
        sent: [sent.proposal.deliveryKey],
        submitted: [written.proposal.deliveryKey]
      })
      expect(sent.proposal.deliveryKey).not.toBe(written.proposal.deliveryKey)
      expect(yield* Proposal.get(message!.id)).toMatchObject({ deliveryKey: sent.proposal.deliveryKey })
    }).pipe(Effect.provide(ProposalStore.memory)))

  it.effect("expireAfter: past its expiry a proposal cannot be approved, and recover marks the others expired", () =>
    Effect.gen(function*() {
      const desk = makeDesk()
      const registry = Registry.make(Toolkit.make(Tool.proposal(desk.SendReply, { expireAfter: "10 minutes" })))
      for (const text of ["first", "second"]) {
        yield* registry.invoke("chat.sendMessage.propose", { text }, { autonomous: true, traceId: "t-1" })
      }
      const [first, second] = yield* Proposal.list()
      expect(first!.expiresAt).toBe(new Date(10 * 60_000).toISOString())
      yield* TestClock.adjust("10 minutes")
      const late = yield* Effect.flip(
        Proposal.approve(desk.support, first!.id).pipe(as(HumanConfirm.approve("agent:alice")))
      )
      expect(late).toBeInstanceOf(ProposalStore.AlreadyDecided)
      expect(late).toMatchObject({ status: "expired" })
      expect(desk.effects.delivered).toEqual([])
      const audit = Audit.memory()
      const recovered = yield* Proposal.recover.pipe(Effect.provide(audit.layer))
      expect(recovered.map((p) => [p.id, p.status, p.decision?.reason])).toEqual([
        [second!.id, "expired", ProposalStore.expiredReason(second!)]
      ])
      expect(audit.entries).toMatchObject([
        { type: "refused", tool: "chat.sendMessage", gate: "expiry", reason: ProposalStore.expiredReason(second!) }
      ])
      expect((yield* Proposal.list({ status: "expired" })).map((p) => p.id)).toEqual([first!.id, second!.id])
    }).pipe(Effect.provide(ProposalStore.memory)))
})
