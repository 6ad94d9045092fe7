// Usage per turn: what each model turn used (and cost, where the provider
// says), in the result, in the audit, and kept by a durable run across a wait.
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import {
  Agent,
  Audit,
  HumanConfirm,
  type LanguageModel,
  Proposal,
  ProposalStore,
  RunStore,
  Runs,
  ScriptedModel,
  Toolkit
} from "@graded/core"
import { makeDesk } from "./supportDesk.js"

const { call, calls, text } = ScriptedModel
const used = (response: LanguageModel.Response, usage: unknown): LanguageModel.Response =>
  ({ ...response, usage }) as LanguageModel.Response

describe("usage per turn", () => {
  it.effect("each turn's tokens and cost are in the result and the audit; the totals add them up", () =>
    Effect.gen(function*() {
      const desk = makeDesk()
      const audit = Audit.memory()
      const result = yield* Agent.run({ toolkit: Toolkit.make(desk.KbSearch), prompt: "Why?" }).pipe(
        Effect.provide(Layer.merge(
          ScriptedModel.layer([
            used(calls(call("kb.search", { query: "vat" })), { inputTokens: 100, outputTokens: 20, cost: 0.25 }),
            // Reported nothing: no entry, nothing added.
            calls(call("kb.search", { query: "refund" })),
            // A cost that is no amount is not taken.
            used(text("It is VAT."), { inputTokens: 150, outputTokens: 10, cost: -1 })
          ]),
          audit.layer
        ))
      )
      expect(result.turns).toEqual([
        { round: 1, usage: { inputTokens: 100, outputTokens: 20, cost: 0.25 } },
        { round: 3, usage: { inputTokens: 150, outputTokens: 10 } }
      ])
      expect(result.usage).toEqual({ inputTokens: 250, outputTokens: 30, cost: 0.25 })
      expect(audit.entries.filter((entry) => entry.type === "usage")).toMatchObject([
        { type: "usage", round: 1, inputTokens: 100, outputTokens: 20, cost: 0.25 },
        { type: "usage", round: 3, inputTokens: 150, outputTokens: 10 }
      ])
      expect(Audit.describe(audit.entries.find((entry) => entry.type === "usage")!)).toMatch(
        /round 1 used 100 input and 20 output tokens, cost 0.25/
      )
    }))

  it.effect("a durable run keeps each turn's usage while it waits for a human", () =>
    Effect.gen(function*() {
      const desk = makeDesk()
      const started = yield* Runs.start({ toolkit: desk.support, prompt: "Tell them.", runId: "u-1" })
      expect(started.status).toBe("waiting")
      if (started.status !== "waiting") return
      yield* Proposal.approve(desk.support, started.pending[0]!.id).pipe(
        Effect.provide(HumanConfirm.layer(HumanConfirm.scripted([HumanConfirm.approve("agent:alice")])))
      )
      const resumed = yield* Runs.resume("u-1", { toolkit: desk.support })
      expect(resumed.status === "finished" && resumed.result.turns).toEqual([
        { round: 1, usage: { inputTokens: 40, outputTokens: 5 } },
        { round: 2, usage: { inputTokens: 60, outputTokens: 3, cost: 0.01 } }
      ])
    }).pipe(Effect.provide(Layer.mergeAll(
      RunStore.memory,
      ProposalStore.memory,
      ScriptedModel.layer([
        used(calls(call("chat.sendMessage", { text: "Fixed." })), { inputTokens: 40, outputTokens: 5 }),
        used(text("Told them."), { inputTokens: 60, outputTokens: 3, cost: 0.01 })
      ])
    ))))
})
