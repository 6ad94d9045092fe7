import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import {
  Agent,
  Audit,
  HumanConfirm,
  Invocation,
  Proposal,
  ProposalStore,
  ScriptedModel,
  Tool,
  Toolkit
} from "@graded/core"
import { Condition, Guideline, Policy } from "@graded/policy"
import { makeDesk } from "./creditDesk.js"

const { call, calls, text } = ScriptedModel

// The human's button is offered only where a guideline authorizes the tool
// for the human who presses it: a support agent cannot approve a transfer a
// credit officer's agent proposed.
describe("Policy and proposals", () => {
  it.effect("approving a proposal is refused for a human the policy does not authorize; allowed for one it does", () =>
    Effect.gen(function*() {
      const desk = makeDesk()
      const ProposeTransfer = Tool.proposal(desk.tools.Transfer)
      const toolkit = Toolkit.make(...desk.toolkit.tools, ProposeTransfer)
      const policy = Policy.make([
        Guideline.make("transfers", {
          description: "Credit officers prepare transfers; a human confirms each.",
          when: Condition.role("credit-officer"),
          tools: ["transfer.send", "transfer.send.propose"]
        })
      ], { toolkit })
      const audit = Audit.memory()
      const inForce = Layer.merge(Policy.layer(policy), audit.layer)
      yield* Agent.run({
        toolkit: Toolkit.make(ProposeTransfer),
        prompt: "Move 500 to savings",
        context: { role: "credit-officer", actor: "agent:bot" }
      }).pipe(
        Effect.provide(
          ScriptedModel.layer([calls(call("transfer.send.propose", { to: "savings", amount: 500 })), text("Proposed.")])
        ),
        Effect.provide(inForce)
      )
      const [proposal] = yield* Proposal.list({ status: "pending" })
      expect(proposal?.tool).toBe("transfer.send")
      const ui = HumanConfirm.scripted([HumanConfirm.approve("agent:alice")])
      const refused = yield* Proposal.approve(toolkit, proposal!.id).pipe(
        Invocation.within({ actor: "agent:sam", role: "support" }),
        Effect.provide(HumanConfirm.layer(ui)),
        Effect.provide(inForce),
        Effect.flip
      )
      expect(refused).toMatchObject({ _tag: "@graded/core/ToolError/Refused", gate: "policy:role" })
      expect(ui.seen).toEqual([])
      expect(desk.ran.transfers).toBe(0)
      expect((yield* Proposal.list({ status: "pending" })).map((p) => p.id)).toEqual([proposal!.id])
      const approved = yield* Proposal.approve(toolkit, proposal!.id).pipe(
        Invocation.within({ actor: "agent:alice", role: "credit-officer" }),
        Effect.provide(HumanConfirm.layer(ui)),
        Effect.provide(inForce)
      )
      expect(approved.proposal.status).toBe("delivered")
      expect(desk.ran.transfers).toBe(1)
      expect(audit.entries.find((entry) => entry.type === "delivered")).toMatchObject({
        tool: "transfer.send",
        tags: ["payments"],
        sideEffects: ["moves money out of the customer's account"]
      })
    }).pipe(Effect.provide(ProposalStore.memory)))
})
