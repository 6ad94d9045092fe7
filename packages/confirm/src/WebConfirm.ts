/**
 * A HumanConfirm UI in the browser: an effect/http server (on Node's) that
 * serves a page of confirm cards and a small JSON API. Each write or send
 * becomes a card showing the tool, grade, title, who is acting, when, and the
 * exact payload; a person approves it, edits it (the edit is checked on the
 * server and checked again by HumanConfirm) or rejects it with a reason. The
 * confirmation waits until someone decides, until a configured timeout
 * rejects it as "timed out", or until the server closes, which rejects it as
 * "the confirm server closed".
 *
 * Who decides is who signed in: the app's sign-in hook (`authenticate`), a
 * token per person (`users`), or, said explicitly, one person holding the
 * page's token (`singleUser`); the server does not start without one of them.
 *
 * What the person sees is what runs: characters that hide or reorder text are
 * shown as badges and flag the card; every field is capped (`maxChars`), a cut
 * says so, and a card that did not show all of itself can only be rejected.
 *
 * Security: the caller's identity on every API call (without it: 401, nothing
 * changes); a per-card CSRF value and an Origin check on decisions; each card
 * decided once (a second tab or a double click is told who decided); payloads
 * shown as text, never HTML; a Host the server was not started on refused
 * (421); bodies over `maxBodyBytes` refused before they are parsed (413);
 * bound to 127.0.0.1 unless told otherwise.
 *
 * With `chat`, the server also serves a chat page (`/chat`): the app's agent
 * answers there, its text streamed over Server-Sent Events, and each write or
 * send it proposes is a card of this server, drawn in the conversation and
 * decided there as on the confirm page, under the same sign-in and CSRF rules.
 * A card decided on the confirm page is told to the chat, with who decided.
 * A durable chat (`{ durable: { reply } }`) runs on the app's stores: a
 * page closed mid-answer leaves its run stored, and reopened it goes on with
 * that run (`Runs.resumeStream`), only ever one of the person's own.
 *
 * @since 0.1.0
 */
import { NodeHttpServer } from "@effect/platform-node"
import { Context, type Duration, Effect, Layer, Schema, type Scope, type Stream } from "effect"
import type { HttpServerError, HttpServerRequest } from "effect/http"
import {
  type Agent,
  type Audit,
  HumanConfirm,
  Invocation,
  type LanguageModel,
  type ProposalStore,
  type RunStore,
  type Runs,
  type SendCapability,
  type Toolkit,
  type NeedsHumanConfirm,
  type WriteCapability
} from "@graded/core"
import { createServer } from "node:http"
import * as Api from "./internal/api.js"
import * as Cards from "./internal/cards.js"
import * as Guard from "./internal/guard.js"
import * as ProposalCards from "./internal/proposals.js"

/**
 * The caller is not someone the server knows: the answer is 401 with `reason`,
 * and nothing changes. A sign-in hook fails with it.
 *
 * @example
 * import { Effect } from "effect"
 * import { WebConfirm } from "@graded/confirm"
 * const refuse = Effect.fail(new WebConfirm.Unauthorized({ reason: "sign in first" }))
 *
 * @since 0.1.0
 * @category errors
 */
export { Unauthorized } from "./internal/guard.js"

/**
 * An app's sign-in: tells who is calling from the request (a session cookie,
 * a header set by a sign-in proxy, a bearer token), or fails with
 * `Unauthorized`. The identity it names is the decider the audit records; a
 * defect in it counts as a refusal.
 *
 * @since 0.1.0
 * @category models
 */
export type Authenticate = (
  request: HttpServerRequest.HttpServerRequest
) => Effect.Effect<string, Guard.Unauthorized>

/**
 * What every server is configured with, whoever decides: where it listens,
 * which Host names it answers for, its limits, and how long a card waits.
 *
 * @since 0.1.0
 * @category models
 */
export interface Common {
  /** Default 0: any free port. */
  readonly port?: number | undefined
  /** Default 127.0.0.1. Anything else exposes the page beyond this machine. */
  readonly host?: string | undefined
  /** Rejects a confirmation nobody decided in this time, as "timed out". */
  readonly timeout?: Duration.Input | undefined
  /**
   * More Host names the page answers for (a reverse proxy's, a machine's DNS
   * name), with or without a port. The address it was started on and the
   * loopback names at its port always work; any other Host is refused (421).
   */
  readonly allowedHosts?: ReadonlyArray<string> | undefined
  /** Default 1 MiB (`defaultMaxBodyBytes`): a bigger body is refused with 413 before it is parsed. */
  readonly maxBodyBytes?: number | undefined
  /** Default 20,000 (`defaultMaxChars`): the most characters a card shows of each field and of the payload. */
  readonly maxChars?: number | undefined
  /** Proposals from a store, shown as cards beside live confirmations. */
  readonly proposals?: Proposals<Toolkit.Any> | undefined
  /**
   * A chat page at `/chat`: the app's agent, its answers streamed, its writes
   * and sends decided as cards inline in the conversation. `Chat` runs in
   * memory (a page closed mid-answer loses its run); `DurableChat` (`{ durable: { reply } }`) runs on the
   * app's stores, so a page closed mid-answer leaves a run to resume.
   *
   * @since 0.2.0
   */
  readonly chat?: Chat | DurableChat | undefined
  /**
   * A run timeline at `/runs`, behind the same sign-in: the runs the audit
   * holds (filtered by state, actor, tool) and each run's rounds, candidate
   * sets with what was left out and why, calls, refusals, decisions and
   * deliveries. `entries` reads the app's audit: `Effect.sync(() =>
   * memory.entries)`, `Audit.readJsonl(path)`, or a SQL sink's reader.
   *
   * @since 0.4.0
   */
  readonly timeline?: { readonly entries: Effect.Effect<ReadonlyArray<Audit.Entry>, unknown> } | undefined
}

/**
 * One message of a chat's conversation as the page sends it: the person's
 * (`user`), or an answer the agent gave before (`assistant`).
 *
 * @since 0.2.0
 * @category models
 */
export interface ChatMessage {
  readonly role: "user" | "assistant"
  readonly content: string
}

/**
 * What the chat page asks for: the conversation so far, the person's new
 * message last (at most 100 messages of 20,000 characters each), and who is
 * chatting: the signed-in person, or in single-user mode the name the page
 * gives, if any.
 *
 * @since 0.2.0
 * @category models
 */
export interface ChatRequest {
  readonly messages: ReadonlyArray<ChatMessage>
  readonly by: string | undefined
}

/**
 * The chat page's agent. `reply` starts the run that answers a request,
 * usually `Agent.supervisedStream` over the conversation
 * (`WebConfirm.toMessages(request.messages)`), with its model and its tools'
 * services provided. The server provides the rest: a `HumanConfirm` over its
 * own cards, so each write or send of the run is a card of this server,
 * drawn in the conversation and on the confirm page alike, decided by a
 * signed-in person with the card's CSRF value. The page closing interrupts
 * the run.
 *
 * @since 0.2.0
 * @category models
 */
export interface Chat {
  /** In memory; a `DurableChat` gives its `reply` under `durable`. */
  readonly durable?: undefined
  readonly reply: (
    request: ChatRequest
  ) => Stream.Stream<
    Agent.Event<any> | Agent.End<any>,
    unknown,
    WriteCapability | SendCapability | NeedsHumanConfirm<string>
  >
}

/**
 * What a durable chat's `reply` is asked to do: start the run `runId` (a
 * fresh id the server made, `chat-` and 32 hex digits) for a new message of
 * the conversation, or resume the stored run `runId`, one of this person's
 * own (a page reopened, a connection that came back, or every decision of
 * the waiting turn made).
 *
 * @since 0.2.0
 * @category models
 */
export type DurableChatRequest =
  | {
    readonly _tag: "Start"
    readonly runId: string
    readonly messages: ReadonlyArray<ChatMessage>
    readonly by: string | undefined
  }
  | { readonly _tag: "Resume"; readonly runId: string; readonly by: string | undefined }

/**
 * The chat page's agent, on the app's durable stores (`chat: { durable: { reply } }`): `reply` answers a
 * `Start` with `Runs.startStream` (with the `runId` it is given) and a
 * `Resume` with `Runs.resumeStream`, with its model and its tools' services
 * provided. The server provides the `RunStore` and the `ProposalStore` it was
 * given (with `proposals`, which a durable chat needs): each write or send
 * of the run is a proposal of that store, drawn in the conversation and on
 * the confirm page alike, decided there by a signed-in person. The server
 * runs `reply` as the person chatting (`Invocation.within({ actor })`), so
 * the run's actor is them, and only they resume it; a `reply` that sets
 * another actor makes runs nobody can resume from the page.
 *
 * While the run waits, the server watches its proposals in the store: each
 * decision, made anywhere, is told to the page (who decided), and once the
 * turn is decided it resumes the run in the same answer. Closing the page
 * leaves the run stored as its last step saved it: reopened, the page shows
 * the conversation so far and goes on with it.
 *
 * @since 0.2.0
 * @category models
 */
export interface DurableChat {
  readonly durable: {
    readonly reply: (
      request: DurableChatRequest
    ) => Stream.Stream<Agent.Event<any> | Runs.End<any>, unknown, RunStore.RunStore | ProposalStore.ProposalStore>
  }
  // Absent, so that a `{ reply }` written inline is typed as a `Chat`'s.
  readonly reply?: undefined
}

/**
 * A chat's conversation as a model's messages, for `Agent.supervisedStream`'s
 * `messages`.
 *
 * @example
 * import { Stream } from "effect"
 * import { Agent, ScriptedModel, Toolkit } from "@graded/core"
 * import { WebConfirm } from "@graded/confirm"
 *
 * const chat: WebConfirm.Chat = {
 *   reply: (request) =>
 *     Agent.supervisedStream({ toolkit: Toolkit.make(), messages: WebConfirm.toMessages(request.messages) }).pipe(
 *       Stream.provide(ScriptedModel.layer([ScriptedModel.text("Hello!")]))
 *     )
 * }
 *
 * @since 0.2.0
 * @category constructors
 */
export const toMessages = (messages: ReadonlyArray<ChatMessage>): ReadonlyArray<LanguageModel.Message> =>
  messages.map((message): LanguageModel.Message =>
    message.role === "user"
      ? { role: "user", content: message.content }
      : { role: "assistant", content: message.content, toolCalls: [] }
  )

/**
 * Who decides, by the app's own sign-in: every API call runs `authenticate`,
 * and the identity it names is recorded as the decider. A body's `by` is
 * ignored.
 *
 * @since 0.1.0
 * @category models
 */
export interface SignedIn {
  readonly authenticate: Authenticate
  readonly users?: undefined
  readonly singleUser?: undefined
  readonly token?: undefined
}

/**
 * Who decides, by a token per person: `{ [token]: identity }`. Each person
 * opens `server.link(theirToken)`; a call carrying a token is recorded as that
 * token's person. A body's `by` is ignored.
 *
 * @since 0.1.0
 * @category models
 */
export interface Users {
  readonly users: Readonly<Record<string, string>>
  readonly authenticate?: undefined
  readonly singleUser?: undefined
  readonly token?: undefined
}

/**
 * Who decides, said explicitly: one person holds the page's token (`token`,
 * random by default) and names themself on the page; the name a decision's
 * body gives (`by`) is recorded, escaped and cut to a name's length.
 *
 * @since 0.1.0
 * @category models
 */
export interface SingleUser {
  readonly singleUser: true
  readonly token?: string | undefined
  readonly authenticate?: undefined
  readonly users?: undefined
}

/**
 * How the confirm page is served: the common settings, and exactly one way
 * to tell who decides.
 *
 * @since 0.1.0
 * @category models
 */
export type Options = Common & (SignedIn | Users | SingleUser | SayWhoDecides)

/**
 * What options that give no way to tell who decides are told: the reason of
 * their `Misconfigured`, and the name of `SayWhoDecides`' one property.
 *
 * @since 0.1.0
 * @category errors
 */
export type NoDecider =
  "say who decides: give authenticate (your sign-in), users (one token per person) or singleUser: true (one person holds the page's token and names themself)"

const noDecider: NoDecider =
  "say who decides: give authenticate (your sign-in), users (one token per person) or singleUser: true (one person holds the page's token and names themself)"

/**
 * What options that give no way to tell who decides are missing, by name:
 * no value has this member's one required property (of type `never`), so it
 * admits nothing, and the compiler's message for `{ port }` names what to
 * give rather than "Property 'users' is missing".
 *
 * @since 0.1.0
 * @category models
 */
export type SayWhoDecides = { readonly [K in NoDecider]: never } & {
  readonly authenticate?: undefined
  readonly users?: undefined
  readonly singleUser?: undefined
  readonly token?: undefined
}

/**
 * The default body limit: 1 MiB.
 *
 * @since 0.1.0
 * @category models
 */
export const defaultMaxBodyBytes: number = 1024 * 1024

/**
 * The default cap on what a card shows of each field: 20,000 characters.
 *
 * @since 0.1.0
 * @category models
 */
export const defaultMaxChars: number = 20_000

/**
 * The options cannot start a server: no way to tell who decides, more than
 * one, or a limit that is not a positive whole number.
 *
 * @since 0.1.0
 * @category errors
 */
export class Misconfigured extends Schema.TaggedError<Misconfigured>()("@graded/confirm/WebConfirm/Misconfigured", {
  option: Schema.String,
  reason: Schema.String
}) {
  override get message(): string {
    return `WebConfirm: ${this.reason}`
  }
}

/**
 * Proposals shown as cards too, read from the store: pending ones (approving
 * delivers through `Proposal.approve` with this toolkit, the one holding the
 * write and send tools) and in-doubt deliveries (mark done, or `Proposal.retry`).
 *
 * @since 0.1.0
 * @category models
 */
export interface Proposals<T extends Toolkit.Any> {
  readonly toolkit: T
}

/**
 * What the server needs beyond itself: nothing, or, with proposals, what
 * serving them needs, and with a durable chat, the run store.
 *
 * @since 0.1.0
 * @category utility types
 */
export type Needs<O> =
  | (O extends { readonly proposals: Proposals<infer T> } ? ProposalServices<T> : never)
  | (O extends { readonly chat: DurableChat } ? RunStore.RunStore | ProposalStore.ProposalStore : never)

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
 * A decided card, for the record: who decided what, never the payload.
 * `"closed"` is a card the server rejected as it closed.
 *
 * @since 0.1.0
 * @category models
 */
export interface Decided {
  readonly id: string
  readonly tool: string
  readonly by: string
  readonly decision: "approved" | "edited" | "rejected" | "timed out" | "closed"
}

/**
 * The running server.
 *
 * @since 0.1.0
 * @category models
 */
export interface Server {
  /** The page: open this. In single-user mode, from `make`, it carries the page's token in its fragment. */
  readonly url: string
  readonly origin: string
  /** The page's token, in single-user mode, from `make`; otherwise (and from the `WebConfirm` service) undefined. */
  readonly token: string | undefined
  /** The page for the person holding `token` (with `users`: each person's own link). */
  readonly link: (token: string) => string
  /**
   * The chat page for the person holding `token`, when the server has `chat`;
   * otherwise undefined.
   *
   * @since 0.2.0
   */
  readonly chatLink: ((token: string) => string) | undefined
  /** How many confirmations wait for a person. */
  readonly pending: () => number
  /** The last 1,000 decisions, oldest first. */
  readonly decided: () => ReadonlyArray<Decided>
}

/**
 * The running server, for printing its URL.
 *
 * @since 0.1.0
 * @category services
 */
export class WebConfirm extends Context.Service<WebConfirm, Server>()("@graded/confirm/WebConfirm") {}

const positive = (option: string, value: number | undefined, fallback: number) =>
  value === undefined ? Effect.succeed(fallback)
    : Number.isInteger(value) && value > 0 ? Effect.succeed(value)
    : new Misconfigured({ option, reason: `${option} must be a positive whole number, got ${value}` })

// The app's chat as it is now, checked at run time too (a cast or plain
// JavaScript): code that reaches the app's object and swaps its `reply`
// later is not called instead of it. One CSRF value per server starts its
// runs, told to a signed-in page by /api/me. A durable chat's cards are
// proposals, decided on the proposals' route: it needs `proposals`.
const chatOf = (options: Options): Effect.Effect<Api.ChatOptions | undefined, Misconfigured> => {
  const chat = options.chat
  if (chat === undefined) return Effect.succeed(undefined)
  const shape = new Misconfigured({
    option: "chat",
    reason:
      "chat must be { reply } or { durable: { reply } }: a function from a chat request to the run's stream of events"
  })
  if (typeof chat !== "object" || chat === null) return shape
  if (chat.durable === undefined) {
    return typeof chat.reply === "function"
      ? Effect.succeed({ _tag: "Memory", chat: Object.freeze({ reply: chat.reply.bind(chat) }), csrf: Guard.secret() })
      : shape
  }
  const durable = chat.durable
  if (typeof durable !== "object" || durable === null || typeof durable.reply !== "function") return shape
  if (options.proposals === undefined) {
    return new Misconfigured({
      option: "chat",
      reason: "a durable chat needs proposals ({ toolkit }): its writes and sends are proposals decided as cards"
    })
  }
  return Effect.succeed({
    _tag: "Durable",
    chat: Object.freeze({ durable: Object.freeze({ reply: durable.reply.bind(durable) }) }),
    csrf: Guard.secret()
  })
}

// Exactly one way to tell who decides, checked at run time too: the types
// say so, but a cast or plain JavaScript does not.
const who = (options: Options): Effect.Effect<Guard.Who, Misconfigured> => {
  const given = [
    options.authenticate !== undefined ? "authenticate" : undefined,
    options.users !== undefined ? "users" : undefined,
    options.singleUser === true ? "singleUser" : undefined
  ].filter((name) => name !== undefined)
  if (given.length === 0) {
    return new Misconfigured({
      option: "authenticate",
      reason: noDecider
    })
  }
  if (given.length > 1) {
    return new Misconfigured({
      option: given.join(", "),
      reason: `give one way to say who decides, not ${given.join(" and ")}`
    })
  }
  if (options.token !== undefined && options.singleUser !== true) {
    return new Misconfigured({
      option: "token",
      reason: "token is the single-user page's token; with authenticate or users, leave it out"
    })
  }
  if (options.authenticate !== undefined) return Effect.succeed({ _tag: "Hook", authenticate: options.authenticate })
  if (options.users !== undefined) {
    const entries = Object.entries(options.users)
    return entries.length > 0 &&
        entries.every(([token, by]) => token !== "" && typeof by === "string" && by.trim() !== "")
      ? Effect.succeed({ _tag: "Users", users: options.users })
      : new Misconfigured({
        option: "users",
        reason: "users must name at least one person, each by a non-empty token and name"
      })
  }
  const token = options.token ?? Guard.secret()
  return token === ""
    ? new Misconfigured({ option: "token", reason: "token must not be empty" })
    : Effect.succeed({ _tag: "SingleUser", token })
}

/**
 * Starts the server and returns the UI for `HumanConfirm.layer`, and the
 * server. Fails with `Misconfigured` when the options do not say who decides,
 * give a `chat` without its `reply`, or a durable chat without `proposals`.
 *
 * @example
 * import { Effect } from "effect"
 * import { HumanConfirm } from "@graded/core"
 * import { WebConfirm } from "@graded/confirm"
 * const program = Effect.gen(function*() {
 *   const { server, ui } = yield* WebConfirm.make({ singleUser: true, timeout: "10 minutes" })
 *   yield* Effect.log(`Open ${server.url}`)
 *   return HumanConfirm.layer(ui)
 * })
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = <const O extends Options>(
  options: O
): Effect.Effect<
  { readonly ui: HumanConfirm.UI; readonly server: Server },
  HttpServerError.ServeError | Misconfigured,
  Scope.Scope | Needs<O>
> =>
  // Written once for any toolkit (whose approvals need `any`); the signature
  // says what the proposals need.
  Effect.gen(function*() {
    const decider = yield* who(options)
    const maxBodyBytes = yield* positive("maxBodyBytes", options.maxBodyBytes, defaultMaxBodyBytes)
    const maxChars = yield* positive("maxChars", options.maxChars, defaultMaxChars)
    const chat = yield* chatOf(options)
    const host = options.host ?? "127.0.0.1"
    const server = yield* NodeHttpServer.make(() => createServer(), { port: options.port ?? 0, host })
    const address = server.address
    const port = address._tag === "UnixPathAddress" ? 0 : address.port
    const origin = address._tag === "UnixPathAddress" ? "unix"
      : `http://${host.includes(":") ? `[${host}]` : host}:${port}`
    const cards = Cards.make({ timeout: options.timeout, maxChars })
    yield* server.serve(
      yield* Api.make({
        cards,
        guard: Guard.make({
          who: decider,
          hosts: Guard.hosts(host, port, options.allowedHosts ?? []),
          maxBodyBytes
        }),
        proposals: options.proposals === undefined ? undefined
          : ProposalCards.make(options.proposals.toolkit, maxChars),
        chat,
        timeline: options.timeline
      })
    )
    // Added after the server, so it runs first as the scope closes: every
    // waiting caller hears at once, before the server waits for its connections.
    yield* Effect.addFinalizer(() => cards.close("the confirm server closed"))
    const link = (token: string) => `${origin}/#token=${token}`
    const chatLink = chat === undefined ? undefined : (token: string) => `${origin}/chat#token=${token}`
    const token = decider._tag === "SingleUser" ? decider.token : undefined
    return {
      ui: { confirm: (view) => cards.ask(view) },
      // Frozen, as every object graded shares with the code it serves.
      server: Object.freeze({
        url: token === undefined ? `${origin}/` : link(token),
        origin,
        token,
        link,
        chatLink,
        pending: () => cards.pending().length,
        decided: cards.decided
      })
    }
  }) as Effect.Effect<
    { readonly ui: HumanConfirm.UI; readonly server: Server },
    HttpServerError.ServeError | Misconfigured,
    Scope.Scope | Needs<O>
  >

// The server as the context holds it: any code that runs in that context
// (a read tool's included) can read a service there, so it carries no
// credential. A single-user app that wants the page's link passes its own
// `token` and asks `link(token)`, or uses `make`, which hands the token to
// the code that called it.
const withoutToken = (server: Server): Server =>
  Object.freeze({
    url: `${server.origin}/`,
    origin: server.origin,
    token: undefined,
    link: server.link,
    chatLink: server.chatLink,
    pending: server.pending,
    decided: server.decided
  })

/**
 * `HumanConfirm.layer` over the web page, and the `WebConfirm` service that
 * tells its URL. The service holds no credential (it is in the context, where
 * every tool's code can read it): its `url` has no token and its `token` is
 * undefined. With `users` each person's link is `link(theirToken)`; a
 * single-user page is opened with the `token` the app passed
 * (`link(token)`), or made with `make`.
 *
 * @example
 * import { Effect, Layer } from "effect"
 * import { WebConfirm } from "@graded/confirm"
 * const alice = "a-long-random-token-for-alice"
 * const printLink = Effect.flatMap(WebConfirm.WebConfirm, (server) => Effect.log(`Open ${server.link(alice)}`))
 * const people = WebConfirm.layer({ users: { [alice]: "alice" } })
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = <const O extends Options>(
  options: O
): Layer.Layer<
  WriteCapability | SendCapability | NeedsHumanConfirm<string> | WebConfirm,
  HttpServerError.ServeError | Misconfigured,
  Needs<O>
> =>
  Invocation.freshLayer(() =>
    Effect.flatMap(
      make(options),
      ({ server, ui }) => Effect.map(Layer.build(HumanConfirm.layer(ui)), Context.add(WebConfirm, withoutToken(server)))
    )
  )

// Sealed where they are made (Invocation.seal): each is shared by every
// fiber, and a tool's code that finds one must not rewrite it in place.
Invocation.seal(WebConfirm)
