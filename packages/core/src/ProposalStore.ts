/**
 * Where proposals wait for a human. A proposal is a write or send a model
 * suggested (through `Tool.proposal`) and nobody has decided yet. The store
 * makes each decision happen once: `claim` moves a proposal out of `pending`
 * atomically, so a second approval finds it taken; `delivered`, `failed` and
 * `rejected` are final. Only `Tool.proposal` makes the records it accepts.
 *
 * @since 0.1.0
 */
import { Clock, Context, Effect, Either, Layer, Schema } from "effect"
import * as internal from "./internal/capability.js"
import type { Decided, New, Outcome, Proposal, Status } from "./Proposal.js"

/**
 * No proposal has this id.
 *
 * @since 0.1.0
 * @category errors
 */
export class NotFound extends Schema.TaggedError<NotFound>()("@graded/core/ProposalStore/NotFound", {
  id: Schema.String
}) {
  override get message(): string {
    return `There is no proposal ${this.id}`
  }
}

/**
 * The proposal was decided already; nothing is delivered again.
 *
 * @since 0.1.0
 * @category errors
 */
export class AlreadyDecided extends Schema.TaggedError<AlreadyDecided>()("@graded/core/ProposalStore/AlreadyDecided", {
  id: Schema.String,
  status: Schema.String,
  by: Schema.optional(Schema.String)
}) {
  override get message(): string {
    return `Proposal ${this.id} was already decided (${this.status}${
      this.by !== undefined ? ` by ${this.by}` : ""
    }); nothing was delivered again`
  }
}

/**
 * The service that holds proposals: `Tool.proposal` adds to it and `Proposal`
 * reads and decides them; provide `ProposalStore.memory` or your own.
 *
 * @since 0.1.0
 * @category services
 */
export class ProposalStore extends Context.Tag("@graded/core/ProposalStore")<ProposalStore, ProposalStore.Service>() {}

/**
 * @since 0.1.0
 */
export declare namespace ProposalStore {
  /**
   * What a store implements so that each decision happens once: `claim` and
   * `reject` take only a pending proposal, `settle` only one being approved.
   *
   * @since 0.1.0
   * @category models
   */
  export interface Service {
    /** Records a proposal made by `Tool.proposal`; any other record is refused. */
    readonly add: (proposal: New) => Effect.Effect<Proposal>
    readonly get: (id: string) => Effect.Effect<Proposal, NotFound>
    readonly list: (filter?: { readonly status?: Status | undefined }) => Effect.Effect<ReadonlyArray<Proposal>>
    /**
     * Moves a pending proposal to `approving`, held until `leaseUntil` (ISO),
     * or fails: once per proposal.
     */
    readonly claim: (id: string, by: string, leaseUntil?: string) => Effect.Effect<Proposal, NotFound | AlreadyDecided>
    /** Extends the lease of a proposal being approved, or fails if it is no longer `approving`. */
    readonly renew: (id: string, leaseUntil: string) => Effect.Effect<Proposal, NotFound | AlreadyDecided>
    /**
     * Settles every proposal whose approval's lease has passed by `now` (ISO)
     * as `failed` (it may have been delivered; it is never delivered again),
     * and returns them.
     */
    readonly expire: (now: string) => Effect.Effect<ReadonlyArray<Proposal>>
    /** Moves a pending proposal to `rejected`, or fails. */
    readonly reject: (id: string, decision: Decided) => Effect.Effect<Proposal, NotFound | AlreadyDecided>
    /**
     * Records how an approval ended. Only a proposal being approved can be
     * settled: a final state is never left.
     */
    readonly settle: (id: string, outcome: Outcome) => Effect.Effect<Proposal, NotFound | AlreadyDecided>
  }
}

/**
 * Why a proposal whose approval stopped was settled as failed.
 *
 * @since 0.1.0
 * @category errors
 */
export const leaseEnded = (proposal: Proposal): string =>
  `its approval by ${proposal.decision?.by ?? "someone"} stopped before it settled (the lease ended at ` +
  `${proposal.leaseUntil}); it may have been delivered, so it is not delivered again`

/**
 * An in-memory store, for tests, demos and single-process apps.
 *
 * @since 0.1.0
 * @category layers
 */
export const memory: Layer.Layer<ProposalStore> = Layer.sync(ProposalStore, () => {
  const proposals = new Map<string, Proposal>()
  let next = 0
  const put = (proposal: Proposal) => (proposals.set(proposal.id, proposal), proposal)
  // Each operation checks and updates in one synchronous step: the runtime
  // cannot switch fibers inside it, so two approvals never both claim one
  // proposal.
  const whenPending = (id: string, update: (proposal: Proposal) => Proposal) =>
    Effect.suspend((): Either.Either<Proposal, NotFound | AlreadyDecided> => {
      const proposal = proposals.get(id)
      if (proposal === undefined) return Either.left(new NotFound({ id }))
      if (proposal.status !== "pending") {
        return Either.left(new AlreadyDecided({ id, status: proposal.status, by: proposal.decision?.by }))
      }
      return Either.right(put(update(proposal)))
    })
  const inState = (id: string, status: Status, update: (proposal: Proposal) => Proposal) =>
    Effect.suspend((): Either.Either<Proposal, NotFound | AlreadyDecided> => {
      const proposal = proposals.get(id)
      if (proposal === undefined) return Either.left(new NotFound({ id }))
      if (proposal.status !== status) {
        return Either.left(new AlreadyDecided({ id, status: proposal.status, by: proposal.decision?.by }))
      }
      return Either.right(put(update(proposal)))
    })
  return {
    add: (fields) =>
      internal.isProposalRecord(fields)
        ? Effect.sync(() => {
          const { madeByToolProposalOnly: _, ...record } = fields
          return put({ ...record, id: `p-${++next}`, status: "pending" })
        })
        : Effect.die(new Error("ProposalStore.add: this record was not made by Tool.proposal")),
    get: (id) =>
      Effect.suspend(() => {
        const proposal = proposals.get(id)
        return proposal === undefined ? Effect.fail(new NotFound({ id })) : Effect.succeed(proposal)
      }),
    list: (filter) =>
      Effect.sync(() =>
        [...proposals.values()].filter((proposal) => filter?.status === undefined || proposal.status === filter.status)
      ),
    claim: (id, by, leaseUntil) =>
      Effect.flatMap(Clock.currentTimeMillis, (millis) =>
        whenPending(id, (proposal) => ({
          ...proposal,
          status: "approving",
          decision: { by, at: new Date(millis).toISOString(), edited: false },
          leaseUntil
        }))),
    renew: (id, leaseUntil) => inState(id, "approving", (proposal) => ({ ...proposal, leaseUntil })),
    expire: (now) =>
      Effect.sync(() => {
        const expired: Array<Proposal> = []
        for (const proposal of proposals.values()) {
          if (proposal.status === "approving" && proposal.leaseUntil !== undefined && proposal.leaseUntil < now) {
            expired.push(put({
              ...proposal,
              status: "failed",
              leaseUntil: undefined,
              decision: { by: "graded", at: now, edited: false, reason: leaseEnded(proposal) }
            }))
          }
        }
        return expired
      }),
    reject: (id, decision) => whenPending(id, (proposal) => ({ ...proposal, status: "rejected", decision })),
    settle: (id, outcome) =>
      inState(id, "approving", (proposal) =>
        outcome.status === "pending"
          ? { ...proposal, status: "pending", decision: undefined, leaseUntil: undefined }
          : { ...proposal, ...outcome, leaseUntil: undefined })
  }
})
