// The credit desk's tools: the article's finance scenario. Each tool says what
// it can do to the world (its grade), what it touches (tags) and what a call
// changes (side effects); the policy (policy.ts) says when it is allowed.
//
// `customer.notify` is one semantic action with two channels. The model sees
// one tool, "tell the customer", with the customer and the text; `prepare`
// binds it to SMS or e-mail from the context: the fact `customer.channel`,
// recorded by `account.balance` in an agent run, or set by the app on a
// human's screen. The human confirming the send sees the channel and the
// address in the payload; `deliver` uses the one they confirmed.
import { Data, Effect, Schema } from "effect"
import { Invocation, Tool, Toolkit } from "@graded/core"

/** The bank behind the desk: accounts, and what actually left it (messages, money, tickets). */
export interface Bank {
  readonly customers: Readonly<Record<string, Customer>>
  readonly transfers: Array<{ readonly customer: string; readonly to: string; readonly amount: number }>
  readonly sms: Array<{ readonly to: string; readonly text: string }>
  readonly email: Array<{ readonly to: string; readonly text: string }>
  readonly tickets: Array<{ readonly id: string; readonly subject: string; readonly priority: string }>
  /** Inquiries the credit bureau recorded: the credit score's side effect. */
  readonly inquiries: Array<string>
}

export interface Customer {
  readonly name: string
  readonly balance: number
  readonly frozen: boolean
  readonly score: number
  /** How the customer asked to be told things. */
  readonly channel: "sms" | "email"
  readonly phone: string
  readonly email: string
}

export const makeBank = (): Bank => ({
  customers: {
    "c-42": {
      name: "Mei Lin",
      balance: 2400,
      frozen: false,
      score: 742,
      channel: "sms",
      phone: "+44 7700 900042",
      email: "mei.lin@example.com"
    },
    "c-7": {
      name: "Tom Berg",
      balance: 310,
      frozen: false,
      score: 655,
      channel: "email",
      phone: "+44 7700 900007",
      email: "tom.berg@example.com"
    },
    "c-13": {
      name: "Ada Frost",
      balance: 90,
      frozen: true,
      score: 580,
      channel: "email",
      phone: "+44 7700 900013",
      email: "ada.frost@example.com"
    }
  },
  transfers: [],
  sms: [],
  email: [],
  tickets: [],
  inquiries: []
})

export class UnknownCustomer extends Data.TaggedError("UnknownCustomer")<{ readonly customer: string }> {}
export class NotLookedUp extends Data.TaggedError("NotLookedUp")<{ readonly customer: string }> {}
export class InsufficientFunds extends Data.TaggedError("InsufficientFunds")<{}> {}

const Customer = Schema.String.check(Schema.isPattern(/^c-\d{1,6}$/))

const find = (bank: Bank, customer: string) =>
  customer in bank.customers ? Effect.succeed(bank.customers[customer]!)
    : Effect.fail(new UnknownCustomer({ customer }))

/** The channel a notification goes out on, from the context: what the app or the account lookup recorded. */
export const channelFacts = { channel: "customer.channel", customer: "customer.id" } as const

export const makeTools = (bank: Bank) => {
  const KbSearch = Tool.read("kb.search", {
    title: "Search the knowledge base",
    description: "Find help articles for a customer's question.",
    input: Schema.Struct({ query: Schema.String }),
    output: Schema.Array(Schema.Struct({ id: Schema.String, title: Schema.String })),
    run: ({ query }) => Effect.succeed([{ id: "kb-12", title: `Moving money between your accounts (${query})` }])
  })

  const AccountBalance = Tool.read("account.balance", {
    title: "Account balance",
    description: "Look up a customer's account: balance, whether it is frozen, how they like to be contacted.",
    input: Schema.Struct({ customer: Customer }),
    output: Schema.Struct({
      customer: Schema.String,
      balance: Schema.Number,
      frozen: Schema.Boolean,
      contact: Schema.Literals(["sms", "email"])
    }),
    tags: ["pii"],
    failureMessages: { UnknownCustomer: "There is no customer with that number." },
    // What the lookup records for the rest of the run: the policy and
    // customer.notify read these, never the model's words.
    facts: {
      "account.frozen": (output) => output.frozen,
      [channelFacts.channel]: (output) => output.contact,
      [channelFacts.customer]: (output) => output.customer
    },
    run: ({ customer }) =>
      Effect.map(find(bank, customer), (found) => ({
        customer,
        balance: found.balance,
        frozen: found.frozen,
        contact: found.channel
      }))
  })

  const CreditScore = Tool.read("credit.score", {
    title: "Credit score",
    description: "The customer's credit score from the credit bureau.",
    input: Schema.Struct({ customer: Customer }),
    output: Schema.Struct({ score: Schema.Number, band: Schema.Literals(["poor", "fair", "good"]) }),
    tags: ["pii", "credit-bureau"],
    sideEffects: ["records an inquiry at the credit bureau"],
    failureMessages: { UnknownCustomer: "There is no customer with that number." },
    facts: { "credit.band": (output) => output.band },
    run: ({ customer }) =>
      Effect.flatMap(find(bank, customer), (found) =>
        Effect.sync(() => {
          bank.inquiries.push(customer)
          return {
            score: found.score,
            band: found.score >= 700 ? "good" as const : found.score >= 600 ? "fair" : "poor"
          }
        }))
  })

  const SubmitTicket = Tool.write("ticket.submit", {
    title: "Submit a ticket",
    description: "File a ticket for the back office. Priority low for routine requests.",
    input: Schema.Struct({
      customer: Customer,
      subject: Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(200)),
      priority: Schema.Literals(["low", "high"])
    }),
    output: Schema.Struct({ id: Schema.String }),
    sideEffects: ["creates a ticket in the back-office queue"],
    run: ({ priority, subject }) =>
      Effect.sync(() => {
        const id = `T-${2000 + bank.tickets.length + 1}`
        bank.tickets.push({ id, subject, priority })
        return { id }
      })
  })

  const Transfer = Tool.send("transfer.send", {
    title: "Transfer money",
    description: "Move money from the customer's account to another account.",
    input: Schema.Struct({
      customer: Customer,
      to: Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(64)),
      amount: Schema.Number.check(Schema.isGreaterThan(0), Schema.isLessThanOrEqualTo(10_000))
    }),
    payload: Schema.Struct({ customer: Schema.String, to: Schema.String, amount: Schema.Number }),
    output: Schema.Struct({ done: Schema.Boolean }),
    tags: ["payments"],
    sideEffects: ["moves money out of the customer's account"],
    failureMessages: {
      UnknownCustomer: "There is no customer with that number.",
      NotLookedUp: "Look up this customer's account first: a transfer needs to know whether it is frozen.",
      InsufficientFunds: "The account does not hold enough money for this transfer."
    },
    // The policy's frozen-account rule reads the fact account.frozen: it is
    // about this account only if this account was the last one looked up.
    prepare: (input) =>
      Effect.gen(function*() {
        const { facts } = yield* Invocation.current
        if (facts?.[channelFacts.customer] !== input.customer) {
          return yield* Effect.fail(new NotLookedUp({ customer: input.customer }))
        }
        const found = yield* find(bank, input.customer)
        return found.balance < input.amount ? yield* Effect.fail(new InsufficientFunds()) : input
      }),
    deliver: ({ payload }) => Effect.sync(() => (bank.transfers.push(payload), { done: true }))
  })

  const Notify = Tool.send("customer.notify", {
    title: "Notify the customer",
    description: "Tell the customer something. The channel (SMS or e-mail) is chosen for you.",
    input: Schema.Struct({
      customer: Customer,
      text: Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(480))
    }),
    payload: Schema.Struct({ channel: Schema.Literals(["sms", "email"]), to: Schema.String, text: Schema.String }),
    output: Schema.Struct({ channel: Schema.Literals(["sms", "email"]) }),
    tags: ["pii"],
    sideEffects: ["sends the customer an SMS or an e-mail"],
    failureMessages: {
      UnknownCustomer: "There is no customer with that number.",
      NotLookedUp: "Look up this customer's account first: it says how they want to be contacted."
    },
    // The binding: the channel is a fact of the context, recorded for this
    // customer; the address comes from the bank's records, never from the model.
    prepare: ({ customer, text }) =>
      Effect.gen(function*() {
        const { facts } = yield* Invocation.current
        const channel = facts?.[channelFacts.channel]
        if (facts?.[channelFacts.customer] !== customer || (channel !== "sms" && channel !== "email")) {
          return yield* Effect.fail(new NotLookedUp({ customer }))
        }
        const found = yield* find(bank, customer)
        return { channel, to: channel === "sms" ? found.phone : found.email, text }
      }),
    deliver: ({ payload }) =>
      Effect.sync(() => {
        bank[payload.channel].push({ to: payload.to, text: payload.text })
        return { channel: payload.channel }
      })
  })

  const tools = { KbSearch, AccountBalance, CreditScore, SubmitTicket, Transfer, Notify }
  const toolkit = Toolkit.make(KbSearch, AccountBalance, CreditScore, SubmitTicket, Transfer, Notify)
  return { tools, toolkit }
}

export type Desk = ReturnType<typeof makeTools>
