// Where a proposal stands and where it may go next: the one list of states
// and the one table of moves that every store, the run loop and the CLI read
// (re-exported by Proposal.ts).
// Who may import this: graded's own modules only (Proposal, ProposalStore, the run loop).
import { Schema } from "effect"

export const Status = Schema.Literals([
  "pending",
  "approving",
  "delivering",
  "delivered",
  "rejected",
  "failed",
  "expired",
  "in-doubt"
])
export type Status = typeof Status.Type

type Transitions = { readonly [S in Status]: ReadonlyArray<Status> }

const frozen = (table: Transitions): Transitions => {
  for (const to of Object.values(table)) Object.freeze(to)
  return Object.freeze(table)
}

export const transitions: Transitions = frozen({
  // A human claims it (claim), rejects it (reject), or no one did in time (expire, or a late claim).
  pending: ["approving", "rejected", "expired"],
  // Its delivery is recorded (beginDelivery), or the approval ends before one was (settle; expire hands a
  // lapsed one back, or, a retry's, leaves it in doubt).
  approving: ["pending", "delivering", "rejected", "failed", "in-doubt"],
  // The delivery settles, or stops without settling (settle, expire).
  delivering: ["delivered", "failed", "in-doubt"],
  // A human retries it (retry) or says how it ended (settle: markDone).
  "in-doubt": ["approving", "delivered", "failed"],
  delivered: [],
  rejected: [],
  failed: [],
  expired: []
})

export const isFinal = (status: Status): boolean => transitions[status].length === 0

export const isOpen = (status: Status): boolean => !isFinal(status)

export const mayMove = (from: Status, to: Status): boolean => transitions[from].includes(to)
