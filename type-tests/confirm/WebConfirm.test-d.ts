import { Effect, Layer, Stream } from "effect"
import { expectError, expectType } from "tsd"
import {
  Agent,
  type ProposalStore,
  type RunStore,
  Runs,
  ScriptedModel,
  type NeedsHumanConfirm,
  type SendCapability,
  type Toolkit,
  type WriteCapability
} from "@graded/core"
import { WebConfirm } from "@graded/confirm"
import { KnowledgeBase, support } from "../core/fixtures.js"

// Rejected: options that do not say who decides. The message says which
// options would, rather than "Property 'users' is missing".

// error: say who decides: give authenticate (your sign-in), users (one token per person) or singleUser: true
expectError(WebConfirm.layer({ port: 8080 }))

// error: say who decides: give authenticate (your sign-in), users (one token per person) or singleUser: true
expectError(WebConfirm.make({ host: "127.0.0.1", timeout: "5 minutes" }))

// Rejected: two ways at once; the message names the field that is one too many.

// error: Types of property 'users' are incompatible
expectError(WebConfirm.layer({ singleUser: true, users: { t: "alice" } }))

// Accepted: each way on its own, with the common settings; the sign-in hook's
// request is typed from the options.
WebConfirm.layer({ port: 8080, singleUser: true })
WebConfirm.layer({ users: { "a-token": "alice" }, timeout: "5 minutes" })
WebConfirm.layer({ authenticate: (request) => Effect.succeed(request.url) })

// A chat's reply: the support desk's supervised run, streamed, with its model
// and its tools' services provided, is what `chat.reply` takes; the server
// provides the human part (its writes' and sends' NeedsHumanConfirm).
const deskReply = (request: WebConfirm.ChatRequest) =>
  Agent.supervisedStream({ toolkit: support, messages: WebConfirm.toMessages(request.messages) }).pipe(
    Stream.provide(Layer.merge(
      ScriptedModel.layer([ScriptedModel.text("Hello")]),
      Layer.succeed(KnowledgeBase, { search: () => Effect.succeed([]) })
    ))
  )
expectType<
  Stream.Stream<
    Agent.Event<Toolkit.Tools<typeof support>> | Agent.End<Toolkit.Tools<typeof support>>,
    Agent.AgentError,
    WriteCapability | SendCapability | NeedsHumanConfirm<"ticket.submit" | "chat.sendMessage">
  >
>(deskReply({ messages: [], by: undefined }))
WebConfirm.layer({ singleUser: true, chat: { reply: deskReply } })
WebConfirm.make({ users: { "a-token": "alice" }, chat: { reply: deskReply } })

// Rejected: a reply whose tools' services are left to provide; the server
// provides only the human part. The message names the service left over.

// error: Type 'KnowledgeBase' is not assignable to type 'WriteCapability | SendCapability | NeedsHumanConfirm<string>'
expectError(WebConfirm.layer({
  singleUser: true,
  chat: {
    reply: (request) =>
      Agent.supervisedStream({ toolkit: support, messages: WebConfirm.toMessages(request.messages) }).pipe(
        Stream.provide(ScriptedModel.layer([ScriptedModel.text("Hello")]))
      )
  }
}))

// A durable chat: `reply` is asked to start or resume a run, on the stores
// the server is given; written inline, its request is typed.
WebConfirm.layer({
  users: { "a-token": "alice" },
  proposals: { toolkit: support },
  chat: {
    durable: {
      reply: (request) =>
        (request._tag === "Start"
          ? Runs.startStream({
            toolkit: support,
            runId: request.runId,
            messages: WebConfirm.toMessages(request.messages)
          })
          : Runs.resumeStream(request.runId, { toolkit: support })).pipe(
            Stream.provide(Layer.merge(
              ScriptedModel.layer([ScriptedModel.text("Hello")]),
              Layer.succeed(KnowledgeBase, { search: () => Effect.succeed([]) })
            ))
          )
    }
  }
})
// The server then needs the run store as well as the proposal store.
expectType<RunStore.RunStore | ProposalStore.ProposalStore>(
  {} as WebConfirm.Needs<{ readonly chat: WebConfirm.DurableChat }>
)
