// Tools for the compile-time attacks: one of each grade, a read tool that
// needs an ordinary service, and the widest effects a careless or hostile
// annotation can give a tool's code. Capabilities are named as types only.
import { Context, Effect, Layer, Schema } from "effect"
import { HumanConfirm, Tool, Toolkit } from "@graded/core"

export class KnowledgeBase extends Context.Tag("KnowledgeBase")<
  KnowledgeBase,
  { readonly search: (query: string) => Effect.Effect<ReadonlyArray<string>> }
>() {}

export const knowledgeBase = Layer.succeed(KnowledgeBase, { search: () => Effect.succeed([]) })

export const Query = Schema.Struct({ query: Schema.String })
export const Payload = Schema.Struct({ to: Schema.String, text: Schema.String })
export const Delivered = Schema.Struct({ delivered: Schema.Boolean })

export const KbSearch = Tool.read("kb.search", {
  title: "Search the knowledge base",
  description: "Find articles.",
  input: Query,
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

export const SendReply = Tool.send("chat.sendMessage", {
  title: "Send a chat message",
  description: "Send a message to the customer.",
  input: Schema.Struct({ text: Schema.String }),
  payload: Payload,
  output: Delivered,
  prepare: ({ text }) => Effect.succeed({ to: "customer:42", text }),
  deliver: () => Effect.succeed({ delivered: true })
})

export const support = Toolkit.make(KbSearch, CurrentConversation, SubmitTicket, SendReply)

export const ui = HumanConfirm.scripted([])

// Services whose type is wider than any capability: a tag of `{}`, of
// `unknown`, of `object`. Made without a cast.
export const Anything = Context.GenericTag<{}, string>("Anything")
export const Whatever = Context.GenericTag<unknown, string>("Whatever")
export const SomeObject = Context.GenericTag<object, string>("SomeObject")
