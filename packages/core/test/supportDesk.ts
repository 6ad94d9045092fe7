// The support desk the tests share (core's, confirm's, openai's, and the type
// tests' write and send tools): one tool of each grade in `support`, a second
// read tool, each counting what it really did. A fresh desk per test.
// Other packages' tests import this file by its path; it imports only public
// modules, so it never reaches into core's internal/ (test/imports.test.ts).
import { Effect, Schema } from "effect"
import { Agent, Tool, Toolkit } from "@graded/core"

export const Article = Schema.Struct({ id: Schema.String, title: Schema.String })

// Trimmed: a reply of only spaces is no reply (the web confirm page refuses such an edit).
export const Payload = Schema.Struct({ to: Schema.String, text: Schema.Trimmed.check(Schema.isNonEmpty()) })

export const makeDesk = () => {
  const effects = {
    searches: [] as Array<string>,
    submitted: [] as Array<string>,
    prepared: 0,
    delivered: [] as Array<typeof Payload.Type>,
    // The idempotency key each delivery was given, in order: a send's
    // `Confirmed.idempotencyKey`, a write's `{ idempotencyKey }`.
    keys: { sent: [] as Array<string>, submitted: [] as Array<string> }
  }
  const KbSearch = Tool.read("kb.search", {
    title: "Search the knowledge base",
    description: "Find articles that answer a question.",
    input: Schema.Struct({ query: Schema.String, limit: Schema.optional(Schema.Number) }),
    output: Schema.Array(Article),
    run: ({ query }) =>
      Effect.sync(() => {
        effects.searches.push(query)
        // `secret` is not in the output schema: encoding must drop it.
        return [{ id: "kb-1", title: `About ${query}`, secret: "internal" }]
      })
  })
  const CustomerLookup = Tool.read("customer.lookup", {
    title: "Look up a customer",
    description: "A customer by id.",
    input: Schema.Struct({ id: Schema.String }),
    output: Schema.Struct({ name: Schema.String }),
    run: () => Effect.succeed({ name: "Mei Lin" })
  })
  const SubmitTicket = Tool.write("ticket.submit", {
    title: "Submit a ticket",
    description: "File a support ticket.",
    input: Schema.Struct({ subject: Schema.String }),
    output: Schema.Struct({ id: Schema.String }),
    run: ({ subject }, { idempotencyKey }) =>
      Effect.sync(() => {
        effects.submitted.push(subject)
        effects.keys.submitted.push(idempotencyKey)
        return { id: `T-${effects.submitted.length}` }
      })
  })
  const SendReply = Tool.send("chat.sendMessage", {
    title: "Send a chat message",
    description: "Send a message to the customer.",
    input: Schema.Struct({ text: Schema.String }),
    payload: Payload,
    output: Schema.Struct({ delivered: Schema.Boolean }),
    prepare: ({ text }) =>
      Effect.sync(() => {
        effects.prepared++
        return { to: "customer:42", text }
      }),
    deliver: (confirmed) =>
      Effect.sync(() => {
        effects.delivered.push(confirmed.payload)
        effects.keys.sent.push(confirmed.idempotencyKey)
        return { delivered: true }
      })
  })
  const support = Toolkit.make(KbSearch, SubmitTicket, SendReply)
  return { effects, KbSearch, CustomerLookup, SubmitTicket, SendReply, support }
}

/** The desk's billing specialist: a sub-agent holding the desk's knowledge-base read and its ticket write. */
export const billingOf = (desk: ReturnType<typeof makeDesk>) =>
  Agent.tool("agent.billing", {
    title: "Billing specialist",
    description: "Files billing tickets.",
    toolkit: Toolkit.make(desk.KbSearch, desk.SubmitTicket),
    instructions: "Look up the policy, then file a ticket.",
    input: Schema.Struct({ issue: Schema.String })
  })
