import { Effect, Layer, Schema } from "effect"
import { expectError, expectType } from "tsd"
import { Capability, HumanTrigger, SendCapability, Tool, ToolError, WriteCapability } from "@graded/core"
import { SendReply, SubmitTicket } from "./fixtures.js"

// Rejected: capabilities made by hand, with Layer.succeed or provideService.

// error: Property '[internal.OnlyGradedLayersGrantThis]' is missing
expectError(Layer.succeed(WriteCapability, { authorize: () => Effect.die("forged") }))

// error: Property '[internal.OnlyGradedLayersGrantThis]' is missing
expectError(Layer.succeed(SendCapability, { confirm: () => Effect.die("forged") }))

// error: Property '[internal.OnlyGradedLayersGrantThis]' is missing
expectError(Layer.succeed(HumanTrigger, { by: "model", via: "hallucination" }))

// error: Property '[internal.OnlyGradedLayersGrantThis]' is missing
expectError(Effect.provideService(SendReply.invoke({ text: "Hi" }), SendCapability, { confirm: () => Effect.die("forged") }))

// error: Property '[internal.OnlyGradedLayersGrantThis]' is missing
expectError(Effect.provideService(SubmitTicket.invoke({ subject: "x" }), WriteCapability, { authorize: () => Effect.die("forged") }))

// error: Property '[internal.OnlyGradedLayersGrantThis]' is missing
expectError(Effect.provideService(Effect.void, HumanTrigger, { by: "model", via: "hallucination" }))

// User capabilities follow the same rule.
const Consent = Capability.make("Consent")

// error: Property '[internal.OnlyGradedLayersGrantThis]' is missing
expectError(Layer.succeed(Consent, { by: "model" }))

// Accepted: a user capability required by a tool and provided by its layer.
const CreditScore = Tool.read("credit.score", {
  title: "Credit score",
  description: "Needs consent.",
  input: Schema.Struct({ customer: Schema.String }),
  output: Schema.Number,
  run: () => Effect.as(Consent, 700)
})
const scored = CreditScore.invoke({ customer: "c-1" })
expectType<Effect.Effect<number, ToolError.ToolError<never>, Capability.Custom<"Consent">>>(scored)
expectType<Effect.Effect<number, ToolError.ToolError<never>, never>>(
  Effect.provide(scored, Consent.layer("customer:c-1"))
)
