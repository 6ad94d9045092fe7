// Runs.start takes any tools, like Agent.supervised, but a durable run never
// writes or sends: its R asks for the two stores instead of the capabilities,
// and delivering what it proposed still needs a human's HumanConfirm.
import { Effect } from "effect"
import { expectError, expectType } from "tsd"
import {
  HumanConfirm,
  LanguageModel,
  Proposal,
  ProposalStore,
  Runs,
  RunStore,
  ScriptedModel,
  type SendCapability,
  Toolkit,
  type ToolError,
  type WriteCapability
} from "@graded/core"
import { KbSearch, KnowledgeBase, SendReply, SubmitTicket, support } from "./fixtures.js"

const started = Runs.start({ toolkit: support, prompt: "File it and tell the customer.", runId: "run-1" })
expectType<
  Effect.Effect<
    Runs.Outcome<
      readonly [
        typeof KbSearch,
        typeof import("./fixtures.js").CurrentConversation,
        typeof SubmitTicket,
        typeof SendReply
      ]
    >,
    Runs.RunError,
    LanguageModel.LanguageModel | RunStore.RunStore | ProposalStore.ProposalStore | KnowledgeBase
  >
>(started)

// Rejected: run with the model and the tools' services but no stores: the
// compiler names the two stores the run keeps its state and proposals in.

// error: Type 'ProposalStore | RunStore' is not assignable to type 'never'
expectError(
  Effect.runPromise(
    started.pipe(
      Effect.provideService(KnowledgeBase, { search: () => Effect.succeed([]) }),
      Effect.provide(ScriptedModel.layer([ScriptedModel.text("ok")]))
    )
  )
)

// A run's proposals are delivered only through a human: with the stores in
// scope and no HumanConfirm, approving leaves the capabilities over.
const withStoresOnly = <A, E>(effect: Effect.Effect<A, E, ProposalStore.ProposalStore | RunStore.RunStore>) => effect

// error: Type 'WriteCapability' is not assignable to type 'ProposalStore | RunStore'
expectError(withStoresOnly(Proposal.approve(Toolkit.make(SubmitTicket), "p-1")))

// error: Type 'SendCapability' is not assignable to type 'ProposalStore | RunStore'
expectError(withStoresOnly(Proposal.retry(Toolkit.make(SendReply), "p-1")))

// Run with its store and no HumanConfirm, an approval names the tools that
// wait for a human.

// error: NeedsHumanConfirm<"ticket.submit" | "chat.sendMessage">' is not assignable to type 'never'
expectError(
  Effect.runPromise(
    Proposal.approve(support, "p-1").pipe(
      Effect.provideService(KnowledgeBase, { search: () => Effect.succeed([]) }),
      Effect.provide(ProposalStore.memory)
    )
  )
)

// error: NeedsHumanConfirm<"chat.sendMessage">' is not assignable to type 'never'
expectError(
  Effect.runPromise(Proposal.retry(Toolkit.make(SendReply), "p-1").pipe(Effect.provide(ProposalStore.memory)))
)

// Accepted: with a HumanConfirm layer nothing is left over but the store.
expectType<
  Effect.Effect<
    Proposal.Approved,
    ProposalStore.NotFound | ProposalStore.AlreadyDecided | ToolError.ToolError<never>,
    ProposalStore.ProposalStore
  >
>(
  Proposal.approve(Toolkit.make(SubmitTicket, SendReply), "p-1").pipe(
    Effect.provide(HumanConfirm.layer(HumanConfirm.scripted([])))
  )
)

// Accepted: resume takes the toolkit again; it needs what start needs, never a capability.
expectType<
  Effect.Effect<
    Runs.Outcome<readonly [typeof KbSearch]>,
    Runs.RunError,
    LanguageModel.LanguageModel | RunStore.RunStore | ProposalStore.ProposalStore | KnowledgeBase
  >
>(Runs.resume("run-1", { toolkit: Toolkit.make(KbSearch) }))

// A run's requirements never include the capabilities, whatever its tools.
type Leaks = Extract<Runs.Requirements<typeof support>, WriteCapability | SendCapability>
expectType<never>(null as unknown as Leaks)
