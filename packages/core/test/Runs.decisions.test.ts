// A human's decision on a run's proposal, judged and told as the call would be
// in the loop: on the facts the run recorded, and with the tool's own text for
// a failure. Agent.supervised runs the same loop, so the same holds there.
import { describe, expect, it } from "@effect/vitest"
import { Data, Effect, Layer, Schema } from "effect"
import { Agent, Guard, HumanConfirm, Proposal, Runs, ScriptedModel, Tool, Toolkit } from "@graded/core"
import { human, results, stores } from "./runsFixture.js"

const { call, calls, text } = ScriptedModel

class Down extends Data.TaggedError("Down")<{ readonly detail: string }> {}

// A desk whose payment a policy allows only once the run checked the
// account (a fact a read records), and whose refund fails.
const makeDesk = () => {
  const paid: Array<number> = []
  const Check = Tool.read("account.check", {
    title: "Check the account",
    description: "Whether the account is verified.",
    input: Schema.Struct({}),
    output: Schema.Struct({ verified: Schema.Boolean }),
    facts: { verified: (output) => output.verified },
    run: () => Effect.succeed({ verified: true })
  })
  const Pay = Tool.write("payments.send", {
    title: "Pay",
    description: "Pay an amount.",
    input: Schema.Struct({ amount: Schema.Number }),
    output: Schema.Struct({ paid: Schema.Number }),
    run: ({ amount }) => Effect.sync(() => (paid.push(amount), { paid: amount }))
  })
  const Refund = Tool.write("payments.refund", {
    title: "Refund",
    description: "Refund an amount.",
    input: Schema.Struct({ amount: Schema.Number }),
    output: Schema.Struct({ refunded: Schema.Number }),
    failureMessages: { Down: "The payment service is down; nothing was refunded." },
    run: () => Effect.fail(new Down({ detail: "ECONNREFUSED 10.0.0.7:443 (internal)" }))
  })
  return { paid, toolkit: Toolkit.make(Check, Pay, Refund) }
}

// Payments only for a verified account: absent, the fact refuses.
const verifiedOnly: Guard.Guard = {
  name: "verified",
  screen: () => Effect.succeed({ left: new Map() }),
  admit: ({ context, tool }) =>
    Effect.succeed(
      tool.name === "payments.send" && context.facts?.verified !== true
        ? { gate: "guideline", reason: "payments need a verified account" }
        : undefined
    )
}

describe("a decision on a run's proposal", () => {
  it.effect("is judged on the facts the run recorded: a payment its read allowed is delivered when the human approves", () =>
    Effect.gen(function*() {
      const desk = makeDesk()
      const kept = yield* stores()
      const started = yield* Runs.start({ toolkit: desk.toolkit, prompt: "Pay 5.", runId: "run-pay" }).pipe(
        Guard.within(verifiedOnly),
        Effect.provide(ScriptedModel.layer([
          calls(call("account.check", {})),
          calls(call("payments.send", { amount: 5 }))
        ])),
        Effect.provide(kept)
      )
      expect(started.status).toBe("waiting")
      if (started.status !== "waiting") return
      // The human's own fiber holds no fact; the run's record that the account is verified.
      const approved = yield* Proposal.approve(desk.toolkit, started.pending[0]!.id).pipe(
        human("agent:alice", HumanConfirm.approve("agent:alice")),
        Guard.within(verifiedOnly),
        Effect.result,
        Effect.provide(kept)
      )
      expect(approved._tag).toBe("Success")
      expect(desk.paid).toEqual([5])
    }))

  it.effect("that fails tells the model the tool's own text for the failure, not the exception's", () =>
    Effect.gen(function*() {
      const desk = makeDesk()
      const kept = yield* stores()
      const started = yield* Runs.start({ toolkit: desk.toolkit, prompt: "Refund 5.", runId: "run-refund" }).pipe(
        Effect.provide(ScriptedModel.layer([calls(call("payments.refund", { amount: 5 }))])),
        Effect.provide(kept)
      )
      if (started.status !== "waiting") return expect.unreachable()
      yield* Proposal.approve(desk.toolkit, started.pending[0]!.id).pipe(
        human("agent:alice", HumanConfirm.approve("agent:alice")),
        Effect.ignore,
        Effect.provide(kept)
      )
      const ended = yield* Runs.resume("run-refund", { toolkit: desk.toolkit }).pipe(
        Effect.provide(ScriptedModel.layer([text("Could not refund.")])),
        Effect.provide(kept)
      )
      if (ended.status !== "finished") return expect.unreachable()
      const told = results(ended.result.messages)[0]
      expect(told).toMatchObject({
        ok: false,
        code: "failed",
        error: "The payment service is down; nothing was refunded."
      })
      expect(JSON.stringify(ended.result.messages)).not.toContain("ECONNREFUSED")
    }))
})

describe("Agent.supervised, the same loop", () => {
  it.effect("an edited write's call is the input the human approved, and the model is told of the edit", () =>
    Effect.gen(function*() {
      const desk = makeDesk()
      const result = yield* Agent.supervised({ toolkit: desk.toolkit, prompt: "Pay 5." }).pipe(
        Effect.provide(Layer.merge(
          ScriptedModel.layer([calls(call("payments.send", { amount: 500 })), text("Paid.")]),
          HumanConfirm.layer(HumanConfirm.scripted([HumanConfirm.approve("agent:alice", { amount: 5 })]))
        ))
      )
      expect(desk.paid).toEqual([5])
      expect(result.calls).toMatchObject([{ ok: true, tool: "payments.send", input: { amount: 5 } }])
      expect(results(result.messages)[0]).toMatchObject({ ok: true, note: "agent:alice approved it with an edit" })
    }))

  it.effect("a payment the policy refuses is refused to the model before anyone is asked, and the run goes on", () =>
    Effect.gen(function*() {
      const desk = makeDesk()
      // No check first: the fact is absent, so the policy refuses the payment
      // (when proposed, before any human is asked).
      const ui = HumanConfirm.scripted([HumanConfirm.approve("agent:alice")])
      const result = yield* Agent.supervised({ toolkit: desk.toolkit, prompt: "Pay 5." }).pipe(
        Guard.within(verifiedOnly),
        Effect.provide(Layer.merge(
          ScriptedModel.layer([calls(call("payments.send", { amount: 5 })), text("Could not pay.")]),
          HumanConfirm.layer(ui)
        ))
      )
      expect(desk.paid).toEqual([])
      expect(ui.seen).toEqual([])
      expect(result.calls).toMatchObject([{ ok: false, tool: "payments.send", error: { code: "refused" } }])
      expect(result.answer).toBe("Could not pay.")
    }))
})
