// Cast-free attempts to mint, move or reuse a confirmation, to approve a
// proposal without a human, or to queue a proposal no tool prepared. Each is
// a compile error; packages/core/test/Adversarial.test.ts runs the ones that
// compile and shows the runtime refusing them.
import { Effect, Schema } from "effect"
import { expectError, expectType } from "tsd"
import {
  Agent,
  type Capability,
  HumanConfirm,
  Plan,
  Proposal,
  ProposalStore,
  ScriptedModel,
  Tool,
  Toolkit,
  ToolError
} from "@graded/core"
import { KbSearch, type KnowledgeBase, Payload, SendReply, SubmitTicket, support } from "../core/fixtures.js"

const Mail = Tool.send("mail.send", {
  title: "Send mail",
  description: "Sends a mail.",
  input: Schema.Struct({ text: Schema.String }),
  payload: Payload,
  output: Schema.Struct({ delivered: Schema.Boolean }),
  prepare: ({ text }) => Effect.succeed({ to: "customer:42", text }),
  deliver: () => Effect.succeed({ delivered: true })
})

// A confirmation is typed by the tool it was made for.
declare const forReply: Capability.Confirmed<typeof Payload.Type, "chat.sendMessage">

// error: Type '"chat.sendMessage"' is not assignable to type '"mail.send"'
expectError(Mail.deliver(forReply))

// Accepted: the tool it was made for.
SendReply.deliver(forReply)

// A copy of a confirmation with its tool renamed is still not made by HumanConfirm.

// error: Property 'madeByHumanConfirmOnly' is missing
expectError(
  Mail.deliver({
    tool: "mail.send" as const,
    payload: forReply.payload,
    by: "me",
    edited: false,
    idempotencyKey: "k-1"
  })
)

// Approving a proposal needs the caller's HumanConfirm: with only a store in
// scope, the capabilities are left over.
const withStoreOnly = <A, E>(effect: Effect.Effect<A, E, ProposalStore.ProposalStore>) => effect

// error: Type 'WriteCapability' is missing the following properties from type 'ProposalStore'
expectError(withStoreOnly(Proposal.approve(support, "p-1")))

// Accepted: with a HumanConfirm layer, only the store and the tools' own services remain.
expectType<
  Effect.Effect<
    Proposal.Approved,
    ProposalStore.NotFound | ProposalStore.AlreadyDecided | ToolError.ToolError<never>,
    ProposalStore.ProposalStore | KnowledgeBase
  >
>(
  Proposal.approve(support, "p-1").pipe(Effect.provide(HumanConfirm.layer(HumanConfirm.scripted([]))))
)

// The old self-approving form, with a decision passed in, is gone: the third
// argument holds only the lease.

// error: Object literal may only specify known properties, and 'by' does not exist in type
expectError(Proposal.approve(support, "p-1", { by: "agent:alice" }))

// Only Tool.proposal makes the records a store accepts.
declare const store: ProposalStore.ProposalStore.Service

// error: Property 'madeByToolProposalOnly' is missing
expectError(store.add({
  tool: "chat.sendMessage",
  grade: "send",
  title: "Send",
  input: {},
  payload: { to: "everyone", text: "Your account is closed." },
  proposedAt: "2026-01-01T00:00:00.000Z",
  actor: "attacker",
  traceId: undefined
}))

// A proposal's final states cannot be left through settle's types either:
// there is no status a caller could set a proposal back to but "pending",
// and the store refuses that unless the proposal is being approved.
expectType<Effect.Effect<Proposal.Proposal, ProposalStore.NotFound | ProposalStore.AlreadyDecided>>(
  store.settle("p-1", { status: "pending" })
)

// A plan declares write tools only: a send tool is not a write it may authorize.

// error: Type '"send"' is not assignable to type '"write"'
expectError(Plan.make("sneaky", { input: Schema.Struct({}), writes: [SendReply], steps: () => Effect.void }))

// Accepted: a write tool.
Plan.make("fine", { input: Schema.Struct({}), writes: [SubmitTicket], steps: () => Effect.void })

// A proposal is of a write or a send; a read tool has nothing to propose.

// error: kb.search is a read tool: Tool.proposal takes a write or send tool
expectError(Tool.proposal(KbSearch))

// Accepted: the proposal tools of a write and a send are read tools that need the store.
expectType<
  Tool.Tool<
    "ticket.submit.propose",
    "read",
    { readonly subject: string },
    Proposal.Proposed,
    never,
    ProposalStore.ProposalStore
  >
>(
  Tool.proposal(SubmitTicket)
)
expectType<
  Tool.Tool<
    "chat.sendMessage.propose",
    "read",
    { readonly text: string },
    Proposal.Proposed,
    never,
    ProposalStore.ProposalStore
  >
>(
  Tool.proposal(SendReply)
)

// Rejected: a read tool that runs a supervised loop over a write tool, to have
// a model's write confirmed from inside a read. Its run needs the capability.

// error: kb.supervisor is a read tool, but its run needs WriteCapability: grade it Tool.write or Tool.send
expectError(Tool.read("kb.supervisor", {
  title: "t",
  description: "d",
  input: Schema.Struct({}),
  output: Schema.Unknown,
  run: () =>
    Agent.supervised({ toolkit: Toolkit.make(SubmitTicket), prompt: "file it" }).pipe(
      Effect.provide(ScriptedModel.layer([ScriptedModel.text("ok")]))
    )
}))
