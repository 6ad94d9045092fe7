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
import type { ServeError } from "@effect/platform/HttpServerError"
import { NodeHttpServer } from "@effect/platform-node"
import { Context, type Duration, Effect, Layer, type Scope } from "effect"
import { HumanConfirm, type ProposalStore, type SendCapability, type Toolkit, type WriteCapability } from "@graded/core"
import { createServer } from "node:http"
import * as Api from "./internal/api.js"
import * as Cards from "./internal/cards.js"
import * as Guard from "./internal/guard.js"
import * as ProposalCards from "./internal/proposals.js"

/**
 * How the confirm page is served: where it listens, the secret its API asks
 * for, and how long, if at all, a card waits before it is rejected as timed out.
 *
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

/**
 * Starts the server and returns the UI for `HumanConfirm.layer`, and the server.
 *
 * @example
 * import { Effect } from "effect"
 * import { HumanConfirm } from "@graded/core"
 * import { WebConfirm } from "@graded/confirm"
 * const program = Effect.gen(function*() {
 *   const { server, ui } = yield* WebConfirm.make({ timeout: "10 minutes" })
 *   yield* Effect.log(`Open ${server.url}`)
 *   return HumanConfirm.layer(ui)
 * })
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = <const O extends Options & { readonly proposals?: Proposals<Toolkit.Any> | undefined }>(
  options: O = {} as O
): Effect.Effect<{ readonly ui: HumanConfirm.UI; readonly server: Server }, ServeError, Scope.Scope | Needs<O>> =>
  // Written once for any toolkit (whose approvals need `any`); the signature
  // says what the proposals need.
  Effect.gen(function*() {
    const token = options.token ?? Guard.secret()
    const host = options.host ?? "127.0.0.1"
    const server = yield* NodeHttpServer.make(() => createServer(), { port: options.port ?? 0, host })
    const address = server.address
    const origin = address._tag === "TcpAddress" ? `http://${host.includes(":") ? `[${host}]` : host}:${address.port}`
      : "unix"
    const cards = Cards.make({ timeout: options.timeout })
    yield* server.serve(Api.make({
      cards,
      guard: Guard.make({ token, origin }),
      proposals: options.proposals === undefined ? undefined : ProposalCards.make(options.proposals.toolkit)
    }))
    return {
      ui: { confirm: cards.ask },
      server: {
        url: `${origin}/#token=${token}`,
        origin,
        token,
        pending: () => cards.pending().length,
        decided: cards.decided
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
    Effect.map(
      make(options),
      ({ server, ui }) => Layer.merge(HumanConfirm.layer(ui), Layer.succeed(WebConfirm, server))
    )
  )
