/**
 * Proposals: a write or send a model suggested, recorded for a human to
 * decide. `Proposal.tool` makes the read tool a model calls to propose; the
 * human side lists them, approves one (possibly edited), or rejects it. An approval asks the human through the caller's `HumanConfirm`
 * like any other write or send, delivers exactly once, and a second approval
 * of the same proposal delivers nothing and says why.
 *
 * @since 0.1.0
 */
import { type Duration, Effect } from "effect"
import type { NeedsHumanConfirmFor } from "./Capability.js"
import type { Confirmable } from "./Grade.js"
import { isProposalRecord, type MadeByToolProposalOnly } from "./internal/capability.js"
import * as decisions from "./internal/decide.js"
import * as internal from "./internal/proposal.js"
import * as states from "./internal/proposalStatus.js"
import { proposalStoreHere } from "./internal/services.js"
import { toolAt } from "./internal/tree.js"
import type { AlreadyDecided, NotFound, ProposalStore } from "./ProposalStore.js"
import type * as Tool from "./Tool.js"
import type * as Toolkit from "./Toolkit.js"
import type { Refused, ToolError } from "./ToolError.js"

/**
 * Where a proposal stands: `pending` until a human acts (or `expired` when no
 * one did in time), `approving` while a human is asked, `delivering` once the
 * delivery is recorded and runs, then `delivered`, `rejected` or `failed`,
 * which are final with `expired`. `in-doubt` is a delivery that stopped
 * without settling (its process died): it may have gone out, so it waits for a
 * human to mark it done (`Proposal.markDone`) or retry it (`Proposal.retry`).
 * Which moves between them are legal is `Proposal.transitions`.
 *
 * @example
 * import { Schema } from "effect"
 * import { Proposal } from "@graded/core"
 * const status = Schema.decodeUnknownSync(Proposal.Status)("in-doubt")
 *
 * @since 0.2.0
 * @category schemas
 */
export const Status: typeof states.Status = states.Status

/**
 * @since 0.1.0
 * @category models
 */
export type Status = typeof Status.Type

/**
 * The one table of legal moves: from each status, the statuses a proposal
 * may move to (frozen). Every store moves a proposal only along it (the SQL
 * stores' conditional `UPDATE`s leave only the states it lists for the move,
 * the memory store refuses any other with `AlreadyDecided`), and the final
 * statuses have no move at all. A store of your own checks its moves against
 * it; the store contract tests (`packages/sql/test/transitionsContract.ts`)
 * try every store method from every status.
 *
 * @example
 * import { Proposal } from "@graded/core"
 * const next = Proposal.transitions["in-doubt"] // ["approving", "delivered", "failed"]
 *
 * @since 0.2.0
 * @category models
 */
export const transitions: { readonly [S in Status]: ReadonlyArray<Status> } = states.transitions

/**
 * Whether a proposal in `status` is still open: a human or a delivery has yet
 * to act on it (`pending`, `approving`, `delivering`, `in-doubt`). A run
 * waits on its open proposals.
 *
 * @since 0.2.0
 * @category predicates
 */
export const isOpen: (status: Status) => boolean = states.isOpen

/**
 * Whether `status` is final (`delivered`, `rejected`, `failed`, `expired`):
 * no call moves a proposal out of it.
 *
 * @since 0.2.0
 * @category predicates
 */
export const isFinal: (status: Status) => boolean = states.isFinal

/**
 * Who decided a proposal and when (an ISO timestamp), whether they edited the
 * payload, and for a rejection, why.
 *
 * @since 0.1.0
 * @category models
 */
export interface Decided {
  readonly by: string
  readonly at: string
  readonly edited: boolean
  readonly reason?: string | undefined
}

/**
 * A stored proposal, as a review UI lists it: the tool, what the model asked
 * for, what would go out, its status and, once decided, the decision.
 *
 * @since 0.1.0
 * @category models
 */
export interface Proposal {
  readonly id: string
  readonly tool: string
  readonly grade: Confirmable
  readonly title: string
  /** The input the model gave, encoded. */
  readonly input: unknown
  /** What would go out: the write's input, or the send's prepared payload; encoded. */
  readonly payload: unknown
  readonly status: Status
  readonly proposedAt: string
  readonly actor: string | undefined
  readonly traceId: string | undefined
  /** The supervised run that waits on it, and the model's call id there. */
  readonly runId?: string | undefined
  readonly callId?: string | undefined
  /**
   * The run's model turn (its round) the call was made in: with `runId` and
   * `callId`, the proposal's identity, unique in a store.
   *
   * @since 0.3.0
   */
  readonly turn?: number | undefined
  /**
   * The sub-agents from the run's root down to the agent that made it (a
   * durable run's write/send sub-agent, Agent.tool); absent for the root's
   * own calls. `Proposal.approve` finds its tool by it, and the card shows it.
   *
   * @since 0.4.0
   */
  readonly path?: ReadonlyArray<string> | undefined
  /** Until when (ISO) a human may decide it; then it is `expired`. */
  readonly expiresAt?: string | undefined
  /**
   * The delivery's unique idempotency key, recorded before the tool ran and
   * passed to it (`Confirmed.idempotencyKey`, a write's `Delivery`).
   */
  readonly deliveryKey?: string | undefined
  /**
   * What the human approved (the payload, edited or not; encoded), recorded
   * with the delivery before the tool ran: what was delivered, and what a
   * retry of an in-doubt delivery delivers again.
   *
   * @since 0.3.0
   */
  readonly approved?: unknown
  readonly decision?: Decided | undefined
  /**
   * While `approving` or `delivering`: until when (ISO) the process holds it.
   * Once the lease has passed, `Proposal.recover` hands an approval back to
   * `pending` (nothing went out) and marks a delivery `in-doubt`.
   */
  readonly leaseUntil?: string | undefined
  /** The tool's encoded output, once delivered. */
  readonly output?: unknown
}

/**
 * A proposal as `Tool.proposal` records it. Only `Tool.proposal` makes these
 * (the brand cannot be written by hand), so a store holds no payload that a
 * tool did not prepare.
 *
 * @since 0.1.0
 * @category models
 */
export type New = Omit<
  Proposal,
  "id" | "status" | "decision" | "output" | "leaseUntil" | "deliveryKey" | "approved"
> & {
  /** A value no code outside graded can write: a record made by hand does not compile. */
  readonly madeByToolProposalOnly: MadeByToolProposalOnly
}

/**
 * Whether a value is a record `Tool.proposal` made: the check a store's `add`
 * makes before it keeps anything, as `ProposalStore.memory` does, so a store
 * outside this package (`@graded/sql`) refuses the same records. It goes by
 * identity: a copy, a spread or a record written by hand is not one.
 *
 * @example
 * import { Effect } from "effect"
 * import { Proposal } from "@graded/core"
 * const add = (record: Proposal.New) =>
 *   Proposal.isNew(record) ? Effect.succeed(record.tool) : Effect.die(new Error("not made by Tool.proposal"))
 *
 * @since 0.1.0
 * @category guards
 */
export const isNew = (u: unknown): u is New => isProposalRecord(u)

/**
 * How an approval ended. `delivered`, `failed` and `rejected` are final;
 * `pending` hands the proposal back (nothing was delivered); `in-doubt` is a
 * delivery interrupted after it began.
 *
 * @since 0.1.0
 * @category models
 */
export type Outcome =
  | { readonly status: "delivered"; readonly decision: Decided; readonly output: unknown }
  | { readonly status: "failed"; readonly decision: Decided }
  | { readonly status: "rejected"; readonly decision: Decided }
  | { readonly status: "in-doubt"; readonly decision: Decided }
  | { readonly status: "pending" }

/**
 * What a proposal tool returns to the model.
 *
 * @since 0.1.0
 * @category models
 */
export interface Proposed {
  readonly proposal: string
  readonly status: "pending"
  readonly note: string
}

/**
 * The call signature of `Proposal.tool`: a write or send tool in, its
 * proposal tool out; a read tool is a compile error naming it.
 *
 * @since 0.1.0
 * @category models
 */
export interface ToolConstructor {
  <const T extends Tool.Any>(tool: Proposable<T>, options?: ToolOptions): ProposalOf<T>
}

/**
 * Options of `Proposal.tool`: `maxPendingPerTrace` (default 10) is how many
 * proposals one run (one trace id) may have waiting for a human at once; past
 * it the proposal tool refuses, so a model cannot flood the human's page
 * (counted in the store's transaction with the new proposal, so proposals
 * made at once cannot all pass); `expireAfter` bounds how long a proposal
 * waits for a decision.
 *
 * @since 0.1.0
 * @category models
 */
export interface ToolOptions {
  readonly maxPendingPerTrace?: number | undefined
  /**
   * How long a human has to decide (from the Clock); then the proposal is
   * `expired` and can no longer be approved. Unset: it waits until decided.
   */
  readonly expireAfter?: Duration.Input | undefined
}

/**
 * The compile error for a proposal of a read tool.
 *
 * @since 0.1.0
 * @category errors
 */
export type ReadProposal<Name extends string> =
  `${Name} is a read tool: Tool.proposal takes a write or send tool (a model may call a read tool directly)`

/**
 * `T` when it is a write or send tool; otherwise the message naming it.
 *
 * @since 0.1.0
 * @category utility types
 */
export type Proposable<T> = [T] extends [Tool.Tool<infer N, infer G, any, any, any, any>]
  ? [G] extends ["read"] ? ReadProposal<N> : T
  : T

/**
 * The read tool `Tool.proposal` makes of a write or send tool.
 *
 * @since 0.1.0
 * @category utility types
 */
export type ProposalOf<T> = T extends Tool.SendTool<infer Name, infer I, any, any, infer E, infer R>
  ? Tool.Tool<`${Name}.propose`, "read", I, Proposed, E, R | ProposalStore>
  : T extends Tool.Tool<infer Name, "write", infer I, any, any, any>
    ? Tool.Tool<`${Name}.propose`, "read", I, Proposed, never, ProposalStore>
  : never

/**
 * Turns a write or send tool into a read tool whose only effect is to record
 * a proposal (the input, and for a send the prepared payload) for a human to
 * approve or reject later. This is how an autonomous model may suggest an
 * action. Its name is the tool's with `.propose` added.
 *
 * @example
 * import { Effect, Schema } from "effect"
 * import { Proposal, Tool, Toolkit } from "@graded/core"
 *
 * const SubmitTicket = Tool.write("ticket.submit", {
 *   title: "Submit a ticket", description: "File a ticket.",
 *   input: Schema.Struct({ subject: Schema.String }), output: Schema.Struct({ id: Schema.String }),
 *   run: () => Effect.succeed({ id: "T-1" })
 * })
 * const forTheAgent = Toolkit.make(Proposal.tool(SubmitTicket)) // ticket.submit.propose, a read tool
 *
 * @since 0.1.0
 * @category constructors
 */
export const tool: ToolConstructor = internal.make as unknown as ToolConstructor

/**
 * The payload a human is asked to confirm for a proposal (encoded), and so
 * what a card shows: for a delivery in doubt, what was approved before, which
 * a retry delivers again; otherwise what would go out (a write's input, a
 * send's prepared payload).
 *
 * @example
 * import { Proposal } from "@graded/core"
 * declare const proposal: Proposal.Proposal
 * const shown = Proposal.payloadToConfirm(proposal)
 *
 * @since 0.3.0
 * @category getters
 */
export const payloadToConfirm: (proposal: Proposal) => unknown = decisions.payloadToConfirm

/**
 * The tool a stored proposal names, found through the run's toolkit: one made
 * inside a sub-agent names a tool of that sub-agent's toolkit, reached by its
 * `path`, and an outer tool of the same name is not it. What a page shows of
 * a proposal (its description, its edit form) comes from this tool, the one
 * an approval runs. `undefined` when the toolkit holds no such tool.
 *
 * @example
 * import { Proposal, type Toolkit } from "@graded/core"
 * declare const toolkit: Toolkit.Any
 * declare const proposal: Proposal.Proposal
 * const description = Proposal.toolOf(toolkit, proposal)?.description ?? ""
 *
 * @since 0.4.0
 * @category getters
 */
export const toolOf = (
  toolkit: Toolkit.Any,
  proposal: Pick<Proposal, "tool" | "path">
): Tool.Any | undefined => toolAt(toolkit, proposal.path, proposal.tool)

/**
 * Lists proposals in the order they were made, optionally by status, by
 * supervised run and by trace.
 *
 * @since 0.1.0
 * @category constructors
 */
export const list = (filter?: ProposalStore.Filter): Effect.Effect<
  ReadonlyArray<Proposal>,
  never,
  ProposalStore
> => Effect.flatMap(proposalStoreHere, (store) => store.list(filter))

/**
 * One proposal, by id.
 *
 * @since 0.1.0
 * @category constructors
 */
export const get = (id: string): Effect.Effect<Proposal, NotFound, ProposalStore> =>
  Effect.flatMap(proposalStoreHere, (store) => store.get(id))

/**
 * What `Proposal.approve` succeeds with once the tool has delivered: the
 * settled proposal and the tool's output.
 *
 * @since 0.1.0
 * @category models
 */
export interface Approved {
  readonly proposal: Proposal
  /** The tool's output, as the tool returned it (decoded, not encoded); `unknown` because the toolkit is any. */
  readonly output: unknown
}

/**
 * How long an approval holds a proposal before another process may settle it
 * (`Proposal.recover`) when no `lease` is given: 15 minutes, renewed once the
 * human has approved, before delivery.
 *
 * @since 0.1.0
 * @category constructors
 */
export const defaultLease: Duration.Duration = decisions.defaultLease

/**
 * Why an approval interrupted while delivering was left in doubt.
 *
 * @since 0.1.0
 * @category errors
 */
export const interruptedWhileDelivering: string = decisions.interruptedWhileDelivering

/**
 * Approves a proposal through the caller's `HumanConfirm`: the human is asked,
 * through the caller's UI, with the stored payload (a write's input, a send's
 * payload prepared when it was proposed), and may approve, edit (validated
 * again with the tool's schema) or reject it. Before the tool runs, the
 * delivery is recorded under a unique idempotency key, which the tool is
 * given to pass on. An approval delivers at most once; a rejection is final;
 * an invalid edit or a refusal delivers nothing and leaves the proposal
 * pending; a proposal past its `expiresAt` cannot be approved. The toolkit is
 * the one the human works with, holding the write or send tool itself. A
 * model's fiber, or a read tool's own code, is refused before the proposal is
 * touched. Where the caller's layer has `autoApprove` rules, a stored write
 * that a rule for that tool approves is delivered without asking, and its
 * decision is recorded as by `rule:<id>`; a send always asks.
 *
 * @example
 * import { Effect } from "effect"
 * import { HumanConfirm, Proposal, ProposalStore, Toolkit } from "@graded/core"
 * declare const desk: Toolkit.Any
 * const approve = Proposal.approve(desk, "p-1").pipe(
 *   Effect.provide(HumanConfirm.layer(HumanConfirm.scripted([HumanConfirm.approve("agent:alice")])))
 * )
 *
 * @since 0.1.0
 * @category constructors
 */
export const approve = <T extends Toolkit.Any>(
  toolkit: T,
  id: string,
  options?: { readonly lease?: Duration.Input | undefined }
): Effect.Effect<
  Approved,
  NotFound | AlreadyDecided | ToolError<Tool.Error<Toolkit.Tools<T>[number]>>,
  ProposalStore | Toolkit.Requirements<T> | NeedsHumanConfirmFor<Toolkit.Tools<T>[number]>
> =>
  // Written once for any toolkit; the signature restores what its type knows.
  decisions.decide(toolkit, id, "approve", options) as Effect.Effect<Approved, never, ProposalStore>

/**
 * Retries an in-doubt delivery: the human is asked again through the
 * caller's `HumanConfirm`, and an approval delivers with the same idempotency
 * key as the attempt that stopped, so an outside system that honours the key
 * does not act twice. A human who turns the retry down settles it `failed`.
 * The audit records the retry.
 *
 * @example
 * import { Effect } from "effect"
 * import { HumanConfirm, Proposal, Toolkit } from "@graded/core"
 * declare const desk: Toolkit.Any
 * const retry = Proposal.retry(desk, "p-1").pipe(
 *   Effect.provide(HumanConfirm.layer(HumanConfirm.scripted([HumanConfirm.approve("agent:alice")])))
 * )
 *
 * @since 0.1.0
 * @category constructors
 */
export const retry = <T extends Toolkit.Any>(
  toolkit: T,
  id: string,
  options?: { readonly lease?: Duration.Input | undefined }
): Effect.Effect<
  Approved,
  NotFound | AlreadyDecided | ToolError<Tool.Error<Toolkit.Tools<T>[number]>>,
  ProposalStore | Toolkit.Requirements<T> | NeedsHumanConfirmFor<Toolkit.Tools<T>[number]>
> => decisions.decide(toolkit, id, "retry", options) as Effect.Effect<Approved, never, ProposalStore>

/**
 * Marks an in-doubt delivery as done: a human checked the outside system and
 * it went out. It settles `delivered` with no output, and the audit says who
 * said so. Refused in a model's fiber or a read tool's own code, like every
 * decision.
 *
 * @since 0.1.0
 * @category constructors
 */
export const markDone = (
  id: string,
  options?: { readonly note?: string | undefined }
): Effect.Effect<Proposal, NotFound | AlreadyDecided | Refused, ProposalStore> => decisions.markDone(id, options)

/**
 * Moves every proposal whose process stopped (died, or hung past its lease)
 * and every pending proposal past its `expiresAt`, audits each, and returns
 * them: an approval that had not recorded its delivery waits for a human
 * again (nothing went out); a delivery that had begun is `in-doubt` (it may
 * have gone out: a human marks it done or retries it, it is never re-run
 * silently); an unanswered proposal is `expired`. Run it from any process,
 * on start or on a schedule.
 *
 * @since 0.1.0
 * @category constructors
 */
export const recover: Effect.Effect<ReadonlyArray<Proposal>, never, ProposalStore> = decisions.recover

/**
 * Rejects a pending proposal: nothing is delivered, and the rejection is
 * audited (`decided`, `rejected`, with its reason). Refused in a model's
 * fiber or a read tool's own code, like every decision.
 *
 * @since 0.1.0
 * @category constructors
 */
export const reject = (
  id: string,
  decision: { readonly by: string; readonly reason: string }
): Effect.Effect<Proposal, NotFound | AlreadyDecided | Refused, ProposalStore> => decisions.reject(id, decision)
