// The credit desk's audit as OpenTelemetry spans (Audit.otel): a policy's
// candidate sets per role, with the guidelines that matched and the reasons
// for what was left out, on the turn spans; the support agent's refusal with
// its policy gate and reason; the officer's transfer with its decider.
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer, Tracer } from "effect"
import { memoryTracer } from "../../../test/memoryTracer.js"
import { Audit } from "@graded/core"
import { run } from "../src/story.js"

describe("the credit desk's traces", () => {
  it.effect("carry each role's candidate set, the guidelines, what was left out and why, refusals and the decider", () =>
    Effect.gen(function*() {
      const story = yield* run({ log: () => {} })
      const { ended, tracer } = memoryTracer()
      // The story's entries, written through the sink as they were recorded.
      const sink = Context.get(
        yield* Layer.build(Audit.otel().pipe(Layer.provide(Layer.succeed(Tracer.Tracer, tracer)))),
        Audit.Audit
      )
      for (const entry of story.entries) yield* sink.write(entry)

      const runs = ended.filter((span) => span.name === "invoke_agent graded")
      const offerOf = (actor: string) =>
        runs.find((span) => span.attributes["graded.actor"] === actor && span.attributes["graded.tools.offered"])!
      // The support agent: the score left out by the role guideline, with its reason.
      const support = offerOf("agent:alice").attributes
      expect(support["graded.tools.offered"]).not.toContain("credit.score")
      const left = support["graded.tools.left_out"] as ReadonlyArray<string>
      const at = left.indexOf("credit.score")
      expect(at).toBeGreaterThanOrEqual(0)
      expect((support["graded.tools.left_out.gates"] as ReadonlyArray<string>)[at]).toBe("policy:role")
      expect((support["graded.tools.left_out.reasons"] as ReadonlyArray<string>)[at]).toContain("credit-scores")
      // The officer: offered the score, under the guideline that allows it.
      const officer = offerOf("officer:ravi").attributes
      expect(officer["graded.tools.offered"]).toContain("credit.score")
      expect(officer["graded.policy.guidelines"]).toContain("credit-scores")
      // Every offer of the officer's transfer run is an event of its span, each turn's set kept.
      const officerOffers = runs.filter((span) => span.attributes["graded.actor"] === "officer:ravi")
        .map((span) => span.events.filter((name) => name === "graded.offered").length)
      expect(Math.max(...officerOffers)).toBeGreaterThan(1)
      // The support agent naming the score anyway: refused at the policy's gate, the reason exported (it is the policy's own).
      const refusal = ended.find((span) =>
        span.name === "execute_tool credit.score" && span.attributes["graded.refusal.gate"] === "policy:role"
      )
      expect(refusal?.attributes["graded.refusal.reason"]).toEqual(expect.stringContaining("credit-scores"))
      // The transfer: approved by the officer, delivered under its key.
      const transfer = ended.find((span) => span.name === "execute_tool transfer.send")!
      expect(transfer.attributes).toMatchObject({
        "graded.grade": "send",
        "graded.decision": "approved",
        "graded.decider": "officer:ravi",
        "graded.edited": false
      })
      expect(transfer.attributes["graded.idempotency_key"]).toEqual(expect.any(String))
    }).pipe(Effect.scoped))
})
