// The credit desk's rules: who may see and call which tool, written as data.
// Grades (tools.ts) say what a tool can do; these say when it is allowed.
import { Layer } from "effect"
import { Check, Condition, Contract, Fallback, Guideline, Policy } from "@graded/policy"
import type { Desk } from "./tools.js"

export const roles = { support: "support", officer: "credit-officer" } as const

export const guidelines = [
  Guideline.make("desk-basics", {
    description: "Support agents and credit officers search articles, look up accounts, file tickets and " +
      "tell customers things.",
    when: Condition.role(roles.support, roles.officer),
    tools: ["kb.search", "account.balance", "ticket.submit", "customer.notify"]
  }),
  Guideline.make("credit-scores", {
    description: "Credit officers look up credit scores (the customer's consent is the contract's precondition).",
    when: Condition.role(roles.officer),
    tools: ["credit.score"]
  }),
  Guideline.make("transfers", {
    description: "Credit officers prepare transfers; a human confirms each one.",
    when: Condition.role(roles.officer),
    tools: ["transfer.send"]
  }),
  // Holds with the account never looked up: a forbid over a fact never
  // recorded stands, so the transfer waits for the lookup (and the transfer's
  // own code checks the lookup was of the account the money leaves).
  Guideline.make("frozen-accounts", {
    description: "No money leaves a frozen account, whoever asks.",
    when: Condition.equals("facts.account.frozen", true),
    forbids: ["transfer.send"],
    priority: 10
  })
] as const

/** The values the context can take, for `Check.run`: a misspelt role or fact value is then a finding. */
export const declared: Check.Declared = {
  roles: [roles.support, roles.officer, "customer"],
  consents: ["credit-check"],
  facts: { "account.frozen": [true, false], "customer.channel": ["sms", "email"] }
}

export const contracts = (desk: Desk) => [
  Contract.make(desk.tools.CreditScore, {
    preconditions: [
      Contract.precondition(
        "credit-consent",
        Condition.has("consents", "credit-check"),
        "We need the customer's consent before checking their credit."
      )
    ],
    failures: ["UnknownCustomer"]
  }),
  Contract.make(desk.tools.Notify, {
    preconditions: [
      Contract.precondition(
        "channel-known",
        Condition.isIn("facts.customer.channel", ["sms", "email"]),
        "Look up the customer's account first: it says how they want to be contacted."
      )
    ],
    failures: ["UnknownCustomer", "NotLookedUp"]
  }),
  Contract.make(desk.tools.Transfer, { failures: ["UnknownCustomer", "NotLookedUp", "InsufficientFunds"] })
]

/** The UI layer's rule: a low-priority ticket is filed without asking; a high-priority one asks. */
export const lowPriorityTickets = (desk: Desk) =>
  Guideline.autoApprove("low-priority-tickets", {
    description: "Routine (low-priority) tickets are filed without asking the human.",
    tool: desk.tools.SubmitTicket,
    when: Condition.equals("input.priority", "low")
  })

/**
 * When no guideline matches (a caller in a role nobody wrote rules for), the
 * knowledge-base search may still run: two calls a conversation, twenty a
 * tenant a day, each counted and queued for a human's review in the
 * `Fallback.Store` in scope when the policy's layer is built.
 */
export const fallback = Fallback.config({
  tools: ["kb.search"],
  perTrace: 2,
  perTenantPerDay: 20,
  answer: "I cannot help with that here; a colleague will look at your question and get back to you."
})

export const makePolicy = (desk: Desk) =>
  Policy.make(guidelines, {
    toolkit: desk.toolkit,
    contracts: contracts(desk),
    declared,
    // The names as literals: Fallback.config keeps them as strings, and Policy.make checks them against the toolkit.
    fallback: { ...fallback, tools: ["kb.search"] }
  })

/** The policy in force, its fallback counted in a store in memory (a SQL one in production: `SqlFallbackStore.beside(Sql.sqlite(...))`). */
export const layer = (policy: Policy.Policy<any>): Layer.Layer<Fallback.Store> =>
  Policy.layer(policy).pipe(Layer.provideMerge(Fallback.memory))
