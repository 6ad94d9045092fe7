import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import {
  HumanConfirm,
  Invocation,
  type LanguageModel,
  Proposal,
  ProposalStore,
  Runs,
  RunStore,
  ScriptedModel
} from "@graded/core"
import { Policy } from "@graded/policy"
import { guidelines, makeDesk } from "./creditDesk.js"

const { call, calls, text } = ScriptedModel

// A supervised run under a policy outlives its process: the facts its tools
// recorded are stored with it, so the resumed turn is judged as the first
// process would have judged it.
describe("Policy and durable runs", () => {
  it.effect("facts recorded before a run waits still open the guidelines that need them after it resumes", () =>
    Effect.gen(function*() {
      const desk = makeDesk()
      const policy = Policy.make(guidelines, { toolkit: desk.toolkit })
      const kept = yield* Effect.map(
        Layer.build(Layer.merge(RunStore.memory, ProposalStore.memory)),
        Layer.succeedContext
      )
      const started = yield* Runs.start({
        toolkit: desk.toolkit,
        prompt: "Check c-1's score and move 500 to savings.",
        runId: "run-1",
        context: {
          actor: "agent:bot",
          role: "credit-officer",
          consents: ["credit-check"],
          facts: { "account.frozen": false }
        }
      }).pipe(
        Effect.provide(ScriptedModel.layer([
          calls(call("credit.score", { customer: "c-1" }), call("transfer.send", { to: "savings", amount: 500 }))
        ])),
        Effect.provide(Policy.layer(policy)),
        Effect.provide(kept)
      )
      expect(started.status).toBe("waiting")
      if (started.status !== "waiting") return
      const stored = yield* RunStore.RunStore.use((runs) => runs.get("run-1")).pipe(Effect.provide(kept))
      expect(stored.state.facts).toEqual({ "credit.band": "good" })
      yield* Proposal.approve(desk.toolkit, started.pending[0]!.id).pipe(
        Invocation.within({ actor: "agent:alice", role: "credit-officer", facts: { "account.frozen": false } }),
        Effect.provide(HumanConfirm.layer(HumanConfirm.scripted([HumanConfirm.approve("agent:alice")]))),
        Effect.provide(Policy.layer(policy)),
        Effect.provide(kept)
      )
      expect(desk.ran.transfers).toBe(1)
      // Another process: the same policy, the stores, a model.
      const offered: Array<ReadonlyArray<string>> = []
      const resumed = yield* Runs.resume("run-1", { toolkit: desk.toolkit }).pipe(
        Effect.provide(ScriptedModel.layer([
          (
            request: LanguageModel.Request
          ) => (offered.push(request.tools.map((tool) => tool.name)), text("Done; a loan is possible."))
        ])),
        Effect.provide(Policy.layer(policy)),
        Effect.provide(kept)
      )
      expect(resumed.status).toBe("finished")
      expect(offered[0]).toContain("loan__offer")
      expect(offered[0]).toContain("transfer__send")
    }))
})
