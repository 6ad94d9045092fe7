// The page and its JSON API, on @effect/platform's HttpRouter. Every /api/
// route sits behind the token; both decision routes go through the same
// decision guard (origin and the card's CSRF value) before the body is read.
// Bodies are decoded by Schema; every failure is a tagged error, turned into
// its status and `{ error }` in one place (the `catchTags` in `make`).
// Imported by WebConfirm.ts only.
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Data, Effect, ParseResult, Schema } from "effect"
import { HumanConfirm } from "@graded/core"
import { randomBytes } from "node:crypto"
import type { Cards } from "./cards.js"
import { listed } from "./cards.js"
import type { Guard } from "./guard.js"
import { page } from "./page.js"
import type { Decision, Proposals } from "./proposals.js"

const json = (status: number, body: unknown) =>
  HttpServerResponse.unsafeJson(body, { status, headers: { "cache-control": "no-store" } })

const says = (message: string) => () => ({ message, override: true })

const who = "say who decides: a non-empty \"by\""
const actions = "action must be approve, edit or reject"

/** `POST .../decision`: who decides, and what; an edit's payload, a rejection's reason. */
const Body = Schema.Struct({
  by: Schema.propertySignature(Schema.Trim.pipe(Schema.nonEmptyString()).annotations({ message: says(who) }))
    .annotations({ missingMessage: () => who }),
  action: Schema.propertySignature(Schema.Literal("approve", "edit", "reject").annotations({ message: says(actions) }))
    .annotations({ missingMessage: () => actions }),
  payload: Schema.optional(Schema.Unknown),
  reason: Schema.optional(Schema.Trim.annotations({ message: says("a reason must be text") }))
  // Only for a body that is not an object at all: the fields say their own.
}).annotations({ message: () => who })

const decision = Effect.map(
  HttpServerRequest.schemaBodyJson(Body),
  (body): Decision => ({
    ...body,
    reason: body.reason === undefined || body.reason === "" ? "rejected on the confirm page" : body.reason
  })
)

const Id = Schema.Struct({ id: Schema.String })

/** 400: an edit the tool's schema refuses (the card stays open). */
class InvalidEdit extends Data.TaggedError("@graded/confirm/WebConfirm/InvalidEdit")<{ readonly reason: string }> {
  override get message(): string {
    return this.reason
  }
}

const decideCard = (cards: Cards, guard: Guard) =>
  Effect.gen(function*() {
    const { id } = yield* HttpRouter.schemaPathParams(Id)
    const card = yield* cards.find(id)
    yield* guard.decision(card.csrf)
    yield* cards.undecided(card)
    const { action, by, payload, reason } = yield* decision
    switch (action) {
      case "approve":
        yield* cards.settle(card, { by, decision: "approved" }, HumanConfirm.approve(by))
        return json(200, { message: `Approved by ${by}.` })
      case "edit": {
        // Checked here so the person can fix it; HumanConfirm checks it again.
        yield* Effect.mapError(card.view.check(payload), (problem) =>
          new InvalidEdit({ reason: `the edit is invalid: ${problem}` }))
        yield* cards.settle(card, { by, decision: "edited" }, HumanConfirm.approve(by, payload))
        return json(200, { message: `Approved with an edit by ${by}.` })
      }
      case "reject":
        yield* cards.settle(card, { by, decision: "rejected" }, HumanConfirm.reject(by, reason))
        return json(200, { message: `Rejected by ${by}: ${reason}` })
    }
  })

const decideProposal = (proposals: Proposals, guard: Guard) =>
  Effect.gen(function*() {
    const { id } = yield* HttpRouter.schemaPathParams(Id)
    const card = yield* proposals.find(id)
    yield* guard.decision(card.csrf)
    return json(200, yield* proposals.decide(card, yield* decision))
  })

const list = (cards: Cards, proposals: Proposals | undefined) =>
  Effect.map(
    proposals === undefined ? Effect.succeed([]) : proposals.list,
    (pending) => json(200, { requests: [...cards.pending().map(listed), ...pending] })
  )

const index = Effect.sync(() => {
  const nonce = randomBytes(16).toString("base64")
  return HttpServerResponse.html(page(nonce)).pipe(
    HttpServerResponse.setHeaders({
      "content-security-policy":
        `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'nonce-${nonce}'; connect-src 'self'; img-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`,
      "x-content-type-options": "nosniff",
      "referrer-policy": "no-referrer",
      "cache-control": "no-store"
    })
  )
})

const error = (status: number) => (failure: { readonly message: string }) =>
  Effect.succeed(json(status, { error: failure.message }))

/**
 * The whole server: the page at `/`, the API under `/api/`.
 */
export const make = (options: {
  readonly cards: Cards
  readonly guard: Guard
  readonly proposals: Proposals | undefined
}) => {
  const { cards, guard, proposals } = options
  const routes = HttpRouter.empty.pipe(
    HttpRouter.get("/requests", list(cards, proposals)),
    HttpRouter.post("/requests/:id/decision", decideCard(cards, guard)),
    proposals === undefined ? (router) => router
      : HttpRouter.post("/proposals/:id/decision", decideProposal(proposals, guard))
  )
  const api = Effect.zipRight(guard.api, routes).pipe(
    Effect.catchTags({
      RouteNotFound: () => Effect.succeed(json(404, { error: "no such endpoint" })),
      RequestError: () => Effect.succeed(json(400, { error: who })),
      ParseError: (failure) =>
        Effect.succeed(json(400, { error: ParseResult.ArrayFormatter.formatErrorSync(failure)[0]?.message ?? who })),
      "@graded/confirm/WebConfirm/InvalidEdit": error(400),
      "@graded/confirm/WebConfirm/Undelivered": error(400),
      "@graded/confirm/WebConfirm/Unauthorized": error(401),
      "@graded/confirm/WebConfirm/Forbidden": error(403),
      "@graded/confirm/WebConfirm/UnknownCard": error(404),
      "@graded/core/ProposalStore/NotFound": error(404),
      "@graded/confirm/WebConfirm/AlreadyDecided": (failure) =>
        Effect.succeed(json(409, { error: failure.message, ...failure.decided })),
      "@graded/core/ProposalStore/AlreadyDecided": error(409)
    })
  )
  return HttpRouter.empty.pipe(
    HttpRouter.get("/", index),
    HttpRouter.mountApp("/api", api),
    Effect.catchTag("RouteNotFound", () => Effect.succeed(json(404, { error: "not found" })))
  )
}
