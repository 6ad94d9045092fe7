/**
 * A HumanConfirm UI in the browser: an @effect/platform HTTP server that
 * serves a page of confirm cards and a small JSON API. Each write or send
 * becomes a card showing the tool, grade, title, who is acting, when, and the
 * exact payload; a person approves it, edits it (the edit is checked on the
 * server and checked again by HumanConfirm) or rejects it with a reason. The
 * confirmation waits until someone decides, or until a configured timeout
 * rejects it as "timed out".
 *
 * Security: a secret token on every API call (without it: 401, nothing
 * changes); a per-card CSRF value and an Origin check on decisions; each card
 * decided once (a second tab or a double click is told who decided); payloads
 * shown as text, never HTML; bound to 127.0.0.1 unless told otherwise.
 *
 * @since 0.1.0
 */
import { HttpServerRequest, HttpServerResponse } from "@effect/platform"
import type { ServeError } from "@effect/platform/HttpServerError"
import { NodeHttpServer } from "@effect/platform-node"
import { Context, Deferred, Duration, Effect, Layer, Option, type Scope } from "effect"
import { HumanConfirm, Proposal, ProposalStore, type SendCapability, type Toolkit, type WriteCapability } from "@graded/core"
import { randomBytes, timingSafeEqual } from "node:crypto"
import { createServer } from "node:http"
import { page } from "./internal/page.js"

/**
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** Default 0: any free port. */
  readonly port?: number | undefined
  /** Default 127.0.0.1. Anything else exposes the page beyond this machine. */
  readonly host?: string | undefined
  /** The secret for the API; a random one by default. */
  readonly token?: string | undefined
  /** Rejects a confirmation nobody decided in this time, as "timed out". */
  readonly timeout?: Duration.DurationInput | undefined
}

/**
 * Pending proposals shown as cards too; approving one delivers it through
 * `Proposal.approve` with this toolkit (the one holding the write and send
 * tools themselves).
 *
 * @since 0.1.0
 * @category models
 */
export interface Proposals<T extends Toolkit.Any> {
  readonly toolkit: T
}

/**
 * What the server needs beyond itself: nothing, or, with proposals, what
 * serving them needs.
 *
 * @since 0.1.0
 * @category utility types
 */
export type Needs<O> = O extends { readonly proposals: Proposals<infer T> } ? ProposalServices<T> : never

/**
 * What serving proposals needs: the store, and the tools' own services.
 *
 * @since 0.1.0
 * @category utility types
 */
export type ProposalServices<T extends Toolkit.Any> =
  | ProposalStore.ProposalStore
  // The page itself is the HumanConfirm that approves a proposal.
  | Exclude<Toolkit.Requirements<T>, WriteCapability | SendCapability>

/**
 * A decided card, for the record.
 *
 * @since 0.1.0
 * @category models
 */
export interface Decided {
  readonly id: string
  readonly tool: string
  readonly by: string
  readonly decision: "approved" | "edited" | "rejected" | "timed out"
}

/**
 * The running server.
 *
 * @since 0.1.0
 * @category models
 */
export interface Server {
  /** The page, with the token in its fragment: open this. */
  readonly url: string
  readonly origin: string
  readonly token: string
  /** How many confirmations wait for a person. */
  readonly pending: () => number
  readonly decided: () => ReadonlyArray<Decided>
}

/**
 * The running server, for printing its URL.
 *
 * @since 0.1.0
 * @category services
 */
export class WebConfirm extends Context.Tag("@graded/confirm/WebConfirm")<WebConfirm, Server>() {}

interface Card {
  readonly id: string
  readonly view: HumanConfirm.View
  readonly createdAt: string
  readonly csrf: string
  decided: Decided | undefined
  readonly answer: Deferred.Deferred<HumanConfirm.Decision>
}

const secret = () => randomBytes(24).toString("hex")

const sameSecret = (a: string, b: string) =>
  a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b))

const samePayload = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b)

const json = (status: number, body: unknown) =>
  HttpServerResponse.unsafeJson(body, { status, headers: { "cache-control": "no-store" } })

/**
 * Starts the server and returns the UI for `HumanConfirm.layer`, and the server.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = <const O extends Options & { readonly proposals?: Proposals<Toolkit.Any> | undefined }>(
  options: O = {} as O
): Effect.Effect<{ readonly ui: HumanConfirm.UI; readonly server: Server }, ServeError, Scope.Scope | Needs<O>> =>
  // Written once for any toolkit; the signature says what the proposals need.
  Effect.gen(function*() {
    const token = options.token ?? secret()
    const host = options.host ?? "127.0.0.1"
    const cards = new Map<string, Card>()
    const decided: Array<Decided> = []
    let next = 0

    // Marks a card decided and answers it, once: the check and the mark run
    // without yielding, so two decisions can never both win.
    const settle = (card: Card, record: Omit<Decided, "id" | "tool">, decision: HumanConfirm.Decision) => {
      if (card.decided !== undefined) return false
      card.decided = { id: card.id, tool: card.view.tool, ...record }
      decided.push(card.decided)
      Deferred.unsafeDone(card.answer, Effect.succeed(decision))
      return true
    }

    const server = yield* NodeHttpServer.make(() => createServer(), { port: options.port ?? 0, host })
    const address = server.address
    const origin = address._tag === "TcpAddress" ? `http://${host.includes(":") ? `[${host}]` : host}:${address.port}` : "unix"

    const decide = (request: HttpServerRequest.HttpServerRequest, id: string) =>
      Effect.gen(function*() {
        const card = cards.get(id)
        if (card === undefined) return json(404, { error: `there is no request ${id}` })
        const requestOrigin = request.headers.origin
        if (requestOrigin !== undefined && requestOrigin !== origin) {
          return json(403, { error: "decisions are only taken from this page's origin" })
        }
        if (!sameSecret(request.headers["x-graded-csrf"] ?? "", card.csrf)) {
          return json(403, { error: "missing or wrong CSRF value" })
        }
        if (card.decided !== undefined) {
          return json(409, { error: `already decided: ${card.decided.decision} by ${card.decided.by}`, ...card.decided })
        }
        const body = yield* Effect.orElseSucceed(request.json, () => undefined) as Effect.Effect<any>
        const by = typeof body?.by === "string" ? body.by.trim() : ""
        if (by === "") return json(400, { error: "say who decides: a non-empty \"by\"" })
        switch (body?.action) {
          case "approve":
            return settle(card, { by, decision: "approved" }, HumanConfirm.approve(by))
              ? json(200, { message: `Approved by ${by}.` })
              : json(409, { error: `already decided: ${card.decided!.decision} by ${card.decided!.by}` })
          case "edit": {
            // Checked here so the person can fix it; HumanConfirm checks it again.
            const problem = yield* Effect.flip(card.view.check(body.payload)).pipe(Effect.option)
            if (Option.isSome(problem)) return json(400, { error: `the edit is invalid: ${problem.value}` })
            return settle(card, { by, decision: "edited" }, HumanConfirm.approve(by, body.payload))
              ? json(200, { message: `Approved with an edit by ${by}.` })
              : json(409, { error: `already decided: ${card.decided!.decision} by ${card.decided!.by}` })
          }
          case "reject": {
            const reason = typeof body.reason === "string" && body.reason.trim() !== "" ? body.reason.trim() : "rejected on the confirm page"
            return settle(card, { by, decision: "rejected" }, HumanConfirm.reject(by, reason))
              ? json(200, { message: `Rejected by ${by}: ${reason}` })
              : json(409, { error: `already decided: ${card.decided!.decision} by ${card.decided!.by}` })
          }
          default:
            return json(400, { error: "action must be approve, edit or reject" })
        }
      })

    const proposalSecrets = new Map<string, string>()
    const proposalCsrf = (id: string) => {
      if (!proposalSecrets.has(id)) proposalSecrets.set(id, secret())
      return proposalSecrets.get(id)!
    }

    // A proposal is decided by the store, which claims it atomically: a
    // second approval is told who decided and delivers nothing.
    const decideProposal = (request: HttpServerRequest.HttpServerRequest, id: string, toolkit: Toolkit.Any) =>
      Effect.gen(function*() {
        const requestOrigin = request.headers.origin
        if (requestOrigin !== undefined && requestOrigin !== origin) {
          return json(403, { error: "decisions are only taken from this page's origin" })
        }
        if (!sameSecret(request.headers["x-graded-csrf"] ?? "", proposalCsrf(id))) {
          return json(403, { error: "missing or wrong CSRF value" })
        }
        const body = yield* Effect.orElseSucceed(request.json, () => undefined) as Effect.Effect<any>
        const by = typeof body?.by === "string" ? body.by.trim() : ""
        if (by === "") return json(400, { error: "say who decides: a non-empty \"by\"" })
        const outcome = body?.action === "reject"
          ? Effect.as(
            Proposal.reject(id, { by, reason: typeof body.reason === "string" && body.reason !== "" ? body.reason : "rejected on the confirm page" }),
            { message: `Rejected by ${by}.` }
          )
          : Effect.as(
            Effect.flatMap(Proposal.get(id), (shown) =>
              // The person decided on the card that showed the stored payload;
              // HumanConfirm asks this page again with what it computed from
              // that payload, and the answer stands only if the two agree.
              Effect.provide(
                Proposal.approve(toolkit, id),
                HumanConfirm.layer({
                  confirm: (view) =>
                    Effect.succeed(
                      view.tool !== shown.tool || !samePayload(view.payload, shown.payload)
                        ? HumanConfirm.reject(by, "the payload to confirm is not the one shown on the card")
                        : body?.action === "edit"
                        ? HumanConfirm.approve(by, body.payload)
                        : HumanConfirm.approve(by)
                    )
                })
              )),
            { message: body?.action === "edit" ? `Approved with an edit by ${by}.` : `Approved by ${by}.` }
          )
        return yield* outcome.pipe(
          Effect.map((answer) => json(200, answer)),
          Effect.catchAll((error: { _tag?: string; message?: string }) =>
            Effect.succeed(
              error._tag === "@graded/core/ProposalStore/AlreadyDecided" ? json(409, { error: error.message })
              : error._tag === "@graded/core/ProposalStore/NotFound" ? json(404, { error: error.message })
              : json(400, { error: error.message ?? "the proposal could not be delivered" })
            )
          )
        )
      }) as Effect.Effect<HttpServerResponse.HttpServerResponse>

    const app = Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const url = new URL(request.url, origin)
      if (url.pathname.startsWith("/api/")) {
        const auth = request.headers.authorization ?? ""
        if (!sameSecret(auth, `Bearer ${token}`)) return json(401, { error: "a valid token is required" })
        if (request.method === "GET" && url.pathname === "/api/requests") {
          const proposals = options.proposals === undefined ? [] : (yield* Proposal.list({ status: "pending" })).map((p) => ({
            id: p.id,
            kind: "proposal",
            csrf: proposalCsrf(p.id),
            createdAt: p.proposedAt,
            tool: p.tool,
            grade: p.grade,
            title: `Proposed: ${p.title}`,
            description: `A model proposed this ${p.grade}; nothing happens unless you approve it.`,
            actor: p.actor,
            payload: p.payload,
            schema: undefined
          }))
          const requests = [...cards.values()].filter((card) => card.decided === undefined).map((card) => ({
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
          }))
          return json(200, { requests: [...requests, ...proposals] })
        }
        const match = /^\/api\/requests\/([^/]+)\/decision$/.exec(url.pathname)
        if (request.method === "POST" && match !== null) return yield* decide(request, decodeURIComponent(match[1]!))
        const proposal = /^\/api\/proposals\/([^/]+)\/decision$/.exec(url.pathname)
        if (request.method === "POST" && proposal !== null && options.proposals !== undefined) {
          return yield* decideProposal(request, decodeURIComponent(proposal[1]!), options.proposals.toolkit)
        }
        return json(404, { error: "no such endpoint" })
      }
      if (request.method === "GET" && url.pathname === "/") {
        const nonce = randomBytes(16).toString("base64")
        return HttpServerResponse.html(page(nonce)).pipe(
          HttpServerResponse.setHeaders({
            "content-security-policy": `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'nonce-${nonce}'; connect-src 'self'; img-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`,
            "x-content-type-options": "nosniff",
            "referrer-policy": "no-referrer",
            "cache-control": "no-store"
          })
        )
      }
      return json(404, { error: "not found" })
    })
    yield* server.serve(app)

    const ui: HumanConfirm.UI = {
      confirm: (view) =>
        Effect.gen(function*() {
          const card: Card = {
            id: `c-${++next}`,
            view,
            createdAt: new Date().toISOString(),
            csrf: secret(),
            decided: undefined,
            answer: yield* Deferred.make<HumanConfirm.Decision>()
          }
          cards.set(card.id, card)
          const answer = Deferred.await(card.answer)
          const decision = options.timeout === undefined ? yield* answer : yield* answer.pipe(
            Effect.timeoutTo({
              duration: options.timeout,
              onSuccess: (decision) => decision,
              onTimeout: () => {
                const late = HumanConfirm.reject("web-confirm", "timed out")
                // A decision that won the race just now still stands.
                return settle(card, { by: "web-confirm", decision: "timed out" }, late) ? late : undefined
              }
            }),
            Effect.flatMap((decision) => decision === undefined ? answer : Effect.succeed(decision))
          )
          return decision
        }).pipe(
          // A confirmation abandoned by its caller leaves no card behind.
          Effect.onInterrupt(() =>
            Effect.sync(() => {
              for (const [id, card] of cards) if (card.view === view && card.decided === undefined) cards.delete(id)
            })
          )
        )
    }
    return {
      ui,
      server: {
        url: `${origin}/#token=${token}`,
        origin,
        token,
        pending: () => [...cards.values()].filter((card) => card.decided === undefined).length,
        decided: () => [...decided]
      }
    }
  }) as Effect.Effect<{ readonly ui: HumanConfirm.UI; readonly server: Server }, ServeError, Scope.Scope | Needs<O>>

/**
 * `HumanConfirm.layer` over the web page, and the `WebConfirm` service that
 * tells its URL.
 *
 * @example
 * import { Effect } from "effect"
 * import { WebConfirm } from "@graded/confirm"
 * const printUrl = Effect.flatMap(WebConfirm.WebConfirm, (server) => Effect.log(`Open ${server.url}`))
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = <const O extends Options & { readonly proposals?: Proposals<Toolkit.Any> | undefined }>(
  options: O = {} as O
): Layer.Layer<WriteCapability | SendCapability | WebConfirm, ServeError, Needs<O>> =>
  Layer.unwrapScoped(
    Effect.map(make(options), ({ server, ui }) => Layer.merge(HumanConfirm.layer(ui), Layer.succeed(WebConfirm, server)))
  )
