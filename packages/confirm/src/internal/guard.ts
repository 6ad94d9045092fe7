// The checks that stand between a request and a decision, each written once,
// in the order they run:
// 1. every request: a Host this server answers for (a rebound DNS name is
//    refused), a declared body within the limit, a path whose %-escapes decode;
// 2. every /api/ call: who is calling (the page's token in single-user mode,
//    a person's own token, or the app's sign-in hook);
// 3. every decision, on a card or a proposal: when the browser sends an
//    Origin, the same host as the request, and the card's own CSRF value.
// A browser never adds the Authorization header by itself, and a custom header
// needs a preflight this server never grants, so another site cannot decide
// for the person even with the page open. Secrets are compared in constant
// time over their bytes, hashed first, so no header, whatever its bytes, makes
// the comparison throw.
// Imported by WebConfirm.ts (the options, the secrets) and internal/api.ts (the
// routes); the secrets are made here and nowhere else.
import { Effect, Schema } from "effect"
import { HttpServerRequest } from "effect/http"
import { Printable } from "@graded/core"
import { createHash, randomBytes, timingSafeEqual } from "node:crypto"
import { networkInterfaces } from "node:os"
import type { Authenticate } from "../WebConfirm.js"

/** A fresh random secret: the page's token, a card's CSRF value. */
export const secret = (): string => randomBytes(24).toString("hex")

const digest = (text: string): Buffer => createHash("sha256").update(text, "utf8").digest()

/** 401: the caller is not someone this server knows. */
export class Unauthorized extends Schema.TaggedError<Unauthorized>()("@graded/confirm/WebConfirm/Unauthorized", {
  reason: Schema.String
}) {
  override get message(): string {
    return this.reason
  }
}

const noToken = new Unauthorized({ reason: "a valid token is required" })

/** 403: a decision from another origin, or without the card's CSRF value. */
export class Forbidden extends Schema.TaggedError<Forbidden>()("@graded/confirm/WebConfirm/Forbidden", {
  check: Schema.Literals(["origin", "csrf"])
}) {
  override get message(): string {
    return this.check === "origin" ? "decisions are only taken from this page's origin" : "missing or wrong CSRF value"
  }
}

/** 421: a Host this server was not started on (a rebound DNS name, a wrong port). */
export class MisdirectedHost extends Schema.TaggedError<MisdirectedHost>()(
  "@graded/confirm/WebConfirm/MisdirectedHost",
  { host: Schema.String }
) {
  override get message(): string {
    return `this server does not answer for ${
      this.host === "" ? "a request without a Host" : Printable.escape(this.host)
    }: it answers for the address it was started on and its allowedHosts`
  }
}

/** 413: a body over the limit, refused before it is read in full or parsed. */
export class TooLarge extends Schema.TaggedError<TooLarge>()("@graded/confirm/WebConfirm/TooLarge", {
  limit: Schema.Number
}) {
  override get message(): string {
    return `the request body is larger than ${this.limit} bytes`
  }
}

/** 400: a path whose %-escapes do not decode. */
export class BadPath extends Schema.TaggedError<BadPath>()("@graded/confirm/WebConfirm/BadPath", {}) {
  override get message(): string {
    return "the path has a malformed %-escape"
  }
}

/** Who may call the API, and how the server tells who is calling. */
export type Who =
  /** One person holds the page's token; the body names them. */
  | { readonly _tag: "SingleUser"; readonly token: string }
  /** A token per person: the token names the caller. */
  | { readonly _tag: "Users"; readonly users: Readonly<Record<string, string>> }
  /** The app's own sign-in. */
  | { readonly _tag: "Hook"; readonly authenticate: Authenticate }

/**
 * The Host values a server answers for: its own address and the loopback
 * names at its port (with every local address when it listens on all), and
 * the allowed hosts it was given (without a port: at any port).
 */
export const hosts = (bound: string, port: number, allowed: ReadonlyArray<string>): ReadonlyArray<string> => {
  const bracket = (address: string) => address.includes(":") ? `[${address}]` : address
  const everywhere = bound === "0.0.0.0" || bound === "::" || bound === ""
  const local = everywhere
    ? Object.values(networkInterfaces()).flatMap((addresses) => (addresses ?? []).map((a) => bracket(a.address)))
    : []
  const names = ["localhost", "127.0.0.1", "[::1]", bracket(bound), ...local]
  return [...names.map((name) => `${name}:${port}`), ...allowed].map((host) => host.toLowerCase())
}

/** The guard for one server. */
export interface Guard {
  /** Every request, before any route. */
  readonly request: Effect.Effect<void, MisdirectedHost | TooLarge | BadPath, HttpServerRequest.HttpServerRequest>
  /** Every /api/ call: who is calling; `undefined` in single-user mode, where the body names the person. */
  readonly api: Effect.Effect<string | undefined, Unauthorized, HttpServerRequest.HttpServerRequest>
  /** Every decision, on a card or a proposal, with that card's CSRF value. */
  readonly decision: (csrf: string) => Effect.Effect<void, Forbidden, HttpServerRequest.HttpServerRequest>
  readonly maxBodyBytes: number
}

const withoutPort = (host: string) => host.replace(/:\d*$/, "")

const decodes = (url: string) => {
  try {
    decodeURIComponent(url.split("?")[0] ?? "")
    return true
  } catch {
    return false
  }
}

const bearer = (request: HttpServerRequest.HttpServerRequest) => {
  const header = request.headers.authorization ?? ""
  return header.startsWith("Bearer ") ? header.slice("Bearer ".length) : ""
}

const identify = (who: Who): Guard["api"] => {
  switch (who._tag) {
    case "SingleUser": {
      const expected = digest(who.token)
      return Effect.flatMap(
        HttpServerRequest.HttpServerRequest,
        (request) => timingSafeEqual(digest(bearer(request)), expected) ? Effect.succeed(undefined) : noToken
      )
    }
    case "Users": {
      const table = Object.entries(who.users).map(([token, by]) => [digest(token), by] as const)
      return Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
        const presented = digest(bearer(request))
        let found: string | undefined
        // Every entry is compared, found or not, so the time says nothing about which matched.
        for (const [token, by] of table) if (timingSafeEqual(token, presented)) found = by
        return found === undefined ? noToken : Effect.succeed(found)
      })
    }
    case "Hook": {
      const failed = new Unauthorized({ reason: "could not tell who you are: the sign-in check failed" })
      return Effect.flatMap(
        HttpServerRequest.HttpServerRequest,
        (request) =>
          Effect.suspend(() => who.authenticate(request)).pipe(
            Effect.catchDefect(() => Effect.fail(failed)),
            Effect.filterOrFail(
              (by): by is string => typeof by === "string" && by.trim() !== "",
              () => new Unauthorized({ reason: "could not tell who you are: the sign-in check named nobody" })
            )
          )
      )
    }
  }
}

export const make = (options: {
  readonly who: Who
  readonly hosts: ReadonlyArray<string>
  readonly maxBodyBytes: number
}): Guard => {
  const allowed = new Set(options.hosts)
  const answersFor = (host: string) =>
    allowed.has(host.toLowerCase()) || (host !== withoutPort(host) && allowed.has(withoutPort(host).toLowerCase()))
  return {
    request: Effect.flatMap(
      HttpServerRequest.HttpServerRequest,
      (request): Effect.Effect<void, MisdirectedHost | TooLarge | BadPath> => {
        const host = request.headers.host ?? ""
        if (!answersFor(host)) return new MisdirectedHost({ host })
        const length = request.headers["content-length"]
        if (length !== undefined && !(Number(length) <= options.maxBodyBytes)) {
          return new TooLarge({ limit: options.maxBodyBytes })
        }
        return decodes(request.url) ? Effect.void : new BadPath()
      }
    ),
    api: identify(options.who),
    decision: (csrf) =>
      Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
        const origin = request.headers.origin
        if (origin !== undefined && !sameHost(origin, request.headers.host ?? "")) {
          return new Forbidden({ check: "origin" })
        }
        const presented = request.headers["x-graded-csrf"] ?? ""
        return timingSafeEqual(digest(presented), digest(csrf)) ? Effect.void : new Forbidden({ check: "csrf" })
      }),
    maxBodyBytes: options.maxBodyBytes
  }
}

// The browser's Origin names the host it loaded the page from; the Host was
// checked already, so an Origin naming the same host is this page.
const sameHost = (origin: string, host: string) => {
  try {
    return new URL(origin).host.toLowerCase() === host.toLowerCase()
  } catch {
    return false
  }
}
