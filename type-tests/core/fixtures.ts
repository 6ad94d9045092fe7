// The support desk of the first article, reduced to types: one tool of each
// grade, and a read tool that needs an ordinary service.
import { Context, Effect, Schema } from "effect"
import { Tool, Toolkit } from "@graded/core"

export class KnowledgeBase extends Context.Tag("KnowledgeBase")<
  KnowledgeBase,
  { readonly search: (query: string) => Effect.Effect<ReadonlyArray<string>> }
>() {}

export const KbSearch = Tool.read("kb.search", {
  title: "Search the knowledge base",
  description: "Find articles.",
  input: Schema.Struct({ query: Schema.String }),
  output: Schema.Array(Schema.String),
  run: ({ query }) => Effect.flatMap(KnowledgeBase, (kb) => kb.search(query))
})

export const CurrentConversation = Tool.read("conversation.current", {
  title: "Current conversation",
  description: "Read the conversation on screen.",
  input: Schema.Struct({}),
  output: Schema.Array(Schema.String),
  run: () => Effect.succeed(["Hello"])
})

export const SubmitTicket = Tool.write("ticket.submit", {
  title: "Submit a ticket",
  description: "File a ticket.",
  input: Schema.Struct({ subject: Schema.String }),
  output: Schema.Struct({ id: Schema.String }),
  run: () => Effect.succeed({ id: "T-1" })
})

export const Payload = Schema.Struct({ to: Schema.String, text: Schema.String })

export const SendReply = Tool.send("chat.sendMessage", {
  title: "Send a chat message",
  description: "Send a message to the customer.",
  input: Schema.Struct({ text: Schema.String }),
  payload: Payload,
  output: Schema.Struct({ delivered: Schema.Boolean }),
  prepare: ({ text }) => Effect.succeed({ to: "customer:42", text }),
  deliver: () => Effect.succeed({ delivered: true })
})

export const support = Toolkit.make(KbSearch, CurrentConversation, SubmitTicket, SendReply)
