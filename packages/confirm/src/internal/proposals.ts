// Pending proposals as cards. The store decides a proposal and claims it
// atomically, so a second approval is told who decided and delivers nothing.
// Approving runs `Proposal.approve` with this module's HumanConfirm: graded
// computes what to confirm from the stored record, and the person's decision
// stands only if that is exactly what the card showed; otherwise the answer
// is a rejection and nothing is delivered. A card that did not show all of
// itself can only be rejected. What the page was shown is kept while the
// proposal is pending, and let go once a listing finds it decided.
// Imported by internal/api.ts only.
import { Effect, Schema } from "effect"
import { HumanConfirm, Proposal, ProposalStore, type Toolkit } from "@graded/core"
import { type Display, display, type Listed, type PartlyShown, shownInFull } from "./cards.js"
import { secret } from "./guard.js"

/** What a person decided on a card: who (as the server tells it), and what. */
export interface Decision {
  readonly by: string
  readonly action: "approve" | "edit" | "reject"
  readonly payload?: unknown
  readonly reason: string
}

/** 400: the proposal was approved but could not be delivered (a refusal, an invalid edit, the tool's own error). */
export class Undelivered extends Schema.TaggedError<Undelivered>()("@graded/confirm/WebConfirm/Undelivered", {
  reason: Schema.String
}) {
  override get message(): string {
    return this.reason
  }
}

/** A proposal card as the page was given it: its CSRF value, and what it showed. */
export interface Shown {
  readonly id: string
  readonly csrf: string
  readonly tool: string
  readonly payload: unknown
  readonly display: Display
}

export interface Proposals {
  readonly list: Effect.Effect<ReadonlyArray<Listed>, never, ProposalStore.ProposalStore>
  /** A proposal the page was shown; one it never listed cannot be decided. */
  readonly find: (id: string) => Effect.Effect<Shown, ProposalStore.NotFound>
  readonly decide: (
    shown: Shown,
    decision: Decision
  ) => Effect.Effect<
    { readonly message: string },
    ProposalStore.NotFound | ProposalStore.AlreadyDecided | Undelivered | PartlyShown,
    ProposalStore.ProposalStore
  >
}

// Key order matters to neither side: both payloads are encoded by the same schema.
const samePayload = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b)

/** The page as the HumanConfirm of one approval: the person's answer, for the payload the card showed only. */
const answering = (shown: Shown, decision: Decision): HumanConfirm.UI => ({
  confirm: (view) =>
    Effect.succeed(
      view.tool !== shown.tool || !samePayload(view.payload, shown.payload)
        ? HumanConfirm.reject(decision.by, "the payload to confirm is not the one shown on the card")
        : decision.action === "edit"
        ? HumanConfirm.approve(decision.by, decision.payload)
        : HumanConfirm.approve(decision.by)
    )
})

export const make = (toolkit: Toolkit.Any, maxChars: number): Proposals => {
  // The first listing is what the page renders (it never redraws a card), so
  // that is what an approval must match.
  const shown = new Map<string, Shown>()
  const show = (proposal: Proposal.Proposal) => {
    const known = shown.get(proposal.id)
    if (known !== undefined) return known
    const made: Shown = {
      id: proposal.id,
      csrf: secret(),
      tool: proposal.tool,
      payload: proposal.payload,
      display: display({
        tool: proposal.tool,
        title: `Proposed: ${proposal.title}`,
        description: `A model proposed this ${proposal.grade}; nothing happens unless you approve it.`,
        actor: proposal.actor,
        payload: proposal.payload
      }, maxChars)
    }
    shown.set(proposal.id, made)
    return made
  }
  return {
    list: Effect.map(Proposal.list({ status: "pending" }), (pending) => {
      const open = new Set(pending.map((proposal) => proposal.id))
      for (const id of shown.keys()) if (!open.has(id)) shown.delete(id)
      return pending.map((proposal): Listed => {
        const card = show(proposal)
        return {
          id: card.id,
          kind: "proposal",
          csrf: card.csrf,
          createdAt: proposal.proposedAt,
          grade: proposal.grade,
          schema: undefined,
          ...card.display
        }
      })
    }),
    find: (id) => {
      const known = shown.get(id)
      return known === undefined ? new ProposalStore.NotFound({ id }) : Effect.succeed(known)
    },
    decide: (card, decision) =>
      decision.action === "reject"
        ? Effect.as(Proposal.reject(card.id, { by: decision.by, reason: decision.reason }), {
          message: `Rejected by ${decision.by}.`
        })
        : Effect.zipRight(
          shownInFull(card.display),
          Proposal.approve(toolkit, card.id).pipe(
            // With `Toolkit.Any` the approval's error and requirements are `any`: the
            // tools' own services are named by `WebConfirm.Needs`, their errors below.
            Effect.provide(HumanConfirm.layer(answering(card, decision))),
            Effect.catchAll((error: { readonly message?: unknown }) =>
              Effect.fail(
                error instanceof ProposalStore.NotFound || error instanceof ProposalStore.AlreadyDecided
                  ? error
                  : new Undelivered({
                    reason: typeof error.message === "string" ? error.message : "the proposal could not be delivered"
                  })
              )
            ),
            Effect.as({
              message: decision.action === "edit" ? `Approved with an edit by ${decision.by}.`
                : `Approved by ${decision.by}.`
            })
          )
        )
  }
}
