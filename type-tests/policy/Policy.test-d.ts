import { Effect, Schema } from "effect"
import { expectError, expectType } from "tsd"
import { type HumanConfirm, Tool, Toolkit } from "@graded/core"
import { Condition, Guideline, Policy } from "@graded/policy"

const CreditScore = Tool.read("credit.score", {
  title: "Credit score",
  description: "The customer's credit score.",
  input: Schema.Struct({ customer: Schema.String }),
  output: Schema.Number,
  run: () => Effect.succeed(742)
})
const SubmitTicket = Tool.write("ticket.submit", {
  title: "Submit a ticket",
  description: "File a ticket.",
  input: Schema.Struct({ subject: Schema.String }),
  output: Schema.String,
  run: () => Effect.succeed("T-1")
})
const Transfer = Tool.send("transfer.send", {
  title: "Transfer",
  description: "Move money.",
  input: Schema.Struct({ amount: Schema.Number }),
  payload: Schema.Struct({ amount: Schema.Number }),
  output: Schema.Boolean,
  prepare: (input) => Effect.succeed(input),
  deliver: () => Effect.succeed(true)
})
const toolkit = Toolkit.make(CreditScore, SubmitTicket, Transfer)

// Rejected: a guideline meant for a model acting alone cannot authorize a write or a send.

// error: guideline auto-transfer is autonomous but authorizes transfer.send (send): a guideline cannot lift a grade; only HumanConfirm can
expectError(Policy.make([
  Guideline.make("auto-transfer", {
    description: "x",
    when: Condition.always,
    tools: ["transfer.send"],
    autonomous: true
  })
], { toolkit }))

// error: guideline auto-tickets is autonomous but authorizes ticket.submit (write)
expectError(Policy.make([
  Guideline.make("scores", { description: "x", when: Condition.always, tools: ["credit.score"], autonomous: true }),
  Guideline.make("auto-tickets", {
    description: "x",
    when: Condition.always,
    tools: ["ticket.submit"],
    autonomous: true
  })
], { toolkit }))

// Rejected: a guideline naming a tool the toolkit does not have.

// error: guideline typo names credit.scor, which is not in the toolkit
expectError(Policy.make([
  Guideline.make("typo", { description: "x", when: Condition.always, tools: ["credit.scor"] })
], { toolkit }))

// Accepted: an autonomous guideline over read tools; writes and sends
// authorized for supervised work (a human still confirms each).
const policy = Policy.make([
  Guideline.make("scores", {
    description: "x",
    when: Condition.role("credit-officer"),
    tools: ["credit.score"],
    autonomous: true
  }),
  Guideline.make("desk", {
    description: "x",
    when: Condition.role("credit-officer"),
    tools: ["ticket.submit", "transfer.send"]
  })
], { toolkit })
expectType<Policy.Policy<typeof toolkit>>(policy)

// Accepted: names typed as string are checked when the policy is made.
declare const names: ReadonlyArray<string>
expectType<Policy.Policy<typeof toolkit>>(
  Policy.make([Guideline.make("dynamic", { description: "x", when: Condition.always, tools: names })], { toolkit })
)

// The message type is the text Policy.make throws at run time.
expectType<"guideline g names t, which is not in the toolkit">({} as Policy.UnknownTool<"g", "t">)

// autoApprove written as a guideline: a write tool only; a send always asks.

// error: HumanConfirm.autoApprove takes one write tool: transfer.send is a send tool, and a send always asks a human
expectError(Guideline.autoApprove("auto-transfers", { description: "x", tool: Transfer, when: Condition.always }))

expectType<HumanConfirm.AutoApprove>(
  Guideline.autoApprove("auto-tickets", { description: "x", tool: SubmitTicket, when: Condition.always })
)
