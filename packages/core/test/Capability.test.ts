import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { Capability, Tool } from "@graded/core"

describe("Capability.make", () => {
  it.effect("a user capability required by a tool is provided by its layer", () =>
    Effect.gen(function*() {
      const Consent = Capability.make("Consent")
      const CreditScore = Tool.read("credit.score", {
        title: "Credit score",
        description: "Needs the customer's consent.",
        input: Schema.Struct({ customer: Schema.String }),
        output: Schema.String,
        run: ({ customer }) => Effect.map(Consent, (grant) => `${customer}: 700 (consent by ${grant.by})`)
      })
      const score = yield* CreditScore.invoke({ customer: "c-1" }).pipe(Effect.provide(Consent.layer("customer:c-1")))
      expect(score).toBe("c-1: 700 (consent by customer:c-1)")
      expect(Consent.id).toBe("Consent")
      expect(Consent.key).toBe("@graded/core/Capability/Consent")
    }))
})
