// The cards waiting on the page: one per confirmation, each decided once.
// The check and the mark in `settle` run without yielding, so two decisions
// racing for one card can never both win; the confirmation's own fiber waits
// on the card's Deferred, and a timeout settles the card the same way.
// Imported by WebConfirm.ts (the UI) and internal/api.ts (the routes).
import { Clock, Data, Deferred, type Duration, Effect } from "effect"
import { HumanConfirm } from "@graded/core"
import type { Decided } from "../WebConfirm.js"
import { secret } from "./guard.js"

export interface Card {
  readonly id: string
  readonly view: HumanConfirm.View
  readonly createdAt: string
  readonly csrf: string
  readonly answer: Deferred.Deferred<HumanConfirm.Decision>
  decided: Decided | undefined
}

/** A card as the page's API lists it; a proposal lists the same way, with `kind: "proposal"`. */
export interface Listed {
  readonly id: string
  readonly kind?: "proposal"
  readonly csrf: string
  readonly createdAt: string
  readonly tool: string
  readonly grade: "write" | "send"
  readonly title: string
  readonly description: string
  readonly actor: string | undefined
  readonly payload: unknown
  readonly schema: unknown
}

/** 404: no card with that id (never was, or its caller gave up). */
export class UnknownCard extends Data.TaggedError("@graded/confirm/WebConfirm/UnknownCard")<{ readonly id: string }> {
  override get message(): string {
    return `there is no request ${this.id}`
  }
}

/** 409: the card was decided already; the answer says by whom. */
export class AlreadyDecided extends Data.TaggedError("@graded/confirm/WebConfirm/AlreadyDecided")<{
  readonly decided: Decided
}> {
  override get message(): string {
    return `already decided: ${this.decided.decision} by ${this.decided.by}`
  }
}

export interface Cards {
  /** Opens a card for the view and waits for its decision (or the timeout's). */
  readonly ask: (view: HumanConfirm.View) => Effect.Effect<HumanConfirm.Decision>
  readonly find: (id: string) => Effect.Effect<Card, UnknownCard>
  /** Fails if the card was decided already. */
  readonly undecided: (card: Card) => Effect.Effect<Card, AlreadyDecided>
  /** Decides the card and answers its confirmation, once. */
  readonly settle: (
    card: Card,
    record: Omit<Decided, "id" | "tool">,
    decision: HumanConfirm.Decision
  ) => Effect.Effect<void, AlreadyDecided>
  readonly pending: () => ReadonlyArray<Card>
  readonly decided: () => ReadonlyArray<Decided>
}

export const listed = (card: Card): Listed => ({
  id: card.id,
  csrf: card.csrf,
  createdAt: card.createdAt,
  tool: card.view.tool,
  grade: card.view.grade,
  title: card.view.title,
  description: card.view.description,
  actor: card.view.actor,
  payload: card.view.payload,
  schema: card.view.schema
})

const timedOut = { by: "web-confirm", reason: "timed out" } as const

export const make = (options: { readonly timeout?: Duration.DurationInput | undefined }): Cards => {
  const cards = new Map<string, Card>()
  const decided: Array<Decided> = []
  let next = 0

  const settleNow = (card: Card, record: Omit<Decided, "id" | "tool">, decision: HumanConfirm.Decision) => {
    if (card.decided !== undefined) return false
    card.decided = { id: card.id, tool: card.view.tool, ...record }
    decided.push(card.decided)
    Deferred.unsafeDone(card.answer, Effect.succeed(decision))
    return true
  }

  const open = (view: HumanConfirm.View) =>
    Effect.gen(function*() {
      const card: Card = {
        id: `c-${++next}`,
        view,
        createdAt: new Date(yield* Clock.currentTimeMillis).toISOString(),
        csrf: secret(),
        answer: yield* Deferred.make<HumanConfirm.Decision>(),
        decided: undefined
      }
      cards.set(card.id, card)
      return card
    })

  const wait = (card: Card) => {
    const answer = Deferred.await(card.answer)
    if (options.timeout === undefined) return answer
    return answer.pipe(
      Effect.timeoutTo({
        duration: options.timeout,
        onSuccess: Effect.succeed,
        onTimeout: () =>
          Effect.suspend(() => {
            const late = HumanConfirm.reject(timedOut.by, timedOut.reason)
            // A decision that won the race just now still stands.
            return settleNow(card, { by: timedOut.by, decision: "timed out" }, late) ? Effect.succeed(late) : answer
          })
      }),
      Effect.flatten
    )
  }

  return {
    ask: (view) =>
      Effect.uninterruptibleMask((restore) =>
        Effect.flatMap(open(view), (card) =>
          restore(wait(card)).pipe(
            // A confirmation abandoned by its caller leaves no card behind.
            Effect.onInterrupt(() => Effect.sync(() => card.decided === undefined && cards.delete(card.id)))
          ))
      ),
    find: (id) => {
      const card = cards.get(id)
      return card === undefined ? new UnknownCard({ id }) : Effect.succeed(card)
    },
    undecided: (card) =>
      card.decided === undefined ? Effect.succeed(card) : new AlreadyDecided({ decided: card.decided }),
    settle: (card, record, decision) =>
      Effect.suspend(() =>
        settleNow(card, record, decision) ? Effect.void : new AlreadyDecided({ decided: card.decided! })
      ),
    pending: () => [...cards.values()].filter((card) => card.decided === undefined),
    decided: () => [...decided]
  }
}
