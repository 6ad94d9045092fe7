// The first article's quick-ticket flow, as a Plan: open the form, read the
// conversation, let the model write the summary, fill the fields, validate,
// submit. Every step is fixed in code; the model only writes text.
import { Effect, Schema } from "effect"
import { Plan, Tool } from "@graded/core"
import { Desk } from "./desk.js"
import { CurrentConversation, CustomerLookup, SubmitTicket } from "./tools.js"

export const OpenForm = Tool.write("ticket.openForm", {
  title: "Open the ticket form",
  description: "Opens an empty ticket form on the agent's screen.",
  input: Schema.Struct({}),
  output: Schema.Struct({ open: Schema.Boolean }),
  run: () => Effect.as(Desk.use((desk) => desk.openForm), { open: true })
})

export const FillFields = Tool.write("ticket.fillFields", {
  title: "Fill the ticket form",
  description: "Fills fields of the open ticket form.",
  input: Schema.Struct({ customer: Schema.String, plan: Schema.String, subject: Schema.String, body: Schema.String }),
  output: Schema.Record(Schema.String, Schema.String),
  run: (fields) => Desk.use((desk) => desk.fillForm(fields))
})

export const QuickTicket = Plan.make("quick-ticket", {
  input: Schema.Struct({}),
  writes: [OpenForm, FillFields, SubmitTicket],
  steps: (_, step) =>
    Effect.gen(function*() {
      yield* step.write("open the form", OpenForm, {})
      const conversation = yield* step.read("read the conversation", CurrentConversation, {})
      const customer = yield* step.read("look up the customer", CustomerLookup, { customerId: conversation.customerId })
      const summary = yield* step.generate(
        "write the summary",
        `Summarize this support conversation as a ticket subject line:\n${conversation.messages.join("\n")}`
      )
      const fields = {
        customer: customer.name,
        plan: customer.plan,
        subject: summary,
        body: conversation.messages.join("\n")
      }
      yield* step.write("fill the fields", FillFields, fields)
      yield* step.validate("validate", summary.length <= 120, "the subject is longer than 120 characters")
      return yield* step.write("submit", SubmitTicket, { subject: fields.subject, body: fields.body })
    })
})
