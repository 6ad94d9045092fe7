// The cards waiting on the page: one per confirmation, each decided once.
// The check and the mark in `settle` run without yielding, so two decisions
// racing for one card can never both win; the confirmation's own fiber waits
// on the card's Deferred, and a timeout or the server closing settles the card
// the same way. A decided card is let go at once: the server keeps who decided
// what (as the audit does), never the payload.
// What a card shows is computed once, when it opens (`display`), from core's
// display model (`Printable.display`): every field cut at `maxChars`, the
// characters that hide or reorder text listed, wherever they are.
// Imported by WebConfirm.ts (the UI) and internal/api.ts (the routes, and a
// chat run's UI, which is told each card it opens);
// `display` and `PartlyShown` by internal/proposals.ts too.
import { Clock, Deferred, type Duration, Effect, Schema } from "effect"
import { HumanConfirm, Printable } from "@graded/core"
import type { Decided } from "../WebConfirm.js"
import { secret } from "./guard.js"

/** A field that was cut: how much of it the card shows. */
export interface Cut {
  readonly field: "title" | "description" | "actor" | "payload"
  readonly shown: number
  readonly total: number
}

/** What a card shows, computed once. */
export interface Display {
  readonly tool: string
  readonly title: string
  readonly description: string
  readonly actor: string | undefined
  /** Asked inside a sub-agent: the sub-agents' names from the run's own call down (HumanConfirm.View.path). */
  readonly path?: ReadonlyArray<string> | undefined
  /** The payload as the card shows it: JSON, two-space indent, capped. */
  readonly shown: string
  /** The payload itself, for the edit form; absent when it was cut or is not JSON. */
  readonly payload: unknown
  /** Characters anywhere on the card (shown or cut) that hide or reorder text, as `\u202E`. */
  readonly hidden: ReadonlyArray<string>
  readonly cut: ReadonlyArray<Cut>
}

const json = (payload: unknown): string | undefined => {
  try {
    return JSON.stringify(payload, null, 2)
  } catch {
    return undefined
  }
}

const cardFields = ["title", "description", "actor", "payload"] as const

export const display = (
  fields: {
    readonly tool: string
    readonly title: string
    readonly description: string
    readonly actor: string | undefined
    readonly payload: unknown
    readonly path?: ReadonlyArray<string> | undefined
  },
  maxChars: number
): Display => {
  const text = json(fields.payload)
  const payload = text ?? "(this payload cannot be shown as JSON)"
  // The card's texts as one value, each cut at `maxChars`: the payload is shown
  // as its JSON text, which the page draws as it is, each hiding character a badge.
  const model = Printable.display({
    tool: fields.tool,
    title: fields.title,
    description: fields.description,
    ...(fields.actor === undefined ? {} : { actor: fields.actor }),
    payload
  }, { field: maxChars })
  const raw: Record<string, string | undefined> = {
    tool: fields.tool,
    title: fields.title,
    description: fields.description,
    actor: fields.actor,
    payload
  }
  const shown = new Map(model.fields.map((field) => [field.path[0], field]))
  const kept = (name: string) => {
    const field = shown.get(name)!
    return raw[name]!.slice(0, field.length - field.cut)
  }
  const cut: Array<Cut> = cardFields.flatMap((name) => {
    const field = shown.get(name)
    return field === undefined || field.cut === 0 ? []
      : [{ field: name, shown: field.length - field.cut, total: field.length }]
  })
  if (text === undefined) cut.push({ field: "payload", shown: 0, total: 0 })
  return {
    tool: fields.tool,
    title: kept("title"),
    description: kept("description"),
    actor: fields.actor === undefined ? undefined : kept("actor"),
    // Graded's own names (each a tool's), escaped all the same.
    ...(fields.path !== undefined && fields.path.length > 0 ? { path: fields.path.map(Printable.name) } : {}),
    shown: kept("payload"),
    payload: text === undefined || cut.length > 0 ? undefined : fields.payload,
    hidden: model.hidden,
    cut
  }
}

/** 422: an approval, an edit or a retry of a card that did not show all of itself. */
export class PartlyShown extends Schema.TaggedError<PartlyShown>()("@graded/confirm/WebConfirm/PartlyShown", {
  field: Schema.String,
  shown: Schema.Number,
  total: Schema.Number,
  /** An in-doubt card: it can be marked done, not retried. */
  inDoubt: Schema.optional(Schema.Boolean)
}) {
  override get message(): string {
    const count = (n: number) => n.toLocaleString("en-US")
    return `the ${this.field} was not shown in full (showing ${count(this.shown)} of ${
      count(this.total)
    } characters): ${this.inDoubt === true ? "it can be marked done, not retried" : "it can be rejected, not approved"}`
  }
}

/** Fails when the card did not show all of itself: only a rejection (in doubt: marking it done) is taken then. */
export const shownInFull = (shown: Display, inDoubt?: boolean): Effect.Effect<void, PartlyShown> =>
  shown.cut.length === 0 ? Effect.void : new PartlyShown({ ...shown.cut[0]!, ...(inDoubt === true ? { inDoubt } : {}) })

export interface Card {
  readonly id: string
  readonly view: HumanConfirm.View
  readonly display: Display
  readonly createdAt: string
  readonly csrf: string
  readonly answer: Deferred.Deferred<HumanConfirm.Decision>
  decided: Decided | undefined
}

/**
 * A card as the page's API lists it. A proposal lists the same way, with
 * `kind: "proposal"` (pending) or `"in-doubt"` (a delivery that stopped), and
 * what the store says of it: its run, its expiry, its delivery key.
 */
export interface Listed extends Display {
  readonly id: string
  readonly kind?: "proposal" | "in-doubt"
  readonly csrf: string
  readonly createdAt: string
  readonly grade: "write" | "send"
  readonly schema: unknown
  readonly runId?: string | undefined
  readonly expiresAt?: string | undefined
  readonly deliveryKey?: string | undefined
}

const DecidedSchema = Schema.Struct({
  id: Schema.String,
  tool: Schema.String,
  by: Schema.String,
  decision: Schema.Literals(["approved", "edited", "rejected", "timed out", "closed"])
}) satisfies Schema.Schema<Decided>

/** 404: no card with that id (never was, or its caller gave up). */
export class UnknownCard extends Schema.TaggedError<UnknownCard>()("@graded/confirm/WebConfirm/UnknownCard", {
  id: Schema.String
}) {
  override get message(): string {
    return `there is no request ${Printable.name(this.id)}`
  }
}

/** 409: the card was decided already; the answer says by whom. */
export class AlreadyDecided extends Schema.TaggedError<AlreadyDecided>()(
  "@graded/confirm/WebConfirm/AlreadyDecided",
  { decided: DecidedSchema }
) {
  override get message(): string {
    return `already decided: ${this.decided.decision} by ${this.decided.by}`
  }
}

export interface Cards {
  /**
   * Opens a card for the view and waits for its decision (or the timeout's, or
   * the server closing). `opened` is told the card once it is open, before the
   * wait (a chat run tells its page which card to draw); interrupted there or
   * in the wait, the card is removed.
   */
  readonly ask: (
    view: HumanConfirm.View,
    opened?: (card: Card) => Effect.Effect<void>
  ) => Effect.Effect<HumanConfirm.Decision>
  /** A waiting card; one decided already fails with who decided, while the server remembers it. */
  readonly find: (id: string) => Effect.Effect<Card, UnknownCard | AlreadyDecided>
  /** Fails if the card was decided already. */
  readonly undecided: (card: Card) => Effect.Effect<Card, AlreadyDecided>
  /** Decides the card and answers its confirmation, once. */
  readonly settle: (
    card: Card,
    record: Omit<Decided, "id" | "tool">,
    decision: HumanConfirm.Decision
  ) => Effect.Effect<void, AlreadyDecided>
  /** Rejects every waiting card, and every card asked for from now on, with `reason`. */
  readonly close: (reason: string) => Effect.Effect<void>
  readonly pending: () => ReadonlyArray<Card>
  readonly decided: () => ReadonlyArray<Decided>
}

export const listed = (card: Card): Listed => ({
  id: card.id,
  csrf: card.csrf,
  createdAt: card.createdAt,
  grade: card.view.grade,
  schema: card.view.schema,
  ...card.display
})

const server = "web-confirm"

/** How many decisions a server remembers, to tell a late second tab who decided. */
const remembered = 1000

export const make = (options: {
  readonly timeout?: Duration.Input | undefined
  readonly maxChars: number
}): Cards => {
  const cards = new Map<string, Card>()
  // Oldest first; small records only, the oldest let go past `remembered`.
  const decided = new Map<string, Decided>()
  let closed: string | undefined
  let next = 0

  const settleNow = (card: Card, record: Omit<Decided, "id" | "tool">, decision: HumanConfirm.Decision) => {
    if (card.decided !== undefined) return false
    card.decided = { id: card.id, tool: card.view.tool, ...record }
    cards.delete(card.id)
    decided.set(card.id, card.decided)
    if (decided.size > remembered) decided.delete(decided.keys().next().value!)
    Deferred.doneUnsafe(card.answer, Effect.succeed(decision))
    return true
  }

  const open = (view: HumanConfirm.View) =>
    Effect.gen(function*() {
      const card: Card = {
        id: `c-${++next}`,
        view,
        display: display(view, options.maxChars),
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
    return Effect.timeoutOrElse(answer, {
      duration: options.timeout,
      orElse: () =>
        Effect.suspend(() => {
          const late = HumanConfirm.reject(server, "timed out")
          // A decision that won the race just now still stands.
          return settleNow(card, { by: server, decision: "timed out" }, late) ? Effect.succeed(late) : answer
        })
    })
  }

  return {
    ask: (view, opened) =>
      Effect.uninterruptibleMask((restore) =>
        closed !== undefined ? Effect.succeed(HumanConfirm.reject(server, closed)) : Effect.flatMap(
          open(view),
          (card) =>
            restore(opened === undefined ? wait(card) : Effect.andThen(opened(card), wait(card))).pipe(
              // A confirmation abandoned by its caller leaves no card behind.
              Effect.onInterrupt(() => Effect.sync(() => card.decided === undefined && cards.delete(card.id)))
            )
        )
      ),
    find: (id) => {
      const card = cards.get(id)
      if (card !== undefined) return Effect.succeed(card)
      const known = decided.get(id)
      return known === undefined ? new UnknownCard({ id }) : new AlreadyDecided({ decided: known })
    },
    undecided: (card) =>
      card.decided === undefined ? Effect.succeed(card) : new AlreadyDecided({ decided: card.decided }),
    settle: (card, record, decision) =>
      Effect.suspend(() =>
        settleNow(card, record, decision) ? Effect.void : new AlreadyDecided({ decided: card.decided! })
      ),
    close: (reason) =>
      Effect.sync(() => {
        closed = reason
        for (const card of [...cards.values()]) {
          settleNow(card, { by: server, decision: "closed" }, HumanConfirm.reject(server, reason))
        }
      }),
    pending: () => [...cards.values()],
    decided: () => [...decided.values()]
  }
}
