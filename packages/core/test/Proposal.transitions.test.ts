// The one table of a proposal's moves, as a user relies on it: nothing leaves
// a final state, nothing is delivered without a human's approval, and the
// table is exactly this one. Adding a move fails here until it is argued for;
// every store is held to the table by packages/sql/test/transitionsContract.ts.
import { describe, expect, it } from "@effect/vitest"
import { Result, Schema } from "effect"
import { Proposal, ProposalStore } from "@graded/core"

const into = (to: Proposal.Status) => Proposal.Status.literals.filter((from) => Proposal.transitions[from].includes(to))

describe("Proposal.transitions", () => {
  it("is exactly the moves the stores make, and cannot be changed at run time", () => {
    expect(Proposal.transitions).toEqual({
      pending: ["approving", "rejected", "expired"],
      approving: ["pending", "delivering", "rejected", "failed", "in-doubt"],
      delivering: ["delivered", "failed", "in-doubt"],
      "in-doubt": ["approving", "delivered", "failed"],
      delivered: [],
      rejected: [],
      failed: [],
      expired: []
    })
    expect(Object.isFrozen(Proposal.transitions)).toBe(true)
    for (const to of Object.values(Proposal.transitions)) expect(Object.isFrozen(to)).toBe(true)
  })

  it("never leaves delivered, rejected, failed or expired; the others are open, and a run waits on them", () => {
    const final = Proposal.Status.literals.filter(Proposal.isFinal)
    expect(final).toEqual(["delivered", "rejected", "failed", "expired"])
    for (const status of final) expect(Proposal.transitions[status]).toEqual([])
    expect(Proposal.Status.literals.filter(Proposal.isOpen)).toEqual(["pending", "approving", "delivering", "in-doubt"])
  })

  it("delivers only what a human is approving, and a proposal waits for a human again only from an approval", () => {
    expect(into("delivering")).toEqual(["approving"])
    expect(into("delivered")).toEqual(["delivering", "in-doubt"])
    expect(into("approving")).toEqual(["pending", "in-doubt"])
    expect(into("pending")).toEqual(["approving"])
    for (const status of Proposal.Status.literals) expect(Proposal.transitions[status]).not.toContain(status)
  })

  it("is what settle follows: every move the table allows out of a claimed state", () => {
    expect(ProposalStore.settleFrom).toEqual({
      pending: ["approving"],
      rejected: ["approving"],
      failed: ["approving", "delivering", "in-doubt"],
      delivered: ["delivering", "in-doubt"],
      "in-doubt": ["approving", "delivering"]
    })
  })
})

describe("Proposal.Status", () => {
  it("decodes a status, and a status that is none names every one there is", () => {
    expect(Schema.decodeUnknownSync(Proposal.Status)("in-doubt")).toBe("in-doubt")
    // Effect 4 leaves the input out of its message unless asked (`reportInput`).
    const refused = Schema.decodeUnknownResult(Proposal.Status, { reportInput: true })("done")
    expect(Result.isFailure(refused)).toBe(true)
    const message = Result.isFailure(refused) ? refused.failure.message : ""
    for (const status of Proposal.Status.literals) expect(message).toContain(`"${status}"`)
    expect(message).toContain(`got "done"`)
  })
})
