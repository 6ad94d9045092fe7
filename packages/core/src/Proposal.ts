/**
 * Proposals: a write or send a model suggested, recorded for a human to
 * decide. `Proposal.tool` makes the read tool a model calls to propose; the
 * human side lists them, approves one (possibly edited), or rejects it. An approval asks the human through the caller's `HumanConfirm`
 * like any other write or send, delivers exactly once, and a second approval
 * of the same proposal delivers nothing and says why.
 *
 * @since 0.1.0
 */
import { Clock, Duration, Effect, Schema } from "effect"
import type { Confirmable } from "./Grade.js"
import { refusalHere } from "./internal/invocation.js"
import { refuse } from "./internal/refuse.js"
import { confirmerOf, isSend } from "./internal/tool.js"
import * as Audit from "./Audit.js"
import * as Invocation from "./Invocation.js"
import { isProposalRecord, type MadeByToolProposalOnly } from "./internal/capability.js"
import * as internal from "./internal/proposal.js"
import { type AlreadyDecided, type NotFound, ProposalStore } from "./ProposalStore.js"
import type * as Tool from "./Tool.js"
import type * as Toolkit from "./Toolkit.js"
import { InvalidEdit, parseOptions, Refused, Rejected, type ToolError } from "./ToolError.js"

/**
 * Where a proposal stands: `pending` until a human acts, `approving` while an
 * approval runs, then `delivered`, `rejected` or `failed`, which are final.
 *
 * @since 0.1.0
 * @category models
 */
export type Status = "pending" | "approving" | "delivered" | "rejected" | "failed"

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
  readonly decision?: Decided | undefined
  /**
   * While `approving`: until when (ISO) the approving process holds it. It
   * renews the lease before it delivers; once the lease has passed,
   * `Proposal.recover` settles the proposal as failed, and it is never
   * delivered again.
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
export type New = Omit<Proposal, "id" | "status" | "decision" | "output" | "leaseUntil"> & {
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
 * `pending` hands the proposal back (nothing was delivered).
 *
 * @since 0.1.0
 * @category models
 */
export type Outcome =
  | { readonly status: "delivered"; readonly decision: Decided; readonly output: unknown }
  | { readonly status: "failed"; readonly decision: Decided }
  | { readonly status: "rejected"; readonly decision: Decided }
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
 * it the proposal tool refuses, so a model cannot flood the human's page.
 *
 * @since 0.1.0
 * @category models
 */
export interface ToolOptions {
  readonly maxPendingPerTrace?: number | undefined
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
 * Lists proposals, optionally by status.
 *
 * @since 0.1.0
 * @category constructors
 */
export const list = (filter?: { readonly status?: Status | undefined }): Effect.Effect<
  ReadonlyArray<Proposal>,
  never,
  ProposalStore
> => Effect.flatMap(ProposalStore, (store) => store.list(filter))

/**
 * One proposal, by id.
 *
 * @since 0.1.0
 * @category constructors
 */
export const get = (id: string): Effect.Effect<Proposal, NotFound, ProposalStore> =>
  Effect.flatMap(ProposalStore, (store) => store.get(id))

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
const now = Effect.map(Clock.currentTimeMillis, iso)

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
 * Why an approval interrupted while delivering was settled as failed.
 *
 * @since 0.1.0
 * @category errors
 */
export const interruptedWhileDelivering =
  "the approval was interrupted while delivering; it may have gone out, so it is not delivered again"

/**
 * Approves a proposal through the caller's `HumanConfirm`: the human is asked,
 * through the caller's UI, with the stored payload (a write's input, a send's
 * payload prepared when it was proposed), and may approve, edit (validated
 * again with the tool's schema) or reject it. An approval delivers exactly
 * once; a rejection is final; an invalid edit or a refusal delivers nothing
 * and leaves the proposal pending. The toolkit is the one the human works
 * with, holding the write or send tool itself. A model's fiber, or a read
 * tool's own code, is refused before the proposal is touched.
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
  Effect.gen(function*() {
    const store = yield* ProposalStore
    const stored = yield* store.get(id)
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
    // tool's own code leaves it pending for a human.
    const refusal = yield* refusalHere(tool.name, stored.grade)
    if (refusal !== undefined) return yield* refuse(refusal)
    const context = yield* Invocation.current
    const by = context.actor ?? "human"
    const lease = Duration.toMillis(Duration.decode(options?.lease ?? defaultLease))
    yield* store.claim(id, by, iso((yield* Clock.currentTimeMillis) + lease))
    // Once the human approved: the lease is renewed (a lost lease stops it
    // here, before anything is written or sent), and from then on an
    // interruption may have let it out.
    let delivering = false
    const beforeEffect = Effect.flatMap(Clock.currentTimeMillis, (millis) => store.renew(id, iso(millis + lease))).pipe(
      Effect.zipRight(Effect.sync(() => delivering = true))
    )
    const interrupted = Effect.flatMap(now, (at) =>
      store.settle(
        id,
        delivering
          ? { status: "failed", decision: { by, at, edited: false, reason: interruptedWhileDelivering } }
          : { status: "pending" }
      )).pipe(Effect.ignore)
    const schema = isSend(tool) ? tool.payload : tool.input
    const exit = yield* Effect.exit(Effect.onInterrupt(
      Effect.flatMap(
        Schema.decodeUnknown(schema, parseOptions)(stored.grade === "send" ? stored.payload : stored.input).pipe(
          Effect.mapError(() =>
            new Refused({
              tool: tool.name,
              gate: "proposal",
              reason: `the stored ${stored.grade === "send" ? "payload" : "input"} no longer fits the tool's schema`
            })
          )
        ),
        (payload) => confirm(payload, beforeEffect)
      ),
      () => interrupted
    ))
    const at = yield* now
    if (exit._tag === "Success") {
      const { by, edited, output } = exit.value
      const encoded = yield* Effect.orElseSucceed(Schema.encode(tool.output)(output), () => undefined)
      const settled = yield* store.settle(id, { status: "delivered", decision: { by, at, edited }, output: encoded })
      return { proposal: settled, output }
    }
    const failure = exit.cause._tag === "Fail" ? exit.cause.error : undefined
    yield* store.settle(
      id,
      failure instanceof Rejected
        ? { status: "rejected", decision: { by: failure.by, at, edited: false, reason: failure.reason } }
        // Nothing was delivered on an invalid edit or a refusal: the proposal
        // waits for a better decision. Any other failure is final.
        : failure instanceof Refused || failure instanceof InvalidEdit
        ? { status: "pending" }
        : { status: "failed", decision: { by: context.actor ?? "human", at, edited: false } }
    )
    return yield* Effect.failCause(exit.cause)
  }) as Effect.Effect<Approved, never, ProposalStore>

/**
 * Settles every proposal whose approval stopped (its process died or hung past
 * its lease) as `failed`, audits each (gate `lease`), and returns them for a
 * human to check: it may have been delivered, so it is never delivered again.
 * Run it from any process, on start or on a schedule.
 *
 * @since 0.1.0
 * @category constructors
 */
export const recover: Effect.Effect<ReadonlyArray<Proposal>, never, ProposalStore> = Effect.gen(function*() {
  const store = yield* ProposalStore
  const expired = yield* store.expire(yield* now)
  for (const proposal of expired) {
    yield* Audit.record({
      type: "refused",
      tool: proposal.tool,
      gate: "lease",
      reason: proposal.decision?.reason ?? ""
    })
  }
  return expired
})

/**
 * Rejects a pending proposal: nothing is delivered.
 *
 * @since 0.1.0
 * @category constructors
 */
export const reject = (
  id: string,
  decision: { readonly by: string; readonly reason: string }
): Effect.Effect<Proposal, NotFound | AlreadyDecided, ProposalStore> =>
  Effect.flatMap(
    ProposalStore,
    (store) =>
      Effect.flatMap(now, (at) => store.reject(id, { by: decision.by, reason: decision.reason, at, edited: false }))
  )
