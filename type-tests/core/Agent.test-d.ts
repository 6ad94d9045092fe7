import { Effect, Stream } from "effect"
import { expectError, expectType } from "tsd"
import {
  Agent,
  LanguageModel,
  type NeedsHumanConfirm,
  ScriptedModel,
  type SendCapability,
  Toolkit,
  type WriteCapability
} from "@graded/core"
import { CurrentConversation, KbSearch, KnowledgeBase, SendReply, SubmitTicket, support } from "./fixtures.js"

// Rejected: an autonomous loop handed a send tool, a write tool, or both.

// error: Agent.run takes read tools only: chat.sendMessage (send) needs SendCapability. Pass Toolkit.readOnly(toolkit)
expectError(Agent.run({ toolkit: Toolkit.make(KbSearch, SendReply), prompt: "?" }))

// error: Agent.run takes read tools only: ticket.submit (write) needs WriteCapability. Pass Toolkit.readOnly(toolkit)
expectError(Agent.run({ toolkit: Toolkit.make(KbSearch, SubmitTicket), prompt: "?" }))

// error: Agent.run takes read tools only: ticket.submit (write) needs WriteCapability; chat.sendMessage (send) needs SendCapability.
expectError(Agent.run({ toolkit: support, prompt: "?" }))

// error: Agent.run takes read tools only: ticket.submit (write) needs WriteCapability
expectError(Agent.run({ toolkit: Toolkit.make(SubmitTicket), messages: [{ role: "user", content: "?" }] }))

// Accepted: the read-only view of the mixed toolkit. Its read tools' ordinary
// services stay in R; the capabilities do not appear.
const answered = Agent.run({ toolkit: Toolkit.readOnly(support), prompt: "Has this customer reported it before?" })
expectType<
  Effect.Effect<
    Agent.Result<ReadonlyArray<typeof KbSearch | typeof CurrentConversation>>,
    Agent.AgentError,
    LanguageModel.LanguageModel | KnowledgeBase
  >
>(answered)

// Accepted: an empty toolkit, and one without requirements.
expectType<Effect.Effect<Agent.Result<readonly []>, Agent.AgentError, LanguageModel.LanguageModel>>(
  Agent.run({ toolkit: Toolkit.make(), prompt: "Hi" })
)
expectType<
  Effect.Effect<Agent.Result<readonly [typeof CurrentConversation]>, Agent.AgentError, LanguageModel.LanguageModel>
>(
  Agent.run({ toolkit: Toolkit.make(CurrentConversation), prompt: "Hi" })
)

// The typed results: a successful call's output is the tool's output type.
declare const result: Agent.Result<readonly [typeof KbSearch]>
const first = result.calls[0]
if (first !== undefined && first.ok) {
  expectType<"kb.search">(first.tool)
  expectType<ReadonlyArray<string>>(first.output)
}

// The message type is the same text as the run-time message.
expectType<Agent.AutonomousViolation<"x (send) needs SendCapability">>(
  Agent.autonomousViolation("x (send) needs SendCapability")
)

// Agent.supervised takes any tools: its R keeps the capabilities of the
// writes and sends, and a human for each of them by name, so it runs only
// where a HumanConfirm layer provides them.
const supervised = Agent.supervised({ toolkit: support, prompt: "File it and tell the customer." })
expectType<
  Effect.Effect<
    Agent.Result<readonly [typeof KbSearch, typeof CurrentConversation, typeof SubmitTicket, typeof SendReply]>,
    Agent.AgentError,
    | LanguageModel.LanguageModel
    | KnowledgeBase
    | WriteCapability
    | SendCapability
    | NeedsHumanConfirm<"ticket.submit" | "chat.sendMessage">
  >
>(supervised)

// Accepted: a toolkit of reads alone needs no human.
expectType<
  Effect.Effect<Agent.Result<readonly [typeof KbSearch]>, Agent.AgentError, LanguageModel.LanguageModel | KnowledgeBase>
>(Agent.supervised({ toolkit: Toolkit.make(KbSearch), prompt: "Look it up." }))

// Rejected: run with the model and the knowledge base provided but no
// HumanConfirm: the message names the tools that wait for a human.

// error: NeedsHumanConfirm<"ticket.submit" | "chat.sendMessage">' is not assignable to type 'never'
expectError(
  Effect.runPromise(
    supervised.pipe(
      Effect.provideService(KnowledgeBase, { search: () => Effect.succeed([]) }),
      Effect.provide(ScriptedModel.layer([ScriptedModel.text("ok")]))
    )
  )
)

// Streamed, the same rules: the autonomous loop takes read tools only, and a
// supervised stream runs only where a human decides.

// error: Agent.run takes read tools only: ticket.submit (write) needs WriteCapability; chat.sendMessage (send) needs SendCapability.
expectError(Agent.runStream({ toolkit: support, prompt: "?" }))

expectType<
  Stream.Stream<
    | Agent.Event<ReadonlyArray<typeof KbSearch | typeof CurrentConversation>>
    | Agent.End<ReadonlyArray<typeof KbSearch | typeof CurrentConversation>>,
    Agent.AgentError,
    LanguageModel.LanguageModel | KnowledgeBase
  >
>(Agent.runStream({ toolkit: Toolkit.readOnly(support), prompt: "Has this customer reported it before?" }))

// error: NeedsHumanConfirm<"ticket.submit" | "chat.sendMessage">' is not assignable to type 'never'
expectError(
  Effect.runPromise(
    Stream.runDrain(Agent.supervisedStream({ toolkit: support, prompt: "File it." })).pipe(
      Effect.provideService(KnowledgeBase, { search: () => Effect.succeed([]) }),
      Effect.provide(ScriptedModel.layer([ScriptedModel.text("ok")]))
    )
  )
)
