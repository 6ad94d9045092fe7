// The support desk of the first article, for the type tests: the write and
// send tools are the shared desk's (packages/core/test/supportDesk.ts); the
// read tools stay here, because these tests need one whose run requires an
// ordinary service (to watch a requirement pass through) and one that needs none.
import { Context, Effect, Schema } from "effect"
import { Tool, Toolkit } from "@graded/core"
import { makeDesk } from "../../packages/core/test/supportDesk.js"

export { Payload } from "../../packages/core/test/supportDesk.js"

export class KnowledgeBase extends Context.Service<
  KnowledgeBase,
  { readonly search: (query: string) => Effect.Effect<ReadonlyArray<string>> }
>()("KnowledgeBase") {}

export const KbSearch = Tool.read("kb.search", {
  title: "Search the knowledge base",
  description: "Find articles.",
  input: Schema.Struct({ query: Schema.String }),
  output: Schema.Array(Schema.String),
  run: ({ query }) => KnowledgeBase.use((kb) => kb.search(query))
})

export const CurrentConversation = Tool.read("conversation.current", {
  title: "Current conversation",
  description: "Read the conversation on screen.",
  input: Schema.Struct({}),
  output: Schema.Array(Schema.String),
  run: () => Effect.succeed(["Hello"])
})

export const { SubmitTicket, SendReply } = makeDesk()

export const support = Toolkit.make(KbSearch, CurrentConversation, SubmitTicket, SendReply)
