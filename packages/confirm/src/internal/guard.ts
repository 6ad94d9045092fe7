// The checks that stand between a request and a decision, each written once.
// Every /api/ call needs the token; a decision (on a card or a proposal) also
// needs the card's own CSRF value and, when the browser sends an Origin, the
// page's origin. A browser never adds the Authorization header by itself, so
// another site cannot decide for the person even with the page open.
// Imported by WebConfirm.ts (the token, the page's origin) and internal/api.ts
// (the routes); the secrets are made here and nowhere else.
import { HttpServerRequest } from "@effect/platform"
import { Data, Effect } from "effect"
import { randomBytes, timingSafeEqual } from "node:crypto"

/** A fresh random secret: the API token, a card's CSRF value. */
export const secret = (): string => randomBytes(24).toString("hex")

const sameSecret = (a: string, b: string) => a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b))

/** 401: the call did not carry the token. */
export class Unauthorized extends Data.TaggedError("@graded/confirm/WebConfirm/Unauthorized")<{}> {
  override get message(): string {
    return "a valid token is required"
  }
}

/** 403: a decision from another origin, or without the card's CSRF value. */
export class Forbidden extends Data.TaggedError("@graded/confirm/WebConfirm/Forbidden")<{
  readonly check: "origin" | "csrf"
}> {
  override get message(): string {
    return this.check === "origin" ? "decisions are only taken from this page's origin" : "missing or wrong CSRF value"
  }
}

/**
 * The guard for one server: its token and its page's origin.
 */
export interface Guard {
  /** Every /api/ call. */
  readonly api: Effect.Effect<void, Unauthorized, HttpServerRequest.HttpServerRequest>
  /** Every decision, on a card or a proposal, with that card's CSRF value. */
  readonly decision: (csrf: string) => Effect.Effect<void, Forbidden, HttpServerRequest.HttpServerRequest>
}

export const make = (options: { readonly token: string; readonly origin: string }): Guard => ({
  api: Effect.flatMap(
    HttpServerRequest.HttpServerRequest,
    (request) =>
      sameSecret(request.headers.authorization ?? "", `Bearer ${options.token}`) ? Effect.void : new Unauthorized()
  ),
  decision: (csrf) =>
    Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
      const origin = request.headers.origin
      if (origin !== undefined && origin !== options.origin) return new Forbidden({ check: "origin" })
      return sameSecret(request.headers["x-graded-csrf"] ?? "", csrf) ? Effect.void : new Forbidden({ check: "csrf" })
    })
})
