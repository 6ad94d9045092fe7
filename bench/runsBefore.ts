// ProposalStore.memory as it was before issue #18's last indexes (commit
// 7546bc1): its indexes by run, by delivery key and of the proposals with a
// lease or an expiry, but no heap of deadlines (each `expire` read every
// pending proposal with an expiry and every lease), no index by status (each
// `list({ status })` without a run read every proposal) and no `traceId`
// filter (a filter it does not know is ignored, so `Tool.proposal`'s count of
// a trace's pending proposals reads them all, as it did). bench/runs.ts runs
// it side by side with the store of this commit; it is not part of graded
// (`Proposal.isNew` stands for the internal check of the record).
import { Clock, Effect, Layer } from "effect"
import { Proposal, ProposalStore } from "@graded/core"

export const memoryBefore: Layer.Layer<ProposalStore.ProposalStore> = Layer.sync(ProposalStore.ProposalStore, () => {
  const proposals = new Map<string, Proposal.Proposal>()
  let next = 0
  // Indexes, kept by `put`, so that no step reads every proposal the store
  // has ever held: each run's proposals, in the order they were added (one id,
  // or a list once a run has more); who holds each delivery key; and the
  // proposals `expire` may move (a lease, or a pending one's expiry). A
  // proposal's place in that order is in its id, `p-<n>`.
  const byRun = new Map<string, string | Array<string>>()
  const order = (id: string) => Number(id.slice(2))
  const keyHolders = new Map<string, Set<string>>()
  const timed = new Set<string>()
  const isTimed = (proposal: Proposal.Proposal) =>
    proposal.status === "approving" || proposal.status === "delivering"
      ? proposal.leaseUntil !== undefined
      : proposal.status === "pending" && proposal.expiresAt !== undefined
  const put = (proposal: Proposal.Proposal) => {
    const before = proposals.get(proposal.id)
    proposals.set(proposal.id, proposal)
    if (before === undefined && proposal.runId !== undefined) {
      const ids = byRun.get(proposal.runId)
      if (ids === undefined) byRun.set(proposal.runId, proposal.id)
      else if (typeof ids === "string") byRun.set(proposal.runId, [ids, proposal.id])
      else ids.push(proposal.id)
    }
    if (before?.deliveryKey !== proposal.deliveryKey) {
      if (before?.deliveryKey !== undefined) keyHolders.get(before.deliveryKey)?.delete(proposal.id)
      if (proposal.deliveryKey !== undefined) {
        const holders = keyHolders.get(proposal.deliveryKey)
        if (holders === undefined) keyHolders.set(proposal.deliveryKey, new Set([proposal.id]))
        else holders.add(proposal.id)
      }
    }
    if (isTimed(proposal)) timed.add(proposal.id)
    else timed.delete(proposal.id)
    return proposal
  }
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
      Proposal.isNew(fields)
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
      Effect.sync(() => {
        const runId = filter?.runId
        const status = filter?.status
        const candidates = runId === undefined
          ? [...proposals.values()]
          : [byRun.get(runId) ?? []].flat().map((id) => proposals.get(id)!)
        return status === undefined ? candidates : candidates.filter((proposal) => proposal.status === status)
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
        for (const holder of keyHolders.get(deliveryKey) ?? []) {
          if (holder !== id) return undefined
        }
        return { ...proposal, status: "delivering", deliveryKey, leaseUntil }
      }),
    expire: (now) =>
      Effect.sync(() => {
        const moved: Array<Proposal.Proposal> = []
        // Only a proposal with a lease or an expiry can move (taken before
        // any moves, so that each is looked at once).
        for (const id of [...timed]) {
          const proposal = proposals.get(id)!
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
        // In the order the proposals were added, as a scan of them all would find them.
        return moved.sort((a, b) => order(a.id) - order(b.id))
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
