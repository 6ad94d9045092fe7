// The desk with two specialists, each an agent the desk's own agent calls as a
// tool (Agent.tool). The researcher holds only reads, so it is a read tool:
// the autonomous agent may call it. The billing specialist may issue refunds,
// a write, so it is a write tool: the autonomous agent cannot hold it (the
// compiler says why, below), and in a supervised run every refund it issues
// waits for the human, whose card shows the exact refund and who asked for it.
import { Effect, Layer, Schema } from "effect"
import { Agent, HumanConfirm, type LanguageModel, Tool, Toolkit } from "@graded/core"
import * as Desk from "./desk.js"
import { CurrentConversation, CustomerLookup, KbSearch } from "./tools.js"

/** The refunds issued, in order: the billing system, in memory. */
export interface Refunds {
  readonly issued: Array<{ readonly customerId: string; readonly amount: number; readonly key: string }>
}

export const refundTool = (refunds: Refunds) =>
  Tool.write("refund.issue", {
    title: "Issue a refund",
    description: "Refund an amount in euros to a customer's card.",
    input: Schema.Struct({ customerId: Schema.String, amount: Schema.Number, reason: Schema.String }),
    output: Schema.Struct({ refunded: Schema.Number }),
    sideEffects: ["moves money back to the customer's card"],
    // The key names this refund at the payment provider: a retry refunds nothing twice.
    run: ({ amount, customerId }, { idempotencyKey }) =>
      Effect.sync(() => {
        if (!refunds.issued.some((refund) => refund.key === idempotencyKey)) {
          refunds.issued.push({ customerId, amount, key: idempotencyKey })
        }
        return { refunded: amount }
      })
  })

export const Researcher = Agent.tool("agent.researcher", {
  title: "Researcher",
  description: "Finds what the help centre and the customer's history say about a question.",
  toolkit: Toolkit.make(KbSearch, CustomerLookup),
  instructions: "Search the help centre and the customer's past tickets, then answer in two sentences.",
  input: Schema.Struct({ question: Schema.String, customerId: Schema.String }),
  prompt: ({ customerId, question }) => `Customer ${customerId} asks: ${question}`
})

export const billingSpecialist = (refunds: Refunds) =>
  Agent.tool("agent.billing", {
    title: "Billing specialist",
    description: "Handles invoices and refunds for a customer.",
    toolkit: Toolkit.make(CustomerLookup, refundTool(refunds)),
    instructions: "Check the customer's plan, then issue the refund the desk asks for, if it is due.",
    input: Schema.Struct({ customerId: Schema.String, request: Schema.String }),
    prompt: ({ customerId, request }) => `For customer ${customerId}: ${request}`
  })

/** The autonomous desk agent: reads, and the researcher. */
export const answer = (question: string) =>
  Agent.run({
    toolkit: Toolkit.make(CurrentConversation, Researcher),
    prompt: question,
    system: "Answer the customer in the current conversation; ask the researcher what you do not know.",
    budget: { rounds: 12, calls: 24 }
  })

// What the compiler says to an autonomous agent handed the billing specialist:
const _autonomousBilling = (refunds: Refunds) =>
  Agent.run({
    // @ts-expect-error: Agent.run takes read tools only: agent.billing → refund.issue (write) needs WriteCapability
    toolkit: Toolkit.make(CurrentConversation, billingSpecialist(refunds)),
    prompt: "Refund her."
  })
void _autonomousBilling

/** The supervised desk agent: the researcher and the billing specialist, a human deciding each refund. */
export const handle = (request: string, refunds: Refunds) =>
  Agent.supervised({
    toolkit: Toolkit.make(CurrentConversation, Researcher, billingSpecialist(refunds)),
    prompt: request,
    system: "Resolve the customer's request. Ask the billing specialist for refunds."
  })

/** The desk's systems and a human at the terminal or the web page (`ui`), with a model. */
export const layer = (
  outbox: Desk.Outbox,
  model: Layer.Layer<LanguageModel.LanguageModel>,
  ui: HumanConfirm.UI
) => Layer.mergeAll(Desk.layer(outbox), model, HumanConfirm.layer(ui))
