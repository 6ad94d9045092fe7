// Sub-agents (Agent.tool): graded by the tools they hold, at any depth.
import { type Effect, Schema } from "effect"
import { expectError, expectType } from "tsd"
import {
  Agent,
  type LanguageModel,
  type NeedsHumanConfirm,
  type Tool,
  Toolkit,
  type WriteCapability
} from "@graded/core"
import { CurrentConversation, KbSearch, KnowledgeBase, SendReply, SubmitTicket } from "./fixtures.js"

const ask = Schema.Struct({ question: Schema.String })

const Researcher = Agent.tool("agent.researcher", {
  title: "Researcher",
  description: "Finds what the knowledge base says.",
  toolkit: Toolkit.make(KbSearch, CurrentConversation),
  instructions: "Search, then answer.",
  input: ask
})

const Billing = Agent.tool("agent.billing", {
  title: "Billing specialist",
  description: "Files billing tickets.",
  toolkit: Toolkit.make(KbSearch, SubmitTicket),
  instructions: "File a ticket.",
  input: ask
})

// A read sub-agent is a read tool: its tools' requirements are its own, no capability among them.
expectType<"read">(Researcher.grade)
expectType<"write">(Billing.grade)
expectType<"send">(
  Agent.tool("agent.mailer", {
    title: "Mailer",
    description: "Writes and sends.",
    toolkit: Toolkit.make(SubmitTicket, SendReply),
    instructions: "Reply.",
    input: ask
  }).grade
)
declare const requirementsOf: <T extends Tool.Any>(tool: T) => Tool.Requirements<T>
expectType<LanguageModel.LanguageModel | KnowledgeBase>(requirementsOf(Researcher))
expectType<LanguageModel.LanguageModel | KnowledgeBase | WriteCapability>(requirementsOf(Billing))

// Accepted: a read-only sub-agent in an autonomous loop, beside a read tool.
Agent.run({ toolkit: Toolkit.make(Researcher, KbSearch), prompt: "?" })

// Rejected: a sub-agent holding a write, named with the inner tool.
// error: Agent.run takes read tools only: agent.billing → ticket.submit (write) needs WriteCapability. Pass Toolkit.readOnly(toolkit)
expectError(Agent.run({ toolkit: Toolkit.make(Researcher, Billing), prompt: "?" }))

// Nested: the path has one step per sub-agent, and each inner offender is named.
const Desk = Agent.tool("agent.desk", {
  title: "Desk",
  description: "Routes to specialists.",
  toolkit: Toolkit.make(Researcher, Billing, SendReply),
  instructions: "Route.",
  input: ask
})
expectType<"send">(Desk.grade)
// error: Agent.run takes read tools only: agent.desk → agent.billing → ticket.submit (write) needs WriteCapability; agent.desk → chat.sendMessage (send) needs SendCapability.
expectError(Agent.run({ toolkit: Toolkit.make(Desk), prompt: "?" }))

// The validator names the path too.
expectType<"agent.billing → ticket.submit (write) needs WriteCapability">(
  null as unknown as Agent.Offenses<readonly [typeof Billing]>
)

// In a supervised run the sub-agent needs a human, and the capability of the tool it holds.
const supervisedBilling = Agent.supervised({ toolkit: Toolkit.make(Billing), prompt: "?" })
expectType<
  Effect.Effect<
    Agent.Result<readonly [typeof Billing]>,
    Agent.AgentError,
    LanguageModel.LanguageModel | KnowledgeBase | WriteCapability | NeedsHumanConfirm<"agent.billing">
  >
>(supervisedBilling)

// Cast-free widening attacks. A variable typed wider cannot drop the grade:
// error: Type '"write"' is not assignable to type '"read"'
expectError((): Tool.Tool<"agent.billing", "read", { question: string }, string, any, LanguageModel.LanguageModel> =>
  Billing
)

// A union of sub-agents (one picked at run time) is judged by the worst.
declare const pick: boolean
const Either = pick ? Researcher : Billing
// error: Agent.run takes read tools only: agent.billing → ticket.submit (write) needs WriteCapability
expectError(Agent.run({ toolkit: Toolkit.make(Either), prompt: "?" }))

// A sub-agent over a toolkit picked at run time holds the worst of both.
const Switching = Agent.tool("agent.switching", {
  title: "Switching",
  description: "Either toolkit.",
  toolkit: pick ? Toolkit.make(KbSearch) : Toolkit.make(SubmitTicket),
  instructions: "Go.",
  input: ask
})
expectType<"write">(Switching.grade)
// error: Agent.run takes read tools only: agent.switching → ticket.submit (write) needs WriteCapability
expectError(Agent.run({ toolkit: Toolkit.make(Switching), prompt: "?" }))

// A generic helper cannot promise a read sub-agent over a toolkit it does not know...
// error: is not assignable to type '"read"'
expectError(<T extends Toolkit.Any>(
  toolkit: T
): Tool.Tool<"agent.wrapped", "read", { question: string }, string, never, LanguageModel.LanguageModel> =>
  Agent.tool("agent.wrapped", { title: "Wrapped", description: "Wrapped.", toolkit, instructions: "Go.", input: ask })
)
// ...and what it returns, once instantiated, is graded by the toolkit given.
const wrap = <T extends Toolkit.Any>(toolkit: T) =>
  Agent.tool("agent.wrapped", { title: "Wrapped", description: "Wrapped.", toolkit, instructions: "Go.", input: ask })
// error: Agent.run takes read tools only: agent.wrapped → ticket.submit (write) needs WriteCapability
expectError(Agent.run({ toolkit: Toolkit.make(wrap(Toolkit.make(SubmitTicket))), prompt: "?" }))
Agent.run({ toolkit: Toolkit.make(wrap(Toolkit.make(KbSearch))), prompt: "?" })

// An inner tool whose requirements are too wide to rule a capability out ({} or unknown) is an offense inside.
declare const Wide: Tool.Tool<"wide.read", "read", {}, string, never, {}>
const Widened = Agent.tool("agent.widened", {
  title: "Widened",
  description: "Holds a tool of unknown needs.",
  toolkit: Toolkit.make(Wide),
  instructions: "Go.",
  input: ask
})
// error: Agent.run takes read tools only: agent.widened → wide.read (read) needs WriteCapability and SendCapability and HumanTrigger
expectError(Agent.run({ toolkit: Toolkit.make(Widened), prompt: "?" }))
