// Proposals as cards, read from the store on every listing (after
// `Proposal.recover`), so they outlive the page's server and show alike on
// every server over one store: pending
// ones to approve, edit or reject, and in-doubt deliveries (a delivery that
// stopped and may have gone out) to mark done or retry.
// The store decides a proposal and claims it atomically, so a second
// approval, on this server or another, is told who decided and delivers
// nothing. Approving runs `Proposal.approve`, and retrying `Proposal.retry`,
// with this module's HumanConfirm: graded computes what to confirm from the
// stored record, and the person's decision stands only if that is exactly
// what the card showed; otherwise the answer is a rejection and nothing is
// delivered. A card that did not show all of itself can only be rejected, or,
// in doubt, marked done (which sends nothing): never approved or retried.
// What the page was shown is kept per proposal and status (a new status is a
// new card, with a new CSRF value), and let go once a listing no longer has it.
// Every decision runs as the person who made it (`Invocation.within`), so the
// store and the audit name them.
// Imported by internal/api.ts only.
import { Clock, Effect, Schema } from "effect"
import { HumanConfirm, Invocation, Printable, Proposal, ProposalStore, Tool, type Toolkit } from "@graded/core"
import { type Display, display, type Listed, type PartlyShown, shownInFull } from "./cards.js"
import { secret } from "./guard.js"

/** What a person decided on a pending card: who (as the server tells it), and what. */
export interface Decision {
  readonly by: string
  readonly action: "approve" | "edit" | "reject"
  readonly payload?: unknown
  readonly reason: string
}

/** What a person did with an in-doubt card: marked it done (with a note), or retried it. */
export interface Resolution {
  readonly by: string
  readonly action: "mark-done" | "retry"
  readonly note?: string | undefined
}

/** 400: the proposal was approved but could not be delivered (a refusal, an invalid edit, the tool's own error). */
export class Undelivered extends Schema.TaggedError<Undelivered>()("@graded/confirm/WebConfirm/Undelivered", {
  reason: Schema.String
}) {
  override get message(): string {
    return this.reason
  }
}

/** 409: no human decided the proposal before its `expiresAt`; it can no longer be decided. */
export class Expired extends Schema.TaggedError<Expired>()("@graded/confirm/WebConfirm/Expired", {
  id: Schema.String,
  expiresAt: Schema.String
}) {
  override get message(): string {
    return `expired: no human decided ${this.id} before ${this.expiresAt}; nothing was delivered`
  }
}

/** 409: the proposal was decided already, here or on another server; the answer says by whom. */
export class Taken extends Schema.TaggedError<Taken>()("@graded/confirm/WebConfirm/Taken", {
  id: Schema.String,
  status: Schema.String,
  by: Schema.optional(Schema.String)
}) {
  override get message(): string {
    return `already decided${this.by === undefined ? "" : ` by ${this.by}`} (${this.status}): ${this.id} ` +
      `was not delivered again`
  }
}

/** 409: an action the card's kind does not take (a retry of a pending proposal, an approval of an in-doubt one). */
export class WrongKind extends Schema.TaggedError<WrongKind>()("@graded/confirm/WebConfirm/WrongKind", {
  reason: Schema.String
}) {
  override get message(): string {
    return this.reason
  }
}

/** A proposal card as the page was given it: its CSRF value, its kind, and what it showed. */
export interface Shown {
  readonly id: string
  readonly csrf: string
  readonly status: "pending" | "in-doubt"
  readonly tool: string
  readonly payload: unknown
  readonly display: Display
}

type Failure = ProposalStore.NotFound | Taken | Expired | WrongKind | Undelivered | PartlyShown

export interface Proposals {
  readonly list: Effect.Effect<ReadonlyArray<Listed>, never, ProposalStore.ProposalStore>
  /** One open proposal's card, as `list` lists it (a chat draws its run's own); a settled one has none. */
  readonly card: (proposal: Proposal.Proposal) => Listed | undefined
  /**
   * A proposal the page was shown and that is still open; one it never listed
   * cannot be decided (404), one settled since is told how (409).
   */
  readonly find: (
    id: string
  ) => Effect.Effect<Shown, ProposalStore.NotFound | Taken | Expired, ProposalStore.ProposalStore>
  /** Approves, edits or rejects a pending card. */
  readonly decide: (
    shown: Shown,
    decision: Decision
  ) => Effect.Effect<{ readonly message: string }, Failure, ProposalStore.ProposalStore>
  /** Marks an in-doubt card done, or retries it. */
  readonly resolve: (
    shown: Shown,
    resolution: Resolution
  ) => Effect.Effect<{ readonly message: string }, Failure, ProposalStore.ProposalStore>
}

// Key order matters to neither side: both payloads are encoded by the same schema.
const samePayload = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b)

/** The page as the HumanConfirm of one approval: the person's answer, for the payload the card showed only. */
const answering = (shown: Shown, decision: Pick<Decision, "by" | "action" | "payload">): HumanConfirm.UI => ({
  confirm: (view) =>
    Effect.succeed(
      view.tool !== shown.tool || !samePayload(view.payload, shown.payload)
        ? HumanConfirm.reject(decision.by, "the payload to confirm is not the one shown on the card")
        : decision.action === "edit"
        ? HumanConfirm.approve(decision.by, decision.payload)
        : HumanConfirm.approve(decision.by)
    )
})

const iso = (millis: number) => new Date(millis).toISOString()
const expired = (proposal: Proposal.Proposal, now: string) =>
  proposal.status === "pending" && proposal.expiresAt !== undefined && proposal.expiresAt <= now

/** A run id or a delivery key as the page shows it: escaped, and no longer than a name. */
const label = (text: string | undefined) => text === undefined ? undefined : Printable.name(text)

// The store's answer to a late decision, as the page says it: expired, or who decided.
const taken = (error: ProposalStore.AlreadyDecided, proposal: Proposal.Proposal | undefined): Taken | Expired =>
  error.status === "expired" || (proposal !== undefined && error.status === "pending" && proposal.expiresAt)
    ? new Expired({ id: error.id, expiresAt: proposal?.expiresAt ?? "its expiry" })
    : new Taken({ id: error.id, status: error.status, by: error.by })

// The proposal as it stands now, for a decision on a card shown as `status`.
const current = (card: Shown) =>
  Effect.gen(function*() {
    const proposal = yield* Proposal.get(card.id)
    if (expired(proposal, iso(yield* Clock.currentTimeMillis))) {
      return yield* new Expired({ id: card.id, expiresAt: proposal.expiresAt! })
    }
    if (proposal.status !== card.status) {
      return yield* new Taken({ id: card.id, status: proposal.status, by: proposal.decision?.by })
    }
    return proposal
  })

// A failure of `Proposal.approve` or `Proposal.retry`: the store's, as the page says it, or why nothing went out.
const delivery = (card: Shown) =>
(
  error: { readonly message?: unknown }
): Effect.Effect<never, ProposalStore.NotFound | Taken | Expired | Undelivered, ProposalStore.ProposalStore> =>
  error instanceof ProposalStore.NotFound ? Effect.fail(error)
    : error instanceof ProposalStore.AlreadyDecided
    ? Effect.flatMap(
      Effect.option(Proposal.get(card.id)),
      (found) => Effect.fail(taken(error, found._tag === "Some" ? found.value : undefined))
    )
    : Effect.fail(
      new Undelivered({
        reason: typeof error.message === "string" ? error.message : "the proposal could not be delivered"
      })
    )

// A JSON Schema as the page reads one: the root, its definitions under `$defs`.
const jsonSchema = (schema: Schema.Top): unknown => {
  const document = Schema.toJsonSchemaDocument(schema)
  return Object.keys(document.definitions).length === 0
    ? document.schema
    : { ...document.schema, $defs: document.definitions }
}

const kindOf = (status: Shown["status"]) => status === "pending" ? "proposal" : "in-doubt"

export const make = (toolkit: Toolkit.Any, maxChars: number): Proposals => {
  // The payload's JSON Schema, as a live card has it, so the edit form is one field per property;
  // by the tool the proposal names, at its path (a sub-agent's tool may share an outer tool's name).
  const schemas = new Map<string, unknown>()
  const schemaOf = (proposal: Proposal.Proposal): unknown => {
    const key = JSON.stringify([proposal.path ?? [], proposal.tool])
    if (!schemas.has(key)) {
      // What the human edits, as the approval decodes it: a send's payload, a write's input.
      const tool = Proposal.toolOf(toolkit, proposal)
      let made: unknown
      try {
        made = tool === undefined ? undefined : jsonSchema(Tool.isSend(tool) ? tool.payload : tool.input)
      } catch {
        made = undefined
      }
      schemas.set(key, made)
    }
    return schemas.get(key)
  }
  // The first listing of a proposal in a status is what the page renders (it
  // never redraws a card), so that is what an approval or a retry must match.
  const shown = new Map<string, Shown>()
  const show = (proposal: Proposal.Proposal & { readonly status: Shown["status"] }) => {
    const known = shown.get(proposal.id)
    if (known !== undefined && known.status === proposal.status) return known
    const inDoubt = proposal.status === "in-doubt"
    // In doubt, what was approved (the edit included): what a retry delivers.
    const payload = Proposal.payloadToConfirm(proposal)
    const made: Shown = {
      id: proposal.id,
      csrf: secret(),
      status: proposal.status,
      tool: proposal.tool,
      payload,
      display: display({
        tool: proposal.tool,
        title: inDoubt ? `In doubt: ${proposal.title}` : `Proposed: ${proposal.title}`,
        description: inDoubt
          ? `This delivery stopped and may have gone out (approved by ${
            proposal.decision?.by ?? "someone"
          }). Check the outside system for its delivery key: if it went out, mark it done; if not, retry it ` +
            `(it goes out with the same key).`
          : Proposal.toolOf(toolkit, proposal)?.description ?? "",
        actor: proposal.actor,
        // Made inside a sub-agent (a durable run's nested run): the path to it.
        ...(proposal.path === undefined ? {} : { path: proposal.path }),
        payload
      }, maxChars)
    }
    shown.set(proposal.id, made)
    return made
  }
  const listing = (proposal: Proposal.Proposal & { readonly status: Shown["status"] }): Listed => {
    const card = show(proposal)
    return {
      id: card.id,
      kind: kindOf(card.status),
      csrf: card.csrf,
      createdAt: proposal.proposedAt,
      grade: proposal.grade,
      schema: schemaOf(proposal),
      runId: label(proposal.runId),
      expiresAt: proposal.expiresAt,
      deliveryKey: label(proposal.deliveryKey),
      ...card.display
    }
  }
  const as = <A, E, R>(by: string, effect: Effect.Effect<A, E, R>) => Invocation.within({ actor: by })(effect)
  return {
    card: (proposal) =>
      proposal.status === "pending" || proposal.status === "in-doubt"
        ? listing(proposal as Proposal.Proposal & { readonly status: Shown["status"] })
        : undefined,
    list: Effect.gen(function*() {
      // Settled first, as an app does on start (`Proposal.recover`, audited as
      // there), so the page shows a delivery whose process died as in doubt
      // once its lease has passed, without waiting for another process to
      // recover. When nothing lapsed this is one read of the store; of two
      // servers listing at once, one moves each proposal.
      yield* Proposal.recover
      const now = iso(yield* Clock.currentTimeMillis)
      // In doubt first: each may have gone out, and waits for someone to say.
      const inDoubt = yield* Proposal.list({ status: "in-doubt" })
      const pending = yield* Proposal.list({ status: "pending" })
      // A card past its expiry is kept until the store says it expired, so a late decision hears "expired".
      const ids = new Set([...inDoubt, ...pending].map((proposal) => proposal.id))
      for (const id of shown.keys()) if (!ids.has(id)) shown.delete(id)
      const open = [...inDoubt, ...pending.filter((proposal) => !expired(proposal, now))]
      return open.map((proposal) => listing(proposal as Proposal.Proposal & { readonly status: Shown["status"] }))
    }),
    find: (id) =>
      Effect.suspend(() => {
        const known = shown.get(id)
        if (known !== undefined) return Effect.succeed(known)
        // Let go by a listing: settled since (here or elsewhere), or never shown here.
        return Effect.flatMap(
          Proposal.get(id),
          (proposal): Effect.Effect<never, ProposalStore.NotFound | Taken | Expired> =>
            proposal.status === "expired"
              ? new Expired({ id, expiresAt: proposal.expiresAt ?? "its expiry" })
              : proposal.status === "pending" || proposal.status === "in-doubt"
              ? new ProposalStore.NotFound({ id })
              : new Taken({ id, status: proposal.status, by: proposal.decision?.by })
        )
      }),
    decide: (card, decision) =>
      Effect.gen(function*() {
        if (card.status !== "pending") {
          return yield* new WrongKind({
            reason: `${card.id} is in doubt: its delivery may have gone out; mark it done or retry it`
          })
        }
        yield* current(card)
        if (decision.action === "reject") {
          yield* Effect.catch(Proposal.reject(card.id, { by: decision.by, reason: decision.reason }), delivery(card))
          return { message: `Rejected by ${decision.by}.` }
        }
        yield* shownInFull(card.display)
        yield* Proposal.approve(toolkit, card.id).pipe(
          // With `Toolkit.Any` the approval's error and requirements are `any`: the
          // tools' own services are named by `WebConfirm.Needs`, their errors here.
          Effect.provide(HumanConfirm.layer(answering(card, decision))),
          (approval) => as(decision.by, approval),
          Effect.catch(delivery(card))
        )
        return {
          message: decision.action === "edit" ? `Approved with an edit by ${decision.by}.`
            : `Approved by ${decision.by}.`
        }
      }),
    resolve: (card, resolution) =>
      Effect.gen(function*() {
        if (card.status !== "in-doubt") {
          return yield* new WrongKind({
            reason: `${card.id} is not in doubt: only a delivery that stopped is marked done or retried`
          })
        }
        const proposal = yield* current(card)
        if (resolution.action === "mark-done") {
          // Sends nothing: a person says it went out, so a card cut short may be marked too.
          yield* Proposal.markDone(card.id, { note: resolution.note }).pipe(
            (marked) => as(resolution.by, marked),
            Effect.catch(delivery(card))
          )
          return { message: `Marked done by ${resolution.by}.` }
        }
        // A retry sends what the card showed, so the card must have shown all of
        // it, and the stored payload must still be that.
        yield* shownInFull(card.display, true)
        if (!samePayload(Proposal.payloadToConfirm(proposal), card.payload)) {
          return yield* new WrongKind({
            reason: `${card.id} changed since the card was shown: reload the page; nothing was retried`
          })
        }
        yield* Proposal.retry(toolkit, card.id).pipe(
          Effect.provide(HumanConfirm.layer(answering(card, { by: resolution.by, action: "approve" }))),
          (retried) => as(resolution.by, retried),
          Effect.catch(delivery(card))
        )
        return { message: `Retried by ${resolution.by}: delivered with the same delivery key.` }
      })
  }
}
