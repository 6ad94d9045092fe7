// The desk's five tools, graded. Three read, one writes, one sends.
import { Effect, Schema } from "effect"
import { Tool, Toolkit } from "@graded/core"
import { Desk } from "./desk.js"

export const KbSearch = Tool.read("kb.search", {
  title: "Search the knowledge base",
  description: "Find help-centre articles that answer a customer's question. Use before answering.",
  input: Schema.Struct({ query: Schema.String }),
  // Internal notes are not declared here, so they never reach the model.
  output: Schema.Array(Schema.Struct({ id: Schema.String, title: Schema.String, body: Schema.String })),
  limits: { maxItems: 5, maxChars: 4000 },
  run: ({ query }) => Desk.use((desk) => desk.searchArticles(query))
})

export const CurrentConversation = Tool.read("conversation.current", {
  title: "Read the current conversation",
  description: "The conversation open on the agent's screen: the customer's id and their messages.",
  input: Schema.Struct({}),
  output: Schema.Struct({ customerId: Schema.String, messages: Schema.Array(Schema.String) }),
  run: () => Desk.use((desk) => desk.conversation)
})

class UnknownCustomer extends Schema.TaggedError<UnknownCustomer>()("UnknownCustomer", { id: Schema.String }) {}

export const CustomerLookup = Tool.read("customer.lookup", {
  title: "Look up a customer",
  description: "A customer's plan and past tickets, by customer id.",
  input: Schema.Struct({ customerId: Schema.String }),
  // The e-mail address stays out of the output: the model does not need it.
  output: Schema.Struct({
    name: Schema.String,
    plan: Schema.String,
    pastTickets: Schema.Array(Schema.Struct({ id: Schema.String, subject: Schema.String, resolution: Schema.String }))
  }),
  failureMessages: { UnknownCustomer: "No customer has that id." },
  run: ({ customerId }) =>
    Desk.use((desk) => desk.customer(customerId)).pipe(
      Effect.flatMap((customer) =>
        customer === undefined ? Effect.fail(new UnknownCustomer({ id: customerId })) : Effect.succeed(customer)
      )
    )
})

export const SubmitTicket = Tool.write("ticket.submit", {
  title: "Submit a ticket",
  description: "File a ticket for the support team.",
  input: Schema.Struct({ subject: Schema.String, body: Schema.String }),
  output: Schema.Struct({ id: Schema.String }),
  run: ({ body, subject }) => Effect.map(Desk.use((desk) => desk.fileTicket(subject, body)), (id) => ({ id }))
})

const Message = Schema.Struct({ to: Schema.String, text: Schema.Trimmed.check(Schema.isNonEmpty()) })

export const SendMessage = Tool.send("chat.sendMessage", {
  title: "Send a chat message",
  description: "Send a message to the customer in the current conversation.",
  input: Schema.Struct({ text: Schema.String }),
  payload: Message,
  output: Schema.Struct({ sent: Schema.Boolean }),
  // prepare only builds the message; it has no way to send it.
  prepare: ({ text }) =>
    Effect.map(Desk.use((desk) => desk.conversation), ({ customerId }) => ({ to: customerId, text })),
  // The delivery's idempotency key goes to the chat service with the message:
  // a retry of a delivery in doubt carries the same key and posts nothing twice.
  deliver: (confirmed) =>
    Desk.use((desk) => desk.postMessage({ ...confirmed.payload, idempotencyKey: confirmed.idempotencyKey }))
      .pipe(Effect.as({ sent: true }))
})

export const desk = Toolkit.make(KbSearch, CurrentConversation, CustomerLookup, SubmitTicket, SendMessage)
