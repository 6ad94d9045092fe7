/**
 * Where proposals wait for a human. A proposal is a write or send a model
 * suggested (through `Tool.proposal`) and nobody has decided yet. The store
 * makes each decision happen once: `claim` moves a proposal out of `pending`
 * atomically, so a second approval finds it taken; `delivered`, `failed` and
 * `rejected` are final. Only `Tool.proposal` makes the records it accepts.
 *
 * @since 0.1.0
 */
import { Clock, Context, Effect, Layer, Schema } from "effect"
import * as internal from "./internal/capability.js"
import * as Printable from "./Printable.js"
import { deadlines } from "./internal/deadlines.js"
import { mayDecide } from "./internal/authority.js"
import { unguarded } from "./internal/memoryStores.js"
import type { Decided, New, Outcome, Proposal } from "./Proposal.js"
import { mayMove, Status } from "./internal/proposalStatus.js"
import { sealed } from "./internal/seal.js"
import { freshService } from "./internal/freshLayer.js"

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
  by: Schema.optional(Schema.String),
  /** When it was decided (ISO), as the store recorded it. */
  at: Schema.optional(Schema.String)
}) {
  // Every field read back from a store is shown as a name: one line, escaped,
  // so a decider stored with a line break cannot print a line of its own.
  override get message(): string {
    return `Proposal ${Printable.name(this.id)} was already decided (${Printable.name(this.status)}${
      this.by !== undefined ? ` by ${Printable.name(this.by)}` : ""
    }${this.at !== undefined ? ` at ${Printable.name(this.at)}` : ""}); nothing was delivered again`
  }
}

/**
 * The service that holds proposals: `Tool.proposal` adds to it and `Proposal`
 * reads and decides them; provide `ProposalStore.memory` or your own.
 *
 * @since 0.1.0
 * @category services
 */
export class ProposalStore
  extends Context.Service<ProposalStore, ProposalStore.Service>()("@graded/core/ProposalStore")
{}

/**
 * @since 0.1.0
 */
export declare namespace ProposalStore {
  /**
   * What a store implements so that each decision happens once. Every method
   * moves a proposal out of the states it names only, atomically, or fails
   * with `AlreadyDecided` (or `NotFound`): `claim` takes a pending proposal
   * that has not expired, `retry` an in-doubt one, `beginDelivery` one being
   * approved, `settle` one being approved, delivered or in doubt as its
   * outcome allows. `delivered`, `rejected`, `failed` and `expired` are final.
   *
   * @since 0.1.0
   * @category models
   */
  export interface Service {
    /** Records a proposal made by `Tool.proposal` or a supervised run; any other record is refused. */
    readonly add: (proposal: New) => Effect.Effect<Proposal>
    readonly get: (id: string) => Effect.Effect<Proposal, NotFound>
    /** Proposals in the order they were added, by status, by run and by trace when given. */
    readonly list: (filter?: Filter) => Effect.Effect<ReadonlyArray<Proposal>>
    /**
     * Moves a pending proposal that has not expired to `approving`, held until
     * `leaseUntil` (ISO), or fails: once per proposal.
     */
    readonly claim: (id: string, by: string, leaseUntil?: string) => Effect.Effect<Proposal, NotFound | AlreadyDecided>
    /**
     * Moves an in-doubt proposal back to `approving` for a human's retry; it
     * keeps its delivery key, so the outside system can recognise the retry.
     */
    readonly retry: (id: string, by: string, leaseUntil: string) => Effect.Effect<Proposal, NotFound | AlreadyDecided>
    /** Extends the lease of a proposal being approved or delivered, or fails if it is in neither state. */
    readonly renew: (id: string, leaseUntil: string) => Effect.Effect<Proposal, NotFound | AlreadyDecided>
    /**
     * Records the delivery before it runs: moves a proposal being approved to
     * `delivering` under the unique `key` (kept if the proposal has one), held
     * until `leaseUntil`. Nothing is delivered unless this succeeded. Given
     * `holder` (the decision its claim recorded), it begins only while that
     * claim still holds the proposal: an approval whose lease lapsed and whose
     * proposal another human has claimed since delivers nothing. Given
     * `approved`, what the human approved is recorded with it (`approved`,
     * and the decision's `edited`): a retry of the delivery delivers that.
     */
    readonly beginDelivery: (
      id: string,
      key: string,
      leaseUntil: string,
      holder?: Pick<Decided, "by" | "at">,
      approved?: Approval
    ) => Effect.Effect<Proposal, NotFound | AlreadyDecided>
    /**
     * At `now` (ISO): hands back to `pending` every approval whose lease has
     * passed before its delivery was recorded (nothing went out), marks
     * `in-doubt` every delivery whose lease has passed, and every lapsed
     * retry of one (it may have gone out: a human decides), and marks `expired` every pending proposal whose
     * `expiresAt` has passed. Returns the proposals it moved, in the order they were added; each moves at most
     * once a call, from the state it was in when the call began.
     */
    readonly expire: (now: string) => Effect.Effect<ReadonlyArray<Proposal>>
    /** Moves a pending proposal to `rejected`, or fails. */
    readonly reject: (id: string, decision: Decided) => Effect.Effect<Proposal, NotFound | AlreadyDecided>
    /**
     * Records how an approval ended: from `approving`, back to `pending`,
     * `rejected` or `failed`; from `delivering`, `delivered`, `failed` or
     * `in-doubt`; from `approving`, back to `in-doubt` (a retry that did not
     * begin); from `in-doubt`, `delivered` or `failed` (a human's word).
     * A final state is never left. `from` narrows the states it may leave
     * (a human marking an in-doubt delivery done passes `["in-doubt"]`, so a
     * delivery running again meanwhile is not settled under it).
     */
    readonly settle: (
      id: string,
      outcome: Outcome,
      from?: ReadonlyArray<Status>
    ) => Effect.Effect<Proposal, NotFound | AlreadyDecided>
    /**
     * Runs `self` as one transaction of the database the store keeps: every
     * write of a graded store or audit sink on that database inside it
     * commits with the others or not at all. graded wraps each transition in
     * it (a state change and its audit entries); a store without it (memory)
     * writes each step at once.
     *
     * @since 0.3.0
     */
    readonly withTransaction?: (<A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>) | undefined
  }

  /**
   * What a human approved, as `beginDelivery` records it with the delivery:
   * the payload (encoded; a write's input, a send's payload) and whether it
   * was edited.
   *
   * @since 0.3.0
   * @category models
   */
  export interface Approval {
    readonly payload: unknown
    readonly edited: boolean
  }

  /**
   * Which proposals `list` returns.
   *
   * @since 0.1.0
   * @category models
   */
  export interface Filter {
    readonly status?: Status | undefined
    readonly runId?: string | undefined
    /**
     * Only the proposals made under this trace (`Invocation`'s `traceId`):
     * `Tool.proposal` counts a trace's pending proposals with it. A store
     * written before this filter returns more than asked, which is why
     * `Tool.proposal` also checks each proposal's `traceId`.
     *
     * @since 0.2.0
     */
    readonly traceId?: string | undefined
  }
}

/**
 * The states each outcome of `settle` may leave: every state a claim began
 * (`approving`, `delivering`, `in-doubt`; never `pending`, which `claim`,
 * `reject` and `expire` leave) from which `Proposal.transitions` allows the
 * move. The rule every store follows, in one place.
 *
 * @since 0.1.0
 * @category models
 */
export const settleFrom: { readonly [S in Outcome["status"]]: ReadonlyArray<Status> } = (() => {
  const from = (outcome: Outcome["status"]) =>
    Object.freeze(Status.literals.filter((status) => status !== "pending" && mayMove(status, outcome)))
  return Object.freeze({
    pending: from("pending"),
    rejected: from("rejected"),
    failed: from("failed"),
    delivered: from("delivered"),
    "in-doubt": from("in-doubt")
  })
})()

/**
 * Why an approval whose lease passed before its delivery was recorded went
 * back to `pending`.
 *
 * @since 0.1.0
 * @category errors
 */
export const approvalLapsed = (proposal: Proposal): string =>
  `its approval by ${proposal.decision?.by ?? "someone"} stopped before anything was delivered (the lease ended ` +
  `at ${proposal.leaseUntil}); it waits for a human again`

/**
 * Why a delivery whose lease passed is in doubt.
 *
 * @since 0.1.0
 * @category errors
 */
export const leaseEnded = (proposal: Proposal): string =>
  `its delivery, approved by ${proposal.decision?.by ?? "someone"}, stopped before it settled (the lease ended at ` +
  `${proposal.leaseUntil}); it may have gone out, so it is not delivered again unless a human retries it`

/**
 * Why a pending proposal expired.
 *
 * @since 0.1.0
 * @category errors
 */
export const expiredReason = (proposal: Proposal): string =>
  `no human decided before ${proposal.expiresAt}; nothing was delivered`

const guardedStores = new WeakSet<object>()

/**
 * `store` with every method that changes a human's queue (`claim`, `retry`,
 * `renew`, `beginDelivery`, `reject`, `settle`, and `expire`, which hands
 * approvals back and marks deliveries in doubt) refused where no human
 * decides: in a
 * model's fiber, or in any tool's own code (a read tool's `run` that holds
 * the store, a send's `deliver`). Such a call dies with `ToolError.Refused`
 * and moves nothing. `Proposal.approve`, `reject`, `retry` and `markDone`,
 * run by a human's code, call them as before. `ProposalStore.memory` and the
 * SQL stores are guarded; wrap a store of your own the same way.
 *
 * @example
 * import { Layer } from "effect"
 * import { ProposalStore } from "@graded/core"
 * declare const mine: ProposalStore.ProposalStore.Service
 * const layer = Layer.succeed(ProposalStore.ProposalStore, ProposalStore.guardDecisions(mine))
 *
 * @since 0.2.0
 * @category constructors
 */
export const guardDecisions = (store: ProposalStore.Service): ProposalStore.Service => {
  if (guardedStores.has(store)) return store
  // The store's method is called only once the guard passed (`Effect.suspend`):
  // a store's method body may do its work when it is called.
  const deciding = (method: string, id: string) =>
    Effect.flatMap(
      mayDecide(`ProposalStore.${method}(${Printable.escape(id)})`),
      (refusal) => refusal === undefined ? Effect.void : Effect.die(refusal)
    )
  const guarded = Object.freeze<ProposalStore.Service>({
    add: store.add,
    get: store.get,
    list: store.list,
    expire: (now) => Effect.andThen(deciding("expire", now), Effect.suspend(() => store.expire(now))),
    claim: (id, by, leaseUntil) =>
      Effect.andThen(deciding("claim", id), Effect.suspend(() => store.claim(id, by, leaseUntil))),
    retry: (id, by, leaseUntil) =>
      Effect.andThen(deciding("retry", id), Effect.suspend(() => store.retry(id, by, leaseUntil))),
    renew: (id, leaseUntil) => Effect.andThen(deciding("renew", id), Effect.suspend(() => store.renew(id, leaseUntil))),
    beginDelivery: (id, key, leaseUntil, holder, approved) =>
      Effect.andThen(
        deciding("beginDelivery", id),
        Effect.suspend(() => store.beginDelivery(id, key, leaseUntil, holder, approved))
      ),
    reject: (id, decision) => Effect.andThen(deciding("reject", id), Effect.suspend(() => store.reject(id, decision))),
    settle: (id, outcome, from) =>
      Effect.andThen(deciding("settle", id), Effect.suspend(() => store.settle(id, outcome, from))),
    ...(store.withTransaction !== undefined ? { withTransaction: store.withTransaction } : {})
  })
  guardedStores.add(guarded)
  return guarded
}

/**
 * An in-memory store, for tests, demos and single-process apps.
 *
 * @since 0.1.0
 * @category layers
 */
export const memory: Layer.Layer<ProposalStore> = freshService(ProposalStore, () => Effect.sync(memoryStore))

const memoryStore = (): ProposalStore.Service => {
  const proposals = new Map<string, Proposal>()
  let next = 0
  // Indexes, kept by `put`, so that no step reads every proposal the store
  // has ever held: each run's and each trace's proposals, in the order they
  // were added (one id, or a list once there are more); the proposals in each
  // status; who holds each delivery key; and the deadlines `expire` looks at
  // (each lease, each pending proposal's expiry), earliest first. A
  // proposal's place in that order is in its id, `p-<n>`.
  const byRun = new Map<string, string | Array<string>>()
  const byTrace = new Map<string, string | Array<string>>()
  const order = (id: string) => Number(id.slice(2))
  const append = (index: Map<string, string | Array<string>>, key: string, id: string) => {
    const ids = index.get(key)
    if (ids === undefined) index.set(key, id)
    else if (typeof ids === "string") index.set(key, [ids, id])
    else ids.push(id)
  }
  const byStatus = new Map<Status, StatusIndex>()
  const keyHolders = new Map<string, Set<string>>()
  const calls = new Set<string>()
  const callOf = (record: Omit<Proposal, "id" | "status">) =>
    record.runId === undefined || record.callId === undefined || record.turn === undefined
      ? undefined
      : `${record.runId}\u0000${record.turn}\u0000${record.callId}`
  const leases = deadlines()
  const expiries = deadlines()
  const put = (unfrozen: Proposal) => {
    // What `get` and `list` hand out is the record itself: frozen, with its
    // decision, so only the store's transitions change its state (as a SQL
    // row's). Its payload is left as it is (freezing it costs a quarter of a
    // pending card's memory): a human is asked about a copy of it, and what
    // runs is that copy.
    if (unfrozen.decision !== undefined) Object.freeze(unfrozen.decision)
    const proposal = Object.freeze(unfrozen)
    const before = proposals.get(proposal.id)
    proposals.set(proposal.id, proposal)
    if (before === undefined) {
      if (proposal.runId !== undefined) append(byRun, proposal.runId, proposal.id)
      if (proposal.traceId !== undefined) append(byTrace, proposal.traceId, proposal.id)
    }
    if (before !== undefined && before.status !== proposal.status) {
      byStatus.get(before.status)!.proposals.delete(proposal.id)
    }
    let index = byStatus.get(proposal.status)
    if (index === undefined) byStatus.set(proposal.status, index = { proposals: new Map(), last: 0, sorted: true })
    if (before?.status !== proposal.status) {
      const place = order(proposal.id)
      // Back in a status after a later proposal entered it: sorted again when listed.
      if (place < index.last) index.sorted = false
      else index.last = place
    }
    index.proposals.set(proposal.id, proposal)
    if (before?.deliveryKey !== proposal.deliveryKey) {
      if (before?.deliveryKey !== undefined) keyHolders.get(before.deliveryKey)?.delete(proposal.id)
      if (proposal.deliveryKey !== undefined) {
        const holders = keyHolders.get(proposal.deliveryKey)
        if (holders === undefined) keyHolders.set(proposal.deliveryKey, new Set([proposal.id]))
        else holders.add(proposal.id)
      }
    }
    const held = proposal.status === "approving" || proposal.status === "delivering"
    leases.set(proposal.id, held ? proposal.leaseUntil : undefined)
    expiries.set(proposal.id, proposal.status === "pending" ? proposal.expiresAt : undefined)
    return proposal
  }
  // A move `Proposal.transitions` does not list is refused, whatever a method asked (a renewal stays where it is).
  const legal = (before: Proposal, after: Proposal) =>
    after.status === before.status || mayMove(before.status, after.status)
  // Each operation checks and updates in one synchronous step: the runtime
  // cannot switch fibers inside it, so two approvals never both claim one
  // proposal.
  const move = (id: string, from: ReadonlyArray<Status>, update: (proposal: Proposal) => Proposal | undefined) =>
    Effect.suspend((): Effect.Effect<Proposal, NotFound | AlreadyDecided> => {
      const proposal = proposals.get(id)
      if (proposal === undefined) return Effect.fail(new NotFound({ id }))
      const updated = from.includes(proposal.status) ? update(proposal) : undefined
      if (updated === undefined || !legal(proposal, updated)) {
        return Effect.fail(
          new AlreadyDecided({ id, status: proposal.status, by: proposal.decision?.by, at: proposal.decision?.at })
        )
      }
      return Effect.succeed(put(updated))
    })
  const without = <K extends keyof Proposal>(proposal: Proposal, ...keys: Array<K>): Proposal => {
    const copy: Record<string, unknown> = { ...proposal }
    for (const key of keys) delete copy[key]
    return copy as unknown as Proposal
  }
  const iso = (millis: number) => new Date(millis).toISOString()
  const own = Object.freeze<ProposalStore.Service>({
    add: (fields) =>
      internal.isProposalRecord(fields)
        ? Effect.suspend(() => {
          const { madeByToolProposalOnly: _, ...record } = fields
          // One proposal for one call of a run's turn, as SQL's unique index keeps it.
          const call = callOf(record)
          if (call !== undefined && calls.has(call)) {
            return Effect.die(
              new Error(`ProposalStore.add: call ${record.callId} of run ${record.runId} has a proposal`)
            )
          }
          if (call !== undefined) calls.add(call)
          return Effect.succeed(put({ ...record, id: `p-${++next}`, status: "pending" }))
        })
        : Effect.die(new Error("ProposalStore.add: this record was not made by Tool.proposal")),
    get: (id) =>
      Effect.suspend(() => {
        const proposal = proposals.get(id)
        return proposal === undefined ? Effect.fail(new NotFound({ id })) : Effect.succeed(proposal)
      }),
    list: (filter) =>
      Effect.sync(() => {
        const runId = filter?.runId
        const traceId = filter?.traceId
        const status = filter?.status
        if (runId === undefined && traceId === undefined) {
          if (status === undefined) return [...proposals.values()]
          const index = byStatus.get(status)
          if (index === undefined) return []
          if (!index.sorted) {
            index.proposals = new Map([...index.proposals].sort(([a], [b]) => order(a) - order(b)))
            index.sorted = true
          }
          return Array.from(index.proposals.values())
        }
        // A run's or a trace's proposals, in the order they were added, then the rest of the filter.
        const ids = runId !== undefined ? byRun.get(runId) : byTrace.get(traceId!)
        const found: Array<Proposal> = []
        for (const id of ids === undefined ? [] : typeof ids === "string" ? [ids] : ids) {
          const proposal = proposals.get(id)!
          if (
            (status === undefined || proposal.status === status) &&
            (traceId === undefined || proposal.traceId === traceId)
          ) found.push(proposal)
        }
        return found
      }),
    claim: (id, by, leaseUntil) =>
      Effect.flatMap(Clock.currentTimeMillis, (millis) => {
        const at = iso(millis)
        // Pending but past its expiry: it expires now, and says so (as the SQL store does).
        const lapsed = proposals.get(id)
        if (lapsed?.status === "pending" && lapsed.expiresAt !== undefined && lapsed.expiresAt <= at) {
          put({
            ...lapsed,
            status: "expired",
            decision: { by: "graded", at, edited: false, reason: expiredReason(lapsed) }
          })
          return Effect.fail(new AlreadyDecided({ id, status: "expired", by: "graded", at }))
        }
        return move(id, ["pending"], (proposal) => ({
          ...proposal,
          status: "approving",
          decision: { by, at, edited: false },
          leaseUntil
        }))
      }),
    retry: (id, by, leaseUntil) =>
      Effect.flatMap(Clock.currentTimeMillis, (millis) =>
        move(id, ["in-doubt"], (proposal) => ({
          ...proposal,
          status: "approving",
          decision: { by, at: iso(millis), edited: false },
          leaseUntil
        }))),
    renew: (id, leaseUntil) => move(id, ["approving", "delivering"], (proposal) => ({ ...proposal, leaseUntil })),
    beginDelivery: (id, key, leaseUntil, holder, approved) =>
      move(id, ["approving"], (proposal) => {
        if (holder !== undefined && (proposal.decision?.by !== holder.by || proposal.decision.at !== holder.at)) {
          return undefined
        }
        const deliveryKey = proposal.deliveryKey ?? key
        // Unique among deliveries: a key another proposal holds is refused.
        for (const holder of keyHolders.get(deliveryKey) ?? []) {
          if (holder !== id) return undefined
        }
        if (approved === undefined) return { ...proposal, status: "delivering", deliveryKey, leaseUntil }
        const decision = proposal.decision === undefined ? undefined : { ...proposal.decision, edited: approved.edited }
        return { ...proposal, status: "delivering", deliveryKey, leaseUntil, approved: approved.payload, decision }
      }),
    expire: (now) =>
      Effect.sync(() => {
        // Only a lapsed deadline can move a proposal, and the deadlines come
        // earliest first: what is read is what lapsed (and entries that went
        // stale meanwhile). All are taken before any moves, so that each
        // proposal moves at most once a call, from the state it was in.
        const lapsed: Array<Proposal> = []
        for (const id of leases.takeUntil((until) => until < now)) lapsed.push(proposals.get(id)!)
        for (const id of expiries.takeUntil((until) => until <= now)) lapsed.push(proposals.get(id)!)
        // In the order the proposals were added, as a scan of them all would find them.
        lapsed.sort((a, b) => order(a.id) - order(b.id))
        return lapsed.flatMap((proposal) => {
          // A retry (its key recorded already) that lapsed is in doubt as before.
          const next: Proposal = proposal.status === "approving" && proposal.deliveryKey === undefined
            ? { ...without(proposal, "decision", "leaseUntil"), status: "pending" }
            : proposal.status === "pending"
            ? {
              ...proposal,
              status: "expired",
              decision: { by: "graded", at: now, edited: false, reason: expiredReason(proposal) }
            }
            : {
              ...without(proposal, "leaseUntil"),
              status: "in-doubt",
              decision: {
                by: proposal.decision?.by ?? "graded",
                at: now,
                edited: proposal.decision?.edited ?? false,
                reason: leaseEnded(proposal)
              }
            }
          return legal(proposal, next) ? [put(next)] : []
        })
      }),
    reject: (id, decision) => move(id, ["pending"], (proposal) => ({ ...proposal, status: "rejected", decision })),
    settle: (id, outcome, from) =>
      move(
        id,
        settleFrom[outcome.status].filter((status) => from === undefined || from.includes(status)),
        (proposal) =>
          outcome.status === "pending"
            ? { ...without(proposal, "decision", "leaseUntil"), status: "pending" }
            : { ...without(proposal, "leaseUntil"), ...outcome }
      )
  })
  const guarded = guardDecisions(own)
  unguarded.set(guarded, own)
  return guarded
}

// The proposals of one status, in the order they were added once sorted: a
// proposal that comes back to a status after a later one entered it clears
// `sorted`, and the next `list` of that status sorts them again.
interface StatusIndex {
  proposals: Map<string, Proposal>
  last: number
  sorted: boolean
}

// Sealed where they are made (Invocation.seal): each is shared by every
// fiber, and a tool's code that finds one must not rewrite it in place.
sealed(ProposalStore)
sealed(memory)
