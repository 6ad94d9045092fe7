import { Effect } from "effect"
import { expectError, expectType } from "tsd"
import {
  Agent,
  LanguageModel,
  ProposalStore,
  Registry,
  type SendCapability,
  Tool,
  Toolkit,
  type WriteCapability
} from "@graded/core"
import { KbSearch, KnowledgeBase, SendReply, SubmitTicket, support } from "./fixtures.js"

const registry = Registry.make(support)

// Accepted: invoke never fails, and needs only what the named tool needs.
expectType<Effect.Effect<Registry.ToolResult, never, KnowledgeBase>>(registry.invoke("kb.search", { query: "x" }))
expectType<Effect.Effect<Registry.ToolResult, never, never>>(registry.invoke("conversation.current", {}))
expectType<Effect.Effect<Registry.ToolResult, never, WriteCapability>>(registry.invoke("ticket.submit", {}))
expectType<Effect.Effect<Registry.ToolResult, never, SendCapability>>(registry.invoke("chat.sendMessage", {}))

// A name the types cannot see needs whatever any tool needs.
declare const name: string
expectType<Effect.Effect<Registry.ToolResult, never, KnowledgeBase | WriteCapability | SendCapability>>(
  registry.invoke(name, {})
)

// Rejected: running a send through the registry with no HumanConfirm in scope.

// error: Type 'SendCapability' is not assignable to type 'never'
expectError(Effect.runPromise(registry.invoke("chat.sendMessage", { text: "Hi" })))

// error: Type 'WriteCapability' is not assignable to type 'never'
expectError(Effect.runPromise(registry.invoke("ticket.submit", { subject: "Hi" })))

// Accepted: proposal tools are read tools; an agent may propose, and the
// proposal store stays in R.
const ProposeReply = Tool.proposal(SendReply)
const ProposeTicket = Tool.proposal(SubmitTicket)
expectType<"read">(ProposeReply.grade)
expectType<"chat.sendMessage.propose">(ProposeReply.name)
expectType<
  Effect.Effect<
    Agent.Result<readonly [typeof KbSearch, typeof ProposeTicket, typeof ProposeReply]>,
    Agent.AgentError,
    LanguageModel.LanguageModel | KnowledgeBase | ProposalStore.ProposalStore
  >
>(
  Agent.run({ toolkit: Toolkit.make(KbSearch, ProposeTicket, ProposeReply), prompt: "?" })
)

// Rejected: the proposal is not the tool; the tool itself still cannot be wired.

// error: Agent.run takes read tools only: chat.sendMessage (send) needs SendCapability
expectError(Agent.run({ toolkit: Toolkit.make(ProposeReply, SendReply), prompt: "?" }))
