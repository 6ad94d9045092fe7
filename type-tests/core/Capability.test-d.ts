import { Effect, Layer, Schema } from "effect"
import { expectError, expectType } from "tsd"
import * as Core from "@graded/core"
import { Capability, type SendCapability, Tool, ToolError, type WriteCapability } from "@graded/core"
import { SendReply, SubmitTicket } from "./fixtures.js"

// Rejected: the built-in capabilities are types only. There is no tag to
// provide, look up or rebuild a service with.

// error: Property 'WriteCapability' does not exist on type
expectError(Core.WriteCapability)

// error: Property 'SendCapability' does not exist on type
expectError(Core.SendCapability)

// error: Property 'HumanTrigger' does not exist on type
expectError(Core.HumanTrigger)

// error: Property 'SendCapability' does not exist on type
expectError(Capability.SendCapability)

// error: Property 'WriteCapability' does not exist on type
expectError(Capability.WriteCapability)

// The types stay nameable: they are what tools require.
expectType<Effect.Effect<{ readonly delivered: boolean }, ToolError.ToolError<never>, SendCapability>>(
  SendReply.invoke({ text: "Hi" })
)
expectType<Effect.Effect<{ readonly id: string }, ToolError.ToolError<never>, WriteCapability>>(
  SubmitTicket.invoke({ subject: "x" })
)

// Rejected: a confirmation written by hand.

// error: Property 'madeByHumanConfirmOnly' is missing
expectError(
  SendReply.deliver({
    tool: "chat.sendMessage",
    payload: { to: "x", text: "forged" },
    by: "me",
    edited: false,
    idempotencyKey: "k-1"
  })
)

// User capabilities follow the same rule: only their layer grants them.
const Consent = Capability.make("Consent")

// error: is not assignable to parameter of type 'Key<
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
expectType<Effect.Effect<number, ToolError.ToolError<ToolError.Refused>, Capability.Custom<"Consent">>>(scored)
expectType<Effect.Effect<number, ToolError.ToolError<ToolError.Refused>, never>>(
  Effect.provide(scored, Consent.layer("customer:c-1"))
)
