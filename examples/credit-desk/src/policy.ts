// The credit desk's rules: who may see and call which tool, written as data.
// Grades (tools.ts) say what a tool can do; these say when it is allowed.
import { Effect, type Layer } from "effect"
import { Guard } from "@graded/core"
import { Condition, Contract, Fallback, Guideline, Policy } from "@graded/policy"
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
  Guideline.make("frozen-accounts", {
    description: "No money leaves a frozen account, whoever asks.",
    when: Condition.equals("facts.account.frozen", true),
    forbids: ["transfer.send"],
    priority: 10
  })
] as const

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
  Contract.make(desk.tools.Transfer, { failures: ["UnknownCustomer", "InsufficientFunds"] })
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
 * tenant a day, each queued for a human's review.
 */
const fallbackTools = ["kb.search"] as const

export const fallback = Fallback.config({
  tools: fallbackTools,
  perTrace: 2,
  perTenantPerDay: 20,
  answer: "I cannot help with that here; a colleague will look at your question and get back to you."
})

export const makePolicy = (desk: Desk) =>
  // The names again as literals: Fallback.config keeps them as strings, which Policy.make checks against the toolkit.
  Policy.make(guidelines, { toolkit: desk.toolkit, contracts: contracts(desk), fallback: { tools: fallbackTools } })

/**
 * The policy in force, with its fallback counted in the `Fallback.Store` in
 * scope: each fallback call is admitted (or answered with the fixed text past
 * the quota) by `Fallback.admit`.
 */
export const layer = (policy: Policy.Policy<any>): Layer.Layer<never, never, Fallback.Store> =>
  Guard.layer(Effect.gen(function*() {
    const store = yield* Fallback.Store
    return yield* Policy.guard(policy, (tool, input) =>
      Fallback.admit(fallback, tool.name, input).pipe(
        Effect.provideService(Fallback.Store, store),
        Effect.map((admission) => admission.granted ? undefined : { gate: "policy:fallback", reason: admission.answer })
      ))
  }))
