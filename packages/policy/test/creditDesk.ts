// A small credit desk the policy tests share: one tool of each grade, a
// credit-score read with tags, a side effect and a recorded fact, and the
// guidelines of the article's finance scenario. Counts what really ran.
import { Data, Effect, Schema } from "effect"
import { Tool, Toolkit } from "@graded/core"
import { Condition, Contract, Guideline } from "@graded/policy"

export class BureauDown extends Data.TaggedError("BureauDown")<{}> {}

export const makeDesk = () => {
  const ran = { searches: 0, scores: [] as Array<string>, balances: 0, offers: 0, tickets: 0, transfers: 0 }
  const KbSearch = Tool.read("kb.search", {
    title: "Search the knowledge base",
    description: "Find articles that answer a question.",
    input: Schema.Struct({ query: Schema.String }),
    output: Schema.Array(Schema.String),
    run: ({ query }) => Effect.sync(() => (ran.searches++, [`About ${query}`]))
  })
  const AccountBalance = Tool.read("account.balance", {
    title: "Account balance",
    description: "A customer's balance.",
    input: Schema.Struct({ customer: Schema.String }),
    output: Schema.Struct({ balance: Schema.Number, frozen: Schema.Boolean }),
    tags: ["pii"],
    facts: { "account.frozen": (output) => output.frozen },
    run: ({ customer }) => Effect.sync(() => (ran.balances++, { balance: 120, frozen: customer === "frozen" }))
  })
  const CreditScore = Tool.read("credit.score", {
    title: "Credit score",
    description: "The customer's credit score from the bureau.",
    input: Schema.Struct({ customer: Schema.String }),
    output: Schema.Struct({ score: Schema.Number, band: Schema.String }),
    tags: ["pii", "credit-bureau"],
    sideEffects: ["records an inquiry at the credit bureau"],
    failureMessages: { BureauDown: "The credit bureau is not answering; try again later." },
    facts: { "credit.band": (output) => output.band },
    run: ({ customer }): Effect.Effect<{ score: number; band: string }, BureauDown> =>
      customer === "down" ? Effect.fail(new BureauDown())
        : Effect.sync(() => (ran.scores.push(customer), { score: 742, band: "good" }))
  })
  const LoanOffer = Tool.read("loan.offer", {
    title: "Loan offer",
    description: "The loan the customer may be offered.",
    input: Schema.Struct({ customer: Schema.String }),
    output: Schema.Struct({ amount: Schema.Number }),
    run: () => Effect.sync(() => (ran.offers++, { amount: 5000 }))
  })
  const SubmitTicket = Tool.write("ticket.submit", {
    title: "Submit a ticket",
    description: "File a support ticket.",
    input: Schema.Struct({ subject: Schema.String }),
    output: Schema.Struct({ id: Schema.String }),
    sideEffects: ["creates a ticket in the queue"],
    run: () => Effect.sync(() => ({ id: `T-${++ran.tickets}` }))
  })
  const Transfer = Tool.send("transfer.send", {
    title: "Transfer money",
    description: "Move money to another account.",
    input: Schema.Struct({ to: Schema.String, amount: Schema.Number }),
    payload: Schema.Struct({ to: Schema.String, amount: Schema.Number }),
    output: Schema.Struct({ done: Schema.Boolean }),
    tags: ["payments"],
    sideEffects: ["moves money out of the customer's account"],
    prepare: (input) => Effect.succeed(input),
    deliver: () => Effect.sync(() => (ran.transfers++, { done: true }))
  })
  const toolkit = Toolkit.make(KbSearch, AccountBalance, CreditScore, LoanOffer, SubmitTicket, Transfer)
  return { ran, toolkit, tools: { KbSearch, AccountBalance, CreditScore, LoanOffer, SubmitTicket, Transfer } }
}

export const guidelines = [
  Guideline.make("desk-basics", {
    description: "Support agents and credit officers search articles, read balances and file tickets.",
    when: Condition.role("support", "credit-officer"),
    tools: ["kb.search", "account.balance", "ticket.submit"]
  }),
  Guideline.make("credit-scores", {
    description: "Credit officers look up a consenting customer's credit score.",
    when: Condition.and(Condition.role("credit-officer"), Condition.has("consents", "credit-check")),
    tools: ["credit.score"]
  }),
  Guideline.make("loan-offers", {
    description: "A loan is offered once the score came back good.",
    when: Condition.equals("facts.credit.band", "good"),
    requires: ["credit-scores"],
    tools: ["loan.offer"]
  }),
  Guideline.make("transfers", {
    description: "Credit officers may prepare transfers; a human confirms each.",
    when: Condition.role("credit-officer"),
    tools: ["transfer.send"]
  }),
  Guideline.make("frozen-accounts", {
    description: "No transfer leaves a frozen account.",
    when: Condition.equals("facts.account.frozen", true),
    forbids: ["transfer.send"],
    priority: 10
  })
] as const

export const contracts = (desk: ReturnType<typeof makeDesk>) => [
  Contract.make(desk.tools.CreditScore, {
    preconditions: [
      Contract.precondition(
        "consent",
        Condition.has("consents", "credit-check"),
        "We need the customer's consent before checking their credit."
      )
    ],
    failures: ["BureauDown"]
  })
]
