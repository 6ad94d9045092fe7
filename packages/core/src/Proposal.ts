/**
 * Proposals: a write or send a model suggested, recorded for a human to
 * decide. `Proposal.tool` makes the read tool a model calls to propose; the
 * human side lists them, approves one (possibly edited), or rejects it. An approval asks the human through the caller's `HumanConfirm`
 * like any other write or send, delivers exactly once, and a second approval
 * of the same proposal delivers nothing and says why.
 *
 * @since 0.1.0
 */
import { Clock, Duration, Effect, Option, Schema } from "effect"
import type { Confirmable } from "./Grade.js"
import { mayCause } from "./internal/authority.js"
import { admitAll, guardsHere } from "./internal/guard.js"
import { refuse } from "./internal/refuse.js"
import { confirmerOf, inSchema, isSend } from "./internal/tool.js"
import * as Audit from "./Audit.js"
import * as Invocation from "./Invocation.js"
import { isProposalRecord, type MadeByToolProposalOnly } from "./internal/capability.js"
import * as internal from "./internal/proposal.js"
import * as states from "./internal/proposalStatus.js"
import { AlreadyDecided, NotFound, ProposalStore } from "./ProposalStore.js"
import type * as Tool from "./Tool.js"
import type * as Toolkit from "./Toolkit.js"
import { InvalidEdit, parseOptions, Refused, Rejected, type ToolError } from "./ToolError.js"
import { failureOf } from "./internal/registry.js"
import { causeLine, proposalStoreHere, runStoreIfAny, transaction } from "./internal/services.js"
import { sealed } from "./internal/seal.js"

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
 *   Proposal.isNew(record) ? Effect.succeed(record.tool) : Effect.dieMessage("not made by Tool.proposal")
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
 * it the proposal tool refuses, so a model cannot flood the human's page;
 * `expireAfter` bounds how long a proposal waits for a decision.
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
  readonly expireAfter?: Duration.DurationInput | undefined
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
export const payloadToConfirm = (proposal: Proposal): unknown =>
  (proposal.status === "in-doubt" || proposal.status === "approving") && proposal.approved !== undefined
    ? proposal.approved
    : proposal.grade === "send"
    ? proposal.payload
    : proposal.input

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

const iso = (millis: number) => new Date(millis).toISOString()
const now = sealed(Effect.map(Clock.currentTimeMillis, iso))

/**
 * How long an approval holds a proposal before another process may settle it
 * (`Proposal.recover`) when no `lease` is given: 15 minutes, renewed once the
 * human has approved, before delivery.
 *
 * @since 0.1.0
 * @category constructors
 */
export const defaultLease: Duration.Duration = Duration.minutes(15)

/**
 * Why an approval interrupted while delivering was left in doubt.
 *
 * @since 0.1.0
 * @category errors
 */
export const interruptedWhileDelivering =
  "the delivery was interrupted after it began; it may have gone out, so it is not delivered again unless a human retries it"

type Decide = "approve" | "retry"

// The run a proposal belongs to, read where a RunStore is in scope.
const runOf = (proposal: Proposal) =>
  proposal.runId === undefined ? Effect.succeed(undefined) : Effect.gen(function*() {
    const runs = yield* runStoreIfAny
    if (runs._tag === "None") return undefined
    return Option.getOrUndefined(yield* Effect.option(runs.value.get(proposal.runId!)))
  })

// How the run a proposal belongs to was cancelled: a cancelled run's open
// proposals are rejected, and one a human was deciding while it was
// cancelled must not go out when they answer.
const runCancelled = (proposal: Proposal) =>
  Effect.map(runOf(proposal), (run) => run?.state.ended?.status === "cancelled" ? run.state.ended : undefined)

// Approval and retry are one path: a human is asked through the caller's
// HumanConfirm, the delivery is recorded under its key, then it runs.
const decide = (
  toolkit: Toolkit.Any,
  id: string,
  mode: Decide,
  options?: { readonly lease?: Duration.DurationInput | undefined }
) =>
  Effect.flatMap(
    Effect.flatMap(proposalStoreHere, (store) => store.get(id)),
    (stored) => underItsTrace(stored)(decideStored(toolkit, stored, mode, options))
  )

// A decision is audited under the trace of the run (or call) that proposed
// it, so that the run's trail holds who decided what; the decider is `by`.
const underItsTrace = (proposal: Proposal) =>
  proposal.traceId === undefined ? <A, E, R>(self: Effect.Effect<A, E, R>) => self
    : Invocation.within({ traceId: proposal.traceId })

const decideStored = (
  toolkit: Toolkit.Any,
  stored: Proposal,
  mode: Decide,
  options?: { readonly lease?: Duration.DurationInput | undefined }
) =>
  Effect.gen(function*() {
    const store = yield* proposalStoreHere
    const id = stored.id
    const tool = toolkit.get(stored.tool)
    const confirm = tool === undefined || tool.grade !== stored.grade ? undefined : confirmerOf(tool)
    if (tool === undefined || confirm === undefined) {
      return yield* refuse(
        new Refused({
          tool: stored.tool,
          gate: "unknown",
          reason: `this toolkit has no ${stored.grade} tool ${stored.tool} to deliver it`
        })
      )
    }
    // Refused before the proposal is claimed: a model's fiber or a read
    // tool's own code leaves it waiting for a human.
    const refusal = yield* mayCause(tool.name, stored.grade)
    if (refusal !== undefined) return yield* refuse(refusal)
    const context = yield* Invocation.current
    // A human's button too is offered only where the guards in force (a
    // policy) authorize the tool, for the human who presses it, judged on the
    // facts the run recorded, as the call was (the app's own facts stand).
    const guards = yield* guardsHere
    const facts = guards.length === 0 ? undefined : (yield* runOf(stored))?.state.facts
    const judged = facts === undefined ? context : Invocation.merge(context, { facts: { ...facts, ...context.facts } })
    const guarded = yield* admitAll(guards, tool, stored.payload, judged)
    if (guarded !== undefined) {
      return yield* refuse(new Refused({ tool: tool.name, gate: guarded.gate, reason: guarded.reason }))
    }
    const by = context.actor ?? "human"
    const atomically = transaction(store)
    // A cancelled run's proposal waiting still (its cancel raced an earlier
    // approval, which put it back) is rejected as the cancel would have.
    const cancelledBefore = yield* runCancelled(stored)
    if (cancelledBefore !== undefined && stored.status === "pending") {
      const reason = `the run was cancelled: ${cancelledBefore.reason}`
      yield* store.reject(id, { by: cancelledBefore.by, at: cancelledBefore.at, edited: false, reason })
      return yield* new Rejected({ tool: tool.name, by: cancelledBefore.by, reason })
    }
    const lease = Duration.toMillis(Duration.decode(options?.lease ?? defaultLease))
    const until = (millis: number) => iso(millis + lease)
    const claimed = mode === "approve"
      ? yield* store.claim(id, by, until(yield* Clock.currentTimeMillis))
      : yield* atomically(Effect.tap(
        store.retry(id, by, until(yield* Clock.currentTimeMillis)),
        () => Audit.record({ type: "in-doubt", tool: tool.name, proposal: id, action: "retried", by })
      ))
    // A retry keeps the key the first attempt went out with.
    const key = claimed.deliveryKey ?? crypto.randomUUID()
    // Once the human approved: the delivery is recorded under its key (a lost
    // lease stops it here, before anything is written or sent), and from then
    // on an interruption may have let it out.
    let delivering = false
    // While the delivery is being recorded: a failure then says nothing of
    // whether the record holds (a write may commit and its answer be lost).
    let recording = false
    // Whether what the human approved was an edit: kept with a delivery in doubt.
    let editedApproval = false
    // While the human decided, the proposal may have expired or its run been
    // cancelled: then nothing goes out.
    const closedMeanwhile = Effect.gen(function*() {
      const millis = yield* Clock.currentTimeMillis
      if (stored.expiresAt !== undefined && stored.expiresAt <= iso(millis)) {
        return yield* refuse(
          new Refused({
            tool: tool.name,
            gate: "proposal",
            reason: `it expired at ${stored.expiresAt}, while the human decided; nothing was delivered`
          })
        )
      }
      const cancelled = yield* runCancelled(stored)
      if (cancelled !== undefined) {
        return yield* new Rejected({
          tool: tool.name,
          by: cancelled.by,
          reason: `the run was cancelled while the human decided: ${cancelled.reason}`
        })
      }
      return millis
    })
    const schema = isSend(tool) ? tool.payload : tool.input
    // Only while this approval's claim still holds it: one whose lease
    // lapsed may have been claimed by another human since. What the human
    // approved is recorded with the delivery, so that a retry delivers it.
    const beforeEffect = (approval: { readonly payload: unknown; readonly edited: boolean }) =>
      Effect.gen(function*() {
        // A retry delivers again what was approved, under the same key: an
        // edit would be another delivery, which the key would hide.
        if (mode === "retry" && approval.edited && claimed.approved !== undefined) {
          return yield* refuse(
            new Refused({
              tool: tool.name,
              gate: "proposal",
              reason: "a retry delivers what was approved before, unedited; propose the edited call again instead"
            })
          )
        }
        const millis = yield* closedMeanwhile
        const payload = yield* inSchema(tool)(Schema.encode(schema)(approval.payload)).pipe(
          Effect.mapError(() =>
            new Refused({ tool: tool.name, gate: "proposal", reason: "what was approved does not encode to be kept" })
          )
        )
        recording = true
        editedApproval = approval.edited
        yield* store.beginDelivery(id, key, until(millis), claimed.decision, { payload, edited: approval.edited })
        recording = false
        delivering = true
      })
    // A retry that stops before its delivery began is in doubt as it was,
    // with the reason it was in doubt: its first attempt may have gone out.
    const asItWas = (at: string): Outcome =>
      mode === "retry"
        ? { status: "in-doubt", decision: { by, at, edited: false, reason: stored.decision?.reason } }
        : { status: "pending" }
    const interrupted = Effect.flatMap(now, (at) =>
      store.settle(
        id,
        delivering || recording
          ? { status: "in-doubt", decision: { by, at, edited: editedApproval, reason: interruptedWhileDelivering } }
          : asItWas(at)
      )).pipe(Effect.ignore)
    // A retry is asked about what was approved before (edited or not).
    const asked = mode === "retry" ? payloadToConfirm(claimed) : payloadToConfirm(stored)
    const exit = yield* Effect.exit(Effect.onInterrupt(
      Effect.flatMap(
        inSchema(tool)(Schema.decodeUnknown(schema, parseOptions)(asked)).pipe(
          Effect.mapError(() =>
            new Refused({
              tool: tool.name,
              gate: "proposal",
              reason: `the stored ${stored.grade === "send" ? "payload" : "input"} no longer fits the tool's schema`
            })
          )
        ),
        (payload) => confirm(payload, { beforeEffect, idempotencyKey: key })
      ),
      () => interrupted
    ))
    const at = yield* now
    if (exit._tag === "Success") {
      const { by, edited, output } = exit.value
      const encoded = yield* Effect.orElseSucceed(inSchema(tool)(Schema.encode(tool.output)(output)), () => undefined)
      const settled = yield* store.settle(id, { status: "delivered", decision: { by, at, edited }, output: encoded })
      return { proposal: settled, output }
    }
    const failure = exit.cause._tag === "Fail" ? exit.cause.error : undefined
    // The delivery could not be recorded: the proposal is no longer this
    // approval's (its lease lapsed, and it may be another human's by now), so
    // it is left as it is.
    if (failure instanceof AlreadyDecided || failure instanceof NotFound) return yield* Effect.failCause(exit.cause)
    const decision = { by: context.actor ?? "human", at, edited: false }
    // The record of the delivery failed (the store erred, a lock held), and
    // may hold all the same: the store is asked. Recorded, the delivery may
    // have begun, so it is in doubt for a human; not recorded, nothing went
    // out and it waits as it was. A store that cannot answer leaves it to
    // its lease (`recover` then decides the same way).
    if (recording) {
      const found = yield* Effect.exit(store.get(id))
      const now = found._tag === "Success" ? found.value : undefined
      if (now?.status === "delivering" && now.deliveryKey === key) {
        yield* store.settle(id, {
          status: "in-doubt",
          decision: {
            ...decision,
            edited: editedApproval,
            reason: `recording the delivery failed, and it may have begun: ${causeLine(exit.cause)}`
          }
        }, ["delivering"]).pipe(Effect.ignore)
      } else if (now?.status === "approving") {
        yield* store.settle(id, asItWas(at), ["approving"]).pipe(Effect.ignore)
      }
      return yield* Effect.failCause(exit.cause)
    }
    // What would wait again (an invalid edit, a refusal) does not, once its run was cancelled.
    const waitsAgain = mode === "approve" && !delivering &&
      (failure instanceof Refused || failure instanceof InvalidEdit)
    const cancelled = waitsAgain ? yield* runCancelled(stored) : undefined
    if (cancelled !== undefined) {
      yield* store.settle(id, {
        status: "rejected",
        decision: { by: cancelled.by, at, edited: false, reason: `the run was cancelled: ${cancelled.reason}` }
      }).pipe(Effect.ignore)
      return yield* Effect.failCause(exit.cause)
    }
    // What the run's model is told of a failure: the tool's own text for it, never an exception's.
    const failed = {
      status: "failed" as const,
      decision: failure === undefined ? decision : { ...decision, reason: failureOf(tool, failure).message }
    }
    yield* store.settle(
      id,
      delivering
        // The tool ran and failed: final.
        ? failed
        : failure instanceof Rejected
        ? mode === "retry"
          // A retry turned down: the human says it is not to go out again.
          ? { status: "failed", decision: { ...decision, by: failure.by, reason: failure.reason } }
          : { status: "rejected", decision: { by: failure.by, at, edited: false, reason: failure.reason } }
        // Nothing was delivered on an invalid edit or a refusal: the proposal
        // waits for a better decision, as it was. Any other failure is final.
        : failure instanceof Refused || failure instanceof InvalidEdit
        ? asItWas(at)
        : failed
    ).pipe(Effect.ignore)
    return yield* Effect.failCause(exit.cause)
  })

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
  options?: { readonly lease?: Duration.DurationInput | undefined }
): Effect.Effect<
  Approved,
  NotFound | AlreadyDecided | ToolError<Tool.Error<Toolkit.Tools<T>[number]>>,
  ProposalStore | Toolkit.Requirements<T>
> =>
  // Written once for any toolkit; the signature restores what its type knows.
  decide(toolkit, id, "approve", options) as Effect.Effect<Approved, never, ProposalStore>

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
  options?: { readonly lease?: Duration.DurationInput | undefined }
): Effect.Effect<
  Approved,
  NotFound | AlreadyDecided | ToolError<Tool.Error<Toolkit.Tools<T>[number]>>,
  ProposalStore | Toolkit.Requirements<T>
> => decide(toolkit, id, "retry", options) as Effect.Effect<Approved, never, ProposalStore>

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
): Effect.Effect<Proposal, NotFound | AlreadyDecided | Refused, ProposalStore> =>
  Effect.gen(function*() {
    const store = yield* proposalStoreHere
    const stored = yield* store.get(id)
    const refusal = yield* mayCause(stored.tool, stored.grade)
    if (refusal !== undefined) return yield* refuse(refusal)
    // Only a delivery in doubt is marked: one still running settles itself.
    if (stored.status !== "in-doubt") {
      return yield* new AlreadyDecided({ id, status: stored.status, by: stored.decision?.by, at: stored.decision?.at })
    }
    const by = (yield* Invocation.current).actor ?? "human"
    const reason = options?.note ?? "marked delivered by a human after checking"
    const at = yield* now
    // Only from in-doubt: a retry that began meanwhile is not settled under it.
    return yield* underItsTrace(stored)(
      transaction(store)(Effect.tap(
        store.settle(id, { status: "delivered", decision: { by, at, edited: false, reason }, output: undefined }, [
          "in-doubt"
        ]),
        () => Audit.record({ type: "in-doubt", tool: stored.tool, proposal: id, action: "marked-done", by })
      ))
    )
  })

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
export const recover: Effect.Effect<ReadonlyArray<Proposal>, never, ProposalStore> = Effect.gen(function*() {
  const store = yield* proposalStoreHere
  const at = yield* now
  // What moved and its audit entries commit together.
  return yield* transaction(store)(Effect.tap(store.expire(at), (moved) => Effect.forEach(moved, surfaced)))
})

const surfaced = (proposal: Proposal) =>
  underItsTrace(proposal)(
    proposal.status === "in-doubt"
      ? Audit.record({
        type: "in-doubt",
        tool: proposal.tool,
        proposal: proposal.id,
        action: "surfaced",
        by: proposal.decision?.by ?? "graded"
      })
      : Audit.record({
        type: "refused",
        tool: proposal.tool,
        gate: proposal.status === "expired" ? "expiry" : "lease",
        reason: proposal.decision?.reason ??
          `the approval stopped before anything was delivered; ${proposal.id} waits for a human again`
      })
  )

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
): Effect.Effect<Proposal, NotFound | AlreadyDecided | Refused, ProposalStore> =>
  Effect.gen(function*() {
    const store = yield* proposalStoreHere
    const stored = yield* store.get(id)
    // A decision, like any other: a model's fiber or a read tool's own code
    // does not make it.
    const refusal = yield* mayCause(stored.tool, stored.grade)
    if (refusal !== undefined) return yield* refuse(refusal)
    const at = yield* now
    // Audited like a rejection on a card (who, and why), in the same transaction.
    return yield* underItsTrace(stored)(
      transaction(store)(Effect.tap(
        store.reject(id, { by: decision.by, reason: decision.reason, at, edited: false }),
        () =>
          Audit.record({
            type: "decided",
            tool: stored.tool,
            by: decision.by,
            decision: "rejected",
            edited: false,
            reason: decision.reason
          })
      ))
    )
  })

// Sealed where they are made (Invocation.seal): each is shared by every
// fiber, and a tool's code that finds one must not rewrite it in place.
sealed(recover)
