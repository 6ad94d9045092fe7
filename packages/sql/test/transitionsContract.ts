// Every store method that moves a proposal, tried from every status, on each
// store: generated from `Proposal.transitions`. A method moves a proposal only
// from the states its contract names, and only along the table; from any other
// status it is refused with `AlreadyDecided` naming the status, and the
// proposal is as it was. A store that lets one more move through fails here.
import { describe, expect, it } from "@effect/vitest"
import { Effect, Result, type Scope } from "effect"
import { Proposal, ProposalStore } from "@graded/core"
import { proposing, type Subject } from "./storeContract.js"

type Store = ProposalStore.ProposalStore.Service

const lease = (minutes: number) => new Date(minutes * 60_000).toISOString()
const decision = { by: "agent:bob", at: lease(3), edited: false }

/** A new proposal in `status`, brought there the way graded does: proposed, then moved by the store's own methods. */
const reach = (store: Store, status: Proposal.Status): Effect.Effect<string, unknown> =>
  Effect.gen(function*() {
    const { propose, proposeExpiring } = proposing()
    if (status === "expired") {
      const id = yield* proposeExpiring(store, "expires")
      yield* store.expire(lease(6))
      return id
    }
    const id = yield* propose(store, status)
    if (status === "pending") return id
    if (status === "rejected") return (yield* store.reject(id, decision)).id
    yield* store.claim(id, "agent:alice", lease(15))
    if (status === "approving") return id
    yield* store.beginDelivery(id, `k-${id}`, lease(15))
    if (status === "delivering") return id
    yield* store.settle(
      id,
      status === "delivered" ? { status, decision, output: null } : { status: status as "failed", decision }
    )
    return id
  })

interface Move {
  readonly method: string
  /** The states the method's contract (`ProposalStore.Service`) says it leaves. */
  readonly from: ReadonlyArray<Proposal.Status>
  /** Where it moves them; none for a method that keeps the status (renew). */
  readonly to: Proposal.Status | undefined
  readonly call: (store: Store, id: string) => Effect.Effect<Proposal.Proposal, unknown>
}

// Settling ends what a claim began, with any move the table allows from there.
const claimed: ReadonlyArray<Proposal.Status> = ["approving", "delivering", "in-doubt"]
const outcomes: ReadonlyArray<Proposal.Outcome> = [
  { status: "pending" },
  { status: "rejected", decision },
  { status: "failed", decision },
  { status: "delivered", decision, output: { sent: true } },
  { status: "in-doubt", decision }
]

const moves: ReadonlyArray<Move> = [
  { method: "claim", from: ["pending"], to: "approving", call: (store, id) => store.claim(id, "agent:bob", lease(20)) },
  {
    method: "retry",
    from: ["in-doubt"],
    to: "approving",
    call: (store, id) => store.retry(id, "agent:bob", lease(20))
  },
  {
    method: "beginDelivery",
    from: ["approving"],
    to: "delivering",
    call: (store, id) => store.beginDelivery(id, `k-new-${id}`, lease(20))
  },
  { method: "reject", from: ["pending"], to: "rejected", call: (store, id) => store.reject(id, decision) },
  ...outcomes.map((outcome): Move => ({
    method: `settle(${outcome.status})`,
    from: claimed.filter((status) => Proposal.transitions[status].includes(outcome.status)),
    to: outcome.status,
    call: (store, id) => store.settle(id, outcome)
  })),
  { method: "renew", from: ["approving", "delivering"], to: undefined, call: (store, id) => store.renew(id, lease(30)) }
]

// Where `expire` leaves each status once every deadline has passed.
const afterLapse: { readonly [S in Proposal.Status]: Proposal.Status } = {
  pending: "pending", // it has no expiry: it waits
  approving: "pending", // no delivery was recorded: nothing went out
  delivering: "in-doubt", // it may have gone out
  "in-doubt": "in-doubt",
  delivered: "delivered",
  rejected: "rejected",
  failed: "failed",
  expired: "expired"
}

export const transitionsContract = (subject: Subject) =>
  describe(`ProposalStore transitions: ${subject.name}`, () => {
    const withStore = (name: string, body: (store: Store) => Effect.Effect<void, unknown, Scope.Scope>) =>
      it.effect(name, () => Effect.flatMap(subject.database, (database) => Effect.flatMap(database.open, body)))

    for (const move of moves) {
      withStore(
        `${move.method} moves ${move.from.join(", ")} ${
          move.to === undefined ? "nowhere" : `to ${move.to}`
        }, as Proposal.transitions allows; from any other status it is refused and nothing changes`,
        (store) =>
          Effect.gen(function*() {
            // The contract's own moves are in the table.
            for (const from of move.from) {
              if (move.to !== undefined) expect(Proposal.transitions[from], `${from} → ${move.to}`).toContain(move.to)
            }
            for (const status of Proposal.Status.literals) {
              const id = yield* reach(store, status)
              const before = yield* store.get(id)
              expect(before.status).toBe(status)
              const outcome = yield* Effect.result(move.call(store, id))
              const after = yield* store.get(id)
              if (move.from.includes(status)) {
                expect(Result.isSuccess(outcome), `${move.method} from ${status}`).toBe(true)
                expect(after.status, `${move.method} from ${status}`).toBe(move.to ?? status)
              } else {
                expect(outcome, `${move.method} from ${status}`).toEqual(
                  Result.fail(
                    expect.objectContaining({ _tag: "@graded/core/ProposalStore/AlreadyDecided", id, status })
                  )
                )
                expect(after, `${move.method} from ${status} changed nothing`).toEqual(before)
              }
            }
          })
      )
    }

    withStore(
      "expire moves what lapsed along Proposal.transitions only: a final status is never left, nothing else is touched",
      (store) =>
        Effect.gen(function*() {
          const ids = yield* Effect.forEach(Proposal.Status.literals, (status) => reach(store, status))
          // Lapsing too: a pending proposal's expiry, and a retry's lease (its delivery recorded before).
          const expiring = yield* proposing().proposeExpiring(store, "lapses")
          const retried = yield* reach(store, "in-doubt")
          yield* store.retry(retried, "agent:bob", lease(20))
          const before = yield* Effect.forEach([...ids, expiring, retried], (id) => store.get(id))
          const moved = yield* store.expire(lease(60))
          for (const was of before) {
            const now = yield* store.get(was.id)
            if (now.status === was.status) {
              expect(now, `${was.status} stays as it was`).toEqual(was)
              expect(moved.map((p) => p.id)).not.toContain(was.id)
            } else {
              expect(Proposal.transitions[was.status], `${was.status} → ${now.status}`).toContain(now.status)
            }
          }
          const status = (id: string) => Effect.map(store.get(id), (p) => p.status)
          for (const [i, was] of Proposal.Status.literals.entries()) {
            expect(yield* status(ids[i]!), `${was}, its lease lapsed`).toBe(afterLapse[was])
          }
          expect(yield* status(expiring)).toBe("expired")
          expect(yield* status(retried)).toBe("in-doubt")
        })
    )
  })
