// ProposalStore.memory keeps indexes (each run's and each trace's proposals,
// the proposals in each status, the holders of each delivery key, a heap of
// the leases and expiries) so that no call reads every proposal it holds. It
// must answer every call as the store did when each call scanned them all:
// the store as it was is kept here, and both are driven side by side through
// random sequences of calls, on proposals of a few runs and traces, with and
// without expiries, under a clock that moves; `expire` at random times, and
// `list` by every combination of status, run and trace. A longer sequence on
// more proposals grows the heap past the size where it drops its stale
// entries.
// (White-box: proposals are minted as Tool.proposal and Runs mint them.)
import { describe, expect, it } from "@effect/vitest"
import { Arbitrary, Clock, Context, Effect, Layer, Result } from "effect"
import { TestClock } from "effect/testing"
import { Proposal, ProposalStore } from "@graded/core"
import { isProposalRecord, mintProposal } from "../src/internal/capability.js"
import { deadlines } from "../src/internal/deadlines.js"
import { type Arb, boolean, constantFrom, integer, json, oneof, option } from "../../../test/arbitraries.js"
import { propertyRuns } from "../../../test/propertyRuns.js"

// ProposalStore.memory as it was before its indexes: every list, delivery
// and expiry read every proposal.
const scanning: Layer.Layer<ProposalStore.ProposalStore> = Layer.sync(ProposalStore.ProposalStore, () => {
  const proposals = new Map<string, Proposal.Proposal>()
  let next = 0
  const put = (proposal: Proposal.Proposal) => (proposals.set(proposal.id, proposal), proposal)
  // Each operation checks and updates in one synchronous step: the runtime
  // cannot switch fibers inside it, so two approvals never both claim one
  // proposal.
  const move = (
    id: string,
    from: ReadonlyArray<Proposal.Status>,
    update: (proposal: Proposal.Proposal) => Proposal.Proposal | undefined
  ) =>
    Effect.suspend((): Effect.Effect<Proposal.Proposal, ProposalStore.NotFound | ProposalStore.AlreadyDecided> => {
      const proposal = proposals.get(id)
      if (proposal === undefined) return Effect.fail(new ProposalStore.NotFound({ id }))
      const updated = from.includes(proposal.status) ? update(proposal) : undefined
      if (updated === undefined) {
        return Effect.fail(
          new ProposalStore.AlreadyDecided({
            id,
            status: proposal.status,
            by: proposal.decision?.by,
            at: proposal.decision?.at
          })
        )
      }
      return Effect.succeed(put(updated))
    })
  const without = <K extends keyof Proposal.Proposal>(
    proposal: Proposal.Proposal,
    ...keys: Array<K>
  ): Proposal.Proposal => {
    const copy: Record<string, unknown> = { ...proposal }
    for (const key of keys) delete copy[key]
    return copy as unknown as Proposal.Proposal
  }
  const iso = (millis: number) => new Date(millis).toISOString()
  return {
    add: (fields) =>
      isProposalRecord(fields)
        ? Effect.sync(() => {
          const { madeByToolProposalOnly: _, ...record } = fields
          return put({ ...record, id: `p-${++next}`, status: "pending" })
        })
        : Effect.die(new Error("ProposalStore.add: this record was not made by Tool.proposal")),
    get: (id) =>
      Effect.suspend(() => {
        const proposal = proposals.get(id)
        return proposal === undefined ? Effect.fail(new ProposalStore.NotFound({ id })) : Effect.succeed(proposal)
      }),
    list: (filter) =>
      Effect.sync(() =>
        [...proposals.values()].filter((proposal) =>
          (filter?.status === undefined || proposal.status === filter.status) &&
          (filter?.runId === undefined || proposal.runId === filter.runId) &&
          (filter?.traceId === undefined || proposal.traceId === filter.traceId)
        )
      ),
    claim: (id, by, leaseUntil) =>
      Effect.flatMap(Clock.currentTimeMillis, (millis) => {
        const at = iso(millis)
        // Pending but past its expiry: it expires now, and says so (as the SQL store does).
        const lapsed = proposals.get(id)
        if (lapsed?.status === "pending" && lapsed.expiresAt !== undefined && lapsed.expiresAt <= at) {
          put({
            ...lapsed,
            status: "expired",
            decision: { by: "graded", at, edited: false, reason: ProposalStore.expiredReason(lapsed) }
          })
          return Effect.fail(new ProposalStore.AlreadyDecided({ id, status: "expired", by: "graded", at }))
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
    beginDelivery: (id, key, leaseUntil, holder) =>
      move(id, ["approving"], (proposal) => {
        if (holder !== undefined && (proposal.decision?.by !== holder.by || proposal.decision.at !== holder.at)) {
          return undefined
        }
        const deliveryKey = proposal.deliveryKey ?? key
        // Unique among deliveries: a key another proposal holds is refused.
        for (const other of proposals.values()) {
          if (other.id !== id && other.deliveryKey === deliveryKey) return undefined
        }
        return { ...proposal, status: "delivering", deliveryKey, leaseUntil }
      }),
    expire: (now) =>
      Effect.sync(() => {
        const moved: Array<Proposal.Proposal> = []
        for (const proposal of proposals.values()) {
          const lapsed = proposal.leaseUntil !== undefined && proposal.leaseUntil < now
          // A retry (its key recorded already) that lapsed is in doubt as before.
          if (proposal.status === "approving" && lapsed && proposal.deliveryKey === undefined) {
            moved.push(put({ ...without(proposal, "decision", "leaseUntil"), status: "pending" }))
          } else if ((proposal.status === "delivering" || proposal.status === "approving") && lapsed) {
            moved.push(put({
              ...without(proposal, "leaseUntil"),
              status: "in-doubt",
              decision: {
                by: proposal.decision?.by ?? "graded",
                at: now,
                edited: false,
                reason: ProposalStore.leaseEnded(proposal)
              }
            }))
          } else if (proposal.status === "pending" && proposal.expiresAt !== undefined && proposal.expiresAt <= now) {
            moved.push(put({
              ...proposal,
              status: "expired",
              decision: { by: "graded", at: now, edited: false, reason: ProposalStore.expiredReason(proposal) }
            }))
          }
        }
        return moved
      }),
    reject: (id, decision) => move(id, ["pending"], (proposal) => ({ ...proposal, status: "rejected", decision })),
    settle: (id, outcome, from) =>
      move(
        id,
        ProposalStore.settleFrom[outcome.status].filter((status) => from === undefined || from.includes(status)),
        (proposal) =>
          outcome.status === "pending"
            ? { ...without(proposal, "decision", "leaseUntil"), status: "pending" }
            : { ...without(proposal, "leaseUntil"), ...outcome }
      )
  }
})

type Store = ProposalStore.ProposalStore.Service

const at = (minutes: number) => new Date(minutes * 60_000).toISOString()

type Op =
  | {
    readonly op: "add"
    readonly runId: string | undefined
    readonly traceId: string | undefined
    readonly grade: "write" | "send"
    readonly expires: number | undefined
  }
  | { readonly op: "get"; readonly id: string }
  | {
    readonly op: "list"
    readonly status: Proposal.Status | undefined
    readonly runId: string | undefined
    readonly traceId: string | undefined
  }
  | { readonly op: "claim"; readonly id: string; readonly by: string; readonly lease: number | undefined }
  | { readonly op: "renew"; readonly id: string; readonly lease: number }
  | { readonly op: "retry"; readonly id: string; readonly by: string; readonly lease: number }
  | {
    readonly op: "beginDelivery"
    readonly id: string
    readonly key: string
    readonly lease: number
    readonly holder: boolean
  }
  | { readonly op: "approve"; readonly id: string; readonly by: string; readonly key: string; readonly lease: number }
  | { readonly op: "reject"; readonly id: string; readonly by: string }
  | { readonly op: "settle"; readonly id: string; readonly outcome: Proposal.Outcome; readonly from: boolean }
  | { readonly op: "expire"; readonly now: number }
  | { readonly op: "tick"; readonly minutes: number }

// Mostly the first few proposals, so that one call often follows another on the same proposal.
const idsUpTo = (few: number, many: number) =>
  Arbitrary.map(
    oneof({ arbitrary: integer(1, few), weight: 3 }, { arbitrary: integer(1, many), weight: 1 }),
    (n) => `p-${n}`
  )
const who = constantFrom("agent:alice", "agent:bob")
const minute = integer(0, 60)
const runId = option(constantFrom("r-1", "r-2", "r-3"), 4)
const traceId = option(constantFrom("t-1", "t-2"), 4)
const status = constantFrom(...Proposal.Status.literals)
const decision = Arbitrary.all({ by: who, at: Arbitrary.map(minute, at), edited: boolean })
const addExpiring = (expires: Arb<number>) =>
  Arbitrary.all({
    op: Arbitrary.Constant("add"),
    runId,
    traceId,
    grade: constantFrom("write", "send"),
    expires: option(expires)
  })
const add = addExpiring(minute)
const opOn = (id: Arb<string>): Arb<Op> =>
  oneof(
    { arbitrary: add, weight: 2 },
    Arbitrary.all({ op: Arbitrary.Constant("get"), id }),
    {
      arbitrary: Arbitrary.all({
        op: Arbitrary.Constant("list"),
        status: option(status),
        // Often neither, so that a status alone is listed often.
        runId: option(constantFrom("r-1", "r-2", "r-3"), 2),
        traceId: option(constantFrom("t-1", "t-2"), 2)
      }),
      weight: 2
    },
    {
      arbitrary: Arbitrary.all({
        op: Arbitrary.Constant("claim"),
        id,
        by: who,
        lease: option(minute)
      }),
      weight: 3
    },
    { arbitrary: Arbitrary.all({ op: Arbitrary.Constant("renew"), id, lease: minute }), weight: 3 },
    Arbitrary.all({ op: Arbitrary.Constant("retry"), id, by: who, lease: minute }),
    {
      // Few keys, so that two proposals often offer the same one.
      arbitrary: Arbitrary.all({
        op: Arbitrary.Constant("beginDelivery"),
        id,
        key: constantFrom("k-1", "k-2", "k-3"),
        lease: minute,
        holder: boolean
      }),
      weight: 3
    },
    {
      // A claim and its delivery at once, as an approval makes them: proposals
      // reach delivering often, and then offer a key another holds.
      arbitrary: Arbitrary.all({
        op: Arbitrary.Constant("approve"),
        id,
        by: who,
        key: constantFrom("k-1", "k-2", "k-3"),
        lease: minute
      }),
      weight: 3
    },
    Arbitrary.all({ op: Arbitrary.Constant("reject"), id, by: who }),
    {
      arbitrary: Arbitrary.all({
        op: Arbitrary.Constant("settle"),
        id,
        outcome: oneof(
          Arbitrary.Constant({ status: "pending" }),
          Arbitrary.all({ status: Arbitrary.Constant("delivered"), decision, output: json }),
          Arbitrary.all({ status: constantFrom("failed", "rejected", "in-doubt"), decision })
        ),
        from: boolean
      }),
      weight: 2
    },
    { arbitrary: Arbitrary.all({ op: Arbitrary.Constant("expire"), now: minute }), weight: 2 },
    { arbitrary: Arbitrary.all({ op: Arbitrary.Constant("tick"), minutes: integer(1, 10) }), weight: 2 }
  )
const sequenceOf = (
  first: Arb<Op>,
  adds: Arbitrary.ArrayOptions,
  ops: Arbitrary.ArrayOptions,
  id: Arb<string>
) =>
  Arbitrary.map(
    Arbitrary.all([Arbitrary.array(first, adds), Arbitrary.array(opOn(id), ops)]),
    ([first, then]): ReadonlyArray<Op> => [...first, ...then]
  )
const sequence = sequenceOf(add, { minLength: 2, maxLength: 6 }, { minLength: 10, maxLength: 80 }, idsUpTo(3, 8))
// Enough proposals with deadlines that the heap drops its stale entries, and
// statuses whose proposals come back out of the order they were added.
const longSequence = Arbitrary.map(
  Arbitrary.all([
    sequenceOf(
      // Mostly expiring after the first hour, where the calls to expire fall:
      // their entries wait in the heap while their proposals are decided,
      addExpiring(integer(0, 600)),
      { minLength: 80, maxLength: 150 },
      { minLength: 300, maxLength: 600 },
      idsUpTo(150, 150)
    ),
    // and then the hours after, in steps, to the last expiry.
    Arbitrary.array(integer(0, 700), { minLength: 3, maxLength: 8 })
  ]),
  ([ops, later]): ReadonlyArray<Op> => [
    ...ops,
    ...later.sort((a, b) => a - b).map((now) => ({ op: "expire" as const, now })),
    { op: "list", status: undefined, runId: undefined, traceId: undefined }
  ]
)

const play = (store: Store, op: Exclude<Op, { op: "tick" }>): Effect.Effect<unknown> => {
  const call: Effect.Effect<unknown, unknown> = op.op === "add"
    ? Effect.flatMap(Clock.currentTimeMillis, (millis) =>
      store.add(mintProposal({
        tool: op.grade === "send" ? "chat.sendMessage" : "ticket.submit",
        grade: op.grade,
        title: "A proposal",
        input: { text: "hello" },
        payload: { text: "hello" },
        proposedAt: new Date(millis).toISOString(),
        actor: "agent:bot",
        traceId: op.traceId,
        runId: op.runId,
        callId: op.runId === undefined ? undefined : "call-1",
        ...(op.expires !== undefined ? { expiresAt: at(op.expires) } : {})
      })))
    : op.op === "get"
    ? store.get(op.id)
    : op.op === "list"
    ? store.list(
      op.status === undefined && op.runId === undefined && op.traceId === undefined
        ? undefined
        : { status: op.status, runId: op.runId, traceId: op.traceId }
    )
    : op.op === "claim"
    ? store.claim(op.id, op.by, op.lease === undefined ? undefined : at(op.lease))
    : op.op === "renew"
    ? store.renew(op.id, at(op.lease))
    : op.op === "retry"
    ? store.retry(op.id, op.by, at(op.lease))
    : op.op === "beginDelivery"
    ? Effect.flatMap(
      Effect.result(store.get(op.id)),
      (found) =>
        store.beginDelivery(
          op.id,
          op.key,
          at(op.lease),
          op.holder && Result.isSuccess(found) ? found.success.decision : undefined
        )
    )
    : op.op === "approve"
    ? Effect.flatMap(
      store.claim(op.id, op.by, at(op.lease)),
      (claimed) => store.beginDelivery(op.id, op.key, at(op.lease), claimed.decision)
    )
    : op.op === "reject"
    ? store.reject(op.id, { by: op.by, at: at(0), edited: false, reason: "no" })
    : op.op === "settle"
    ? store.settle(op.id, op.outcome, op.from ? ["in-doubt"] : undefined)
    : store.expire(at(op.now))
  return Effect.map(
    Effect.result(call),
    (outcome) => Result.isSuccess(outcome) ? outcome.success : { error: outcome.failure }
  )
}

const storeOf = (layer: Layer.Layer<ProposalStore.ProposalStore>) =>
  Effect.map(Layer.build(layer), Context.get(ProposalStore.ProposalStore))

// Played first, then the random sequences: a proposal that changes within its
// status (a renewed lease) is listed as it is now, and one handed back to
// pending behind a later one is listed in the order added.
const listed = (status: Proposal.Status): Op => ({ op: "list", status, runId: undefined, traceId: undefined })
const examples: ReadonlyArray<ReadonlyArray<Op>> = [[
  { op: "add", runId: "r-1", traceId: "t-1", grade: "write", expires: 30 },
  { op: "add", runId: undefined, traceId: "t-2", grade: "send", expires: undefined },
  { op: "claim", id: "p-1", by: "agent:alice", lease: 5 },
  { op: "renew", id: "p-1", lease: 20 },
  listed("approving"),
  { op: "expire", now: 10 },
  { op: "settle", id: "p-1", outcome: { status: "pending" }, from: false },
  listed("pending"),
  { op: "approve", id: "p-2", by: "agent:bob", key: "k-1", lease: 5 },
  { op: "renew", id: "p-2", lease: 40 },
  listed("delivering"),
  { op: "expire", now: 30 },
  listed("expired"),
  { op: "expire", now: 50 }
]]

const sideBySide = (ops: ReadonlyArray<Op>) =>
  Effect.gen(function*() {
    const expected = yield* storeOf(scanning)
    const actual = yield* storeOf(ProposalStore.memory)
    for (const [index, op] of ops.entries()) {
      if (op.op === "tick") {
        yield* TestClock.adjust(`${op.minutes} minutes`)
        continue
      }
      const want = yield* play(expected, op)
      const got = yield* play(actual, op)
      expect(got, `call ${index} of ${JSON.stringify(ops)}`).toEqual(want)
    }
  })

describe("ProposalStore.memory", () => {
  it.effect("answers every call as the store that scanned every proposal did, over random sequences of calls", () =>
    Effect.gen(function*() {
      // `size` lets a sequence reach its longest (fast-check's `size: "max"`).
      const sampled = yield* Arbitrary.sampleEffect(sequence, { count: propertyRuns(60), seed: 18, size: 80 })
      for (const ops of [...examples, ...sampled]) {
        yield* sideBySide(ops)
      }
    }))

  it.effect("answers as the scanning store over long sequences on many proposals", () =>
    Effect.gen(function*() {
      const sampled = yield* Arbitrary.sampleEffect(longSequence, { count: propertyRuns(3), seed: 18, size: 600 })
      for (const ops of sampled) yield* sideBySide(ops)
    }))
})

// The heap under the memory store's expiry, against a map of each id's
// current deadline: it hands back exactly the ids whose current deadline has
// lapsed, each once, however often deadlines change or go.
describe("the memory store's deadlines", () => {
  it("takes exactly the lapsed current deadlines, through many changes", () => {
    // Few ids and many changes, so that stale entries pile up and the heap
    // is rebuilt from the current ones, again and again.
    const step = oneof(
      {
        arbitrary: Arbitrary.all({
          op: Arbitrary.Constant("set"),
          id: Arbitrary.map(integer(1, 40), (n) => `p-${n}`),
          until: option(Arbitrary.map(minute, at), 4)
        }),
        weight: 12
      },
      { arbitrary: Arbitrary.all({ op: Arbitrary.Constant("take"), now: Arbitrary.map(minute, at) }), weight: 1 }
    )
    const checked = Effect.runSync(Arbitrary.checkEffect(
      Arbitrary.array(step, { minLength: 200, maxLength: 1500 }),
      (steps) => {
        const heap = deadlines()
        const reference = new Map<string, string>()
        for (const one of steps) {
          if (one.op === "set") {
            heap.set(one.id, one.until)
            if (one.until === undefined) reference.delete(one.id)
            else reference.set(one.id, one.until)
            continue
          }
          const want = [...reference].filter(([, until]) => until < one.now).map(([id]) => id)
          for (const id of want) reference.delete(id)
          const taken = heap.takeUntil((until) => until < one.now)
          if (taken.sort().join() !== want.sort().join()) return false
        }
        return true
      },
      // `size` lets a sequence reach its longest (fast-check's `size: "max"`).
      { runs: propertyRuns(25), seed: 18, size: 1500 }
    ))
    expect(Arbitrary.formatCheckFailure(checked)).toBeUndefined()
    expect(checked._tag).toBe("Passed")
  })
})
