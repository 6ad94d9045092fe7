// A small support desk used across the runtime tests: one tool of each
// grade, each counting what it really did.
import { Effect, Schema } from "effect"
import { Tool, Toolkit } from "@graded/core"

export const Article = Schema.Struct({ id: Schema.String, title: Schema.String })

export const makeDesk = () => {
  const effects = { searches: [] as Array<string>, submitted: [] as Array<string>, prepared: 0, delivered: [] as Array<string> }
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
  const SubmitTicket = Tool.write("ticket.submit", {
    title: "Submit a ticket",
    description: "File a support ticket.",
    input: Schema.Struct({ subject: Schema.String }),
    output: Schema.Struct({ id: Schema.String }),
    run: ({ subject }) =>
      Effect.sync(() => {
        effects.submitted.push(subject)
        return { id: `T-${effects.submitted.length}` }
      })
  })
  const SendReply = Tool.send("chat.sendMessage", {
    title: "Send a chat message",
    description: "Send a message to the customer.",
    input: Schema.Struct({ text: Schema.String }),
    payload: Schema.Struct({ to: Schema.String, text: Schema.NonEmptyString }),
    output: Schema.Struct({ delivered: Schema.Boolean }),
    prepare: ({ text }) =>
      Effect.sync(() => {
        effects.prepared++
        return { to: "customer:42", text }
      }),
    deliver: (confirmed) =>
      Effect.sync(() => {
        effects.delivered.push(confirmed.payload.text)
        return { delivered: true }
      })
  })
  const support = Toolkit.make(KbSearch, SubmitTicket, SendReply)
  return { effects, KbSearch, SubmitTicket, SendReply, support }
}
