// The page and its JSON API, on effect/http's HttpRouter. Every request
// passes the guard's request check (Host, declared size, path) before any
// route; every /api/ route (an unknown one too) sits behind the caller's
// identity; both decision routes (and the in-doubt route: mark done or retry)
// go through the same decision guard (origin and the card's CSRF value)
// before the body is read; so does starting a chat run (`POST /api/chat`,
// with the chat's own CSRF value, which /api/me tells a signed-in page) and
// resuming a durable chat's (`POST /api/chat/resume`). A body is read up to the size limit, counting the
// bytes as they arrive (a body with no Content-Length is refused the moment it
// passes the limit), and only then decoded as UTF-8, JSON and Schema. Who
// decides is who the guard says is calling; only in single-user mode does the
// body name them. Every failure is a tagged error, turned into its status and
// `{ error }` in one place (`answer`).
// Imported by WebConfirm.ts only.
import { NodeHttpServerRequest } from "@effect/platform-node"
import { Context, Effect, Schema, SchemaIssue, type Scope, type Stream } from "effect"
import { type HttpServerError, HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { HumanConfirm, Invocation, Printable, type ProposalStore, type RunStore } from "@graded/core"
import { randomBytes } from "node:crypto"
import type { Chat, DurableChat as DurableChatOptions } from "../WebConfirm.js"
import type { Cards } from "./cards.js"
import { type AlreadyDecided, listed, type PartlyShown, shownInFull, type UnknownCard } from "./cards.js"
import { type Forbidden, type Guard, TooLarge, type Unauthorized } from "./guard.js"
import * as ChatRun from "./chat.js"
import * as DurableChat from "./durableChat.js"
import { chatPage } from "./chatPage.js"
import * as Timeline from "./timeline.js"
import { timelinePage } from "./timelinePage.js"
import { page } from "./page.js"
import type { Decision, Expired, Proposals, Resolution, Taken, Undelivered, WrongKind } from "./proposals.js"
import { isReserved, reservedReason } from "./reservedNames.js"

// Text from people and payloads goes back escaped, so a status line cannot hide or reorder what it says.
const json = (status: number, body: unknown) =>
  HttpServerResponse.jsonUnsafe(body, { status, headers: { "cache-control": "no-store" } })
const say = (message: string) => json(200, { message: Printable.escape(message, { multiline: true }) })

const who = "say who decides: a non-empty \"by\""
const actions = "action must be approve, edit or reject"
const shape = "the body must be a JSON object: { action, payload?, reason? }"

/** `POST .../decision`: what the person decided; an edit's payload, a rejection's reason; `by` in single-user mode. */
const Body = Schema.Struct({
  by: Schema.optional(Schema.Unknown),
  action: Schema.Literals(["approve", "edit", "reject"]).pipe(
    Schema.annotate({ message: actions }),
    Schema.annotateKey({ messageMissingKey: actions })
  ),
  payload: Schema.optional(Schema.Unknown),
  // Trimmed where it is read (`decision`).
  reason: Schema.optional(Schema.String.annotate({ message: "a reason must be text" }))
  // Only for a body that is not an object at all: the fields say their own.
}).annotate({ message: shape })

const resolutions = "action must be mark-done or retry"
const resolutionShape = "the body must be a JSON object: { action, note? }"

/** `POST /api/proposals/:id/in-doubt`: mark an in-doubt delivery done (with a note) or retry it; `by` in single-user mode. */
const ResolutionBody = Schema.Struct({
  by: Schema.optional(Schema.Unknown),
  action: Schema.Literals(["mark-done", "retry"]).pipe(
    Schema.annotate({ message: resolutions }),
    Schema.annotateKey({ messageMissingKey: resolutions })
  ),
  note: Schema.optional(Schema.String.annotate({ message: "a note must be text" }))
}).annotate({ message: resolutionShape })

/** 400: a body that is not UTF-8 JSON, or does not say who decides in single-user mode. */
class BadBody extends Schema.TaggedError<BadBody>()("@graded/confirm/WebConfirm/BadBody", {
  reason: Schema.String
}) {
  override get message(): string {
    return this.reason
  }
}

/** 400: an edit the tool's schema refuses (the card stays open). */
class InvalidEdit extends Schema.TaggedError<InvalidEdit>()("@graded/confirm/WebConfirm/InvalidEdit", {
  reason: Schema.String
}) {
  override get message(): string {
    return this.reason
  }
}

/** Who is calling, as the guard told it: `undefined` in single-user mode. */
class Caller extends Context.Service<Caller, string | undefined>()("@graded/confirm/WebConfirm/Caller") {}

// Read from Node's request directly: stopping a platform stream early would
// destroy the socket, and with it the 413. A refused body is left unread;
// Node discards the rest once the answer is sent.
const bytes = (limit: number) =>
  Effect.flatMap(
    HttpServerRequest.HttpServerRequest,
    (request) =>
      Effect.callback<Buffer, TooLarge | BadBody>((resume) => {
        const source = NodeHttpServerRequest.toIncomingMessage(request)
        // Nothing else reads it; a body already read to its end would never say so again.
        if (source.readableEnded) return resume(Effect.fail(new BadBody({ reason: "the body could not be read" })))
        const chunks: Array<Buffer> = []
        let size = 0
        const stop = () => {
          source.off("data", data).off("end", end).off("error", error)
          source.pause()
        }
        const data = (chunk: Buffer) => {
          size += chunk.length
          if (size <= limit) return void chunks.push(chunk)
          stop()
          resume(Effect.fail(new TooLarge({ limit })))
        }
        const end = () => {
          stop()
          resume(Effect.succeed(Buffer.concat(chunks)))
        }
        const error = () => {
          stop()
          resume(Effect.fail(new BadBody({ reason: "the body could not be read" })))
        }
        source.on("data", data).on("end", end).on("error", error)
        return Effect.sync(stop)
      })
  )

const utf8 = new TextDecoder("utf-8", { fatal: true })

const body = <S extends Schema.Decoder<unknown>>(limit: number, schema: S) =>
  Effect.flatMap(bytes(limit), (raw): Effect.Effect<S["Type"], BadBody | Schema.SchemaError> => {
    let parsed: unknown
    try {
      parsed = JSON.parse(utf8.decode(raw))
    } catch (error) {
      return new BadBody({ reason: error instanceof SyntaxError ? "the body must be JSON" : "the body must be UTF-8" })
    }
    return Schema.decodeUnknownEffect(schema)(parsed)
  })

/** Who decides: the caller the guard named, or in single-user mode the body's `by`. */
const decider = (given: { readonly by?: unknown }) =>
  Effect.flatMap(Caller, (caller) => {
    if (caller !== undefined) return Effect.succeed(caller)
    const claimed = typeof given.by === "string" ? given.by.trim() : ""
    if (claimed === "") return new BadBody({ reason: who })
    if (isReserved(claimed)) return new BadBody({ reason: reservedReason })
    return Effect.succeed(Printable.name(claimed))
  })

const decision = (limit: number) =>
  Effect.gen(function*() {
    const given = yield* body(limit, Body)
    // An edit is the edited payload: without one there is nothing to approve as edited.
    if (given.action === "edit" && given.payload === undefined) {
      return yield* new BadBody({ reason: "an edit needs its payload: the edited value to approve" })
    }
    return {
      by: yield* decider(given),
      action: given.action,
      payload: given.payload,
      reason: given.reason === undefined || given.reason.trim() === "" ? "rejected on the confirm page"
        : given.reason.trim()
    } satisfies Decision
  })

const Id = Schema.Struct({ id: Schema.String })

const decideCard = (cards: Cards, guard: Guard) =>
  Effect.gen(function*() {
    const { id } = yield* HttpRouter.schemaPathParams(Id)
    const card = yield* cards.find(id)
    yield* guard.decision(card.csrf)
    yield* cards.undecided(card)
    const { action, by, payload, reason } = yield* decision(guard.maxBodyBytes)
    if (action !== "reject") yield* shownInFull(card.display)
    switch (action) {
      case "approve":
        yield* cards.settle(card, { by, decision: "approved" }, HumanConfirm.approve(by))
        return say(`Approved by ${by}.`)
      case "edit": {
        // Checked here so the person can fix it; HumanConfirm checks it again.
        yield* Effect.mapError(card.view.check(payload), (problem) =>
          new InvalidEdit({ reason: `the edit is invalid: ${problem}` }))
        yield* cards.settle(card, { by, decision: "edited" }, HumanConfirm.approve(by, payload))
        return say(`Approved with an edit by ${by}.`)
      }
      case "reject":
        yield* cards.settle(card, { by, decision: "rejected" }, HumanConfirm.reject(by, reason))
        return say(`Rejected by ${by}: ${reason}`)
    }
  })

const decideProposal = (proposals: Proposals, guard: Guard) =>
  Effect.gen(function*() {
    const { id } = yield* HttpRouter.schemaPathParams(Id)
    const card = yield* proposals.find(id)
    yield* guard.decision(card.csrf)
    const { message } = yield* proposals.decide(card, yield* decision(guard.maxBodyBytes))
    return say(message)
  })

const resolveProposal = (proposals: Proposals, guard: Guard) =>
  Effect.gen(function*() {
    const { id } = yield* HttpRouter.schemaPathParams(Id)
    const card = yield* proposals.find(id)
    yield* guard.decision(card.csrf)
    const given = yield* body(guard.maxBodyBytes, ResolutionBody)
    const resolution: Resolution = {
      by: yield* decider(given),
      action: given.action,
      note: given.note === undefined || given.note.trim() === "" ? undefined : given.note.trim()
    }
    const { message } = yield* proposals.resolve(card, resolution)
    return say(message)
  })

const list = (cards: Cards, proposals: Proposals | undefined) =>
  Effect.map(
    proposals === undefined ? Effect.succeed([]) : proposals.list,
    (pending) => json(200, { requests: [...cards.pending().map(listed), ...pending] })
  )

/**
 * `GET /api/me`: who the page decides as; in single-user mode, the page asks.
 * With a chat, the value its runs are started with (`chatCsrf`), and whether
 * its runs are durable (`chatDurable`: the page resumes the one it had).
 */
const me = (chat: ChatOptions | undefined) =>
  Effect.map(Caller, (by) =>
    json(200, {
      ...(by === undefined ? { singleUser: true } : { by, singleUser: false }),
      ...(chat === undefined ? {} : { chatCsrf: chat.csrf }),
      ...(chat?._tag === "Durable" ? { chatDurable: true } : {})
    }))

/** A page, under a CSP whose nonce is made for this response. */
const served = (html: (nonce: string) => string) =>
  Effect.sync(() => {
    const nonce = randomBytes(16).toString("base64")
    return HttpServerResponse.html(html(nonce)).pipe(
      HttpServerResponse.setHeaders({
        "content-security-policy":
          `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'nonce-${nonce}'; connect-src 'self'; img-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`,
        "x-content-type-options": "nosniff",
        "referrer-policy": "no-referrer",
        "cache-control": "no-store"
      })
    )
  })

const index = served(page)
const chatIndex = served(chatPage)
const timelineIndex = served(timelinePage)

/** Who is chatting: the caller the guard named, or in single-user mode the body's `by` if it gives one. */
const chatter = (given: { readonly by?: unknown }) =>
  Effect.flatMap(Caller, (caller): Effect.Effect<string | undefined, BadBody> => {
    if (caller !== undefined) return Effect.succeed(caller)
    const claimed = typeof given.by === "string" ? given.by.trim() : ""
    if (claimed === "") return Effect.succeed(undefined)
    if (isReserved(claimed)) return new BadBody({ reason: reservedReason })
    return Effect.succeed(Printable.name(claimed))
  })

const streamed = (body: Stream.Stream<Uint8Array>) =>
  HttpServerResponse.stream(body, {
    contentType: "text/event-stream; charset=utf-8",
    headers: {
      "cache-control": "no-store",
      "x-content-type-options": "nosniff",
      // A proxy that buffers responses (nginx) would hold the tokens back.
      "x-accel-buffering": "no",
      // One run a connection: once the answer ends, so does the connection,
      // rather than idling open past a server that is closing.
      connection: "close"
    }
  })

/**
 * `POST /api/chat`: starts a run for the conversation and answers with its
 * events as they come (`text/event-stream`). Checked like a decision (origin,
 * the chat's CSRF value) before the body is read. A durable chat's run gets a
 * fresh id, told to the page first.
 */
const chat = (
  cards: Cards,
  proposals: Proposals | undefined,
  guard: Guard,
  options: ChatOptions,
  context: Context.Context<never>
) =>
  Effect.gen(function*() {
    yield* guard.decision(options.csrf)
    const given = yield* body(guard.maxBodyBytes, ChatRun.Body)
    const by = yield* chatter(given)
    if (options._tag === "Memory") {
      return streamed(ChatRun.events(cards, options.chat, { messages: given.messages, by }, context))
    }
    return streamed(DurableChat.events({
      chat: options.chat,
      proposals: proposals!,
      first: { _tag: "Start", runId: DurableChat.freshRunId(), messages: given.messages, by },
      history: undefined,
      actor: by,
      context
    }))
  })

/**
 * `POST /api/chat/resume` (a durable chat's): goes on with one of the
 * caller's own chat runs, told from the conversation so far. Checked as a
 * start is; a run that is not theirs is 404, as one that does not exist.
 */
const resumeChat = (
  proposals: Proposals,
  guard: Guard,
  options: ChatOptions & { readonly _tag: "Durable" },
  context: Context.Context<never>
) =>
  Effect.gen(function*() {
    yield* guard.decision(options.csrf)
    const given = yield* body(guard.maxBodyBytes, DurableChat.ResumeBody)
    const by = yield* chatter(given)
    const run = yield* DurableChat.owned(given.runId, yield* Caller).pipe(
      // The server's store: the request's context has none of its own.
      Effect.provideContext(context as Context.Context<RunStore.RunStore>)
    )
    return streamed(DurableChat.events({
      chat: options.chat,
      proposals,
      first: { _tag: "Resume", runId: run.id, by },
      history: DurableChat.historyOf(run),
      actor: by,
      context
    }))
  })

/**
 * The chat, when the server has one: the app's `reply` (in memory, or on its
 * durable stores), and the CSRF value its runs are started with.
 */
export type ChatOptions =
  | { readonly _tag: "Memory"; readonly chat: Chat; readonly csrf: string }
  | { readonly _tag: "Durable"; readonly chat: DurableChatOptions; readonly csrf: string }

const error = (status: number) => (failure: { readonly message: string }) =>
  Effect.succeed(json(status, { error: Printable.escape(failure.message, { multiline: true }) }))

// The first thing a body's schema found wrong, in its own words (the messages above).
const firstIssue = SchemaIssue.makeFormatterStandardSchemaV1()

/** Everything an API call can fail with, each answered below. */
type Failure =
  | Schema.SchemaError
  | BadBody
  | InvalidEdit
  | Undelivered
  | Unauthorized
  | Forbidden
  | UnknownCard
  | ProposalStore.NotFound
  | AlreadyDecided
  | Taken
  | Expired
  | WrongKind
  | TooLarge
  | PartlyShown
  | DurableChat.NotYours

/** Every failure of an API call, as its status and `{ error }`: here for the API's, below for the request check's. */
const answer = <R>(route: Effect.Effect<HttpServerResponse.HttpServerResponse, Failure, R>) =>
  Effect.catchTags(route, {
    SchemaError: (failure) =>
      Effect.succeed(json(400, { error: firstIssue(failure.issue).issues[0]?.message ?? shape })),
    "@graded/confirm/WebConfirm/BadBody": error(400),
    "@graded/confirm/WebConfirm/InvalidEdit": error(400),
    "@graded/confirm/WebConfirm/Undelivered": error(400),
    "@graded/confirm/WebConfirm/Unauthorized": error(401),
    "@graded/confirm/WebConfirm/Forbidden": error(403),
    "@graded/confirm/WebConfirm/UnknownCard": error(404),
    "@graded/core/ProposalStore/NotFound": error(404),
    "@graded/confirm/WebConfirm/AlreadyDecided": (failure) =>
      Effect.succeed(json(409, { error: failure.message, ...failure.decided })),
    "@graded/confirm/WebConfirm/Taken": (failure) =>
      Effect.succeed(json(409, {
        error: Printable.escape(failure.message),
        status: failure.status,
        ...(failure.by === undefined ? {} : { by: Printable.escape(failure.by) })
      })),
    "@graded/confirm/WebConfirm/Expired": error(409),
    "@graded/confirm/WebConfirm/WrongKind": error(409),
    "@graded/confirm/WebConfirm/TooLarge": error(413),
    "@graded/confirm/WebConfirm/PartlyShown": error(422),
    "@graded/confirm/WebConfirm/NotYours": error(404)
  })

/**
 * The whole server: the page at `/`, the API under `/api/`. Every API route
 * asks who is calling first, an unknown one too (401 before 404).
 */
export const make = (options: {
  readonly cards: Cards
  readonly guard: Guard
  readonly proposals: Proposals | undefined
  readonly chat: ChatOptions | undefined
  readonly timeline?: Timeline.TimelineOptions | undefined
}) =>
  Effect.gen(function*() {
    const { cards, chat: chatOptions, guard, proposals } = options
    // What the server was made in: the context a chat run gets, without the request's.
    const context = yield* Effect.context<never>()
    const signedIn = <R>(route: Effect.Effect<HttpServerResponse.HttpServerResponse, Failure, R>) =>
      answer(Effect.flatMap(guard.api, (caller) => Effect.provideService(route, Caller, caller)))
    const routes = [
      HttpRouter.route("GET", "/", index),
      HttpRouter.route("*", "/api/*", signedIn(Effect.succeed(json(404, { error: "no such endpoint" })))),
      HttpRouter.route("GET", "/api/me", signedIn(me(chatOptions))),
      HttpRouter.route("GET", "/api/requests", signedIn(list(cards, proposals))),
      HttpRouter.route("POST", "/api/requests/:id/decision", signedIn(decideCard(cards, guard))),
      ...(proposals === undefined ? [] : [
        HttpRouter.route("POST", "/api/proposals/:id/decision", signedIn(decideProposal(proposals, guard))),
        HttpRouter.route("POST", "/api/proposals/:id/in-doubt", signedIn(resolveProposal(proposals, guard)))
      ]),
      // Only with a chat: without one, /chat is not found and /api/chat is an unknown endpoint.
      ...(chatOptions === undefined ? [] : [
        HttpRouter.route("GET", "/chat", chatIndex),
        HttpRouter.route("POST", "/api/chat", signedIn(chat(cards, proposals, guard, chatOptions, context)))
      ]),
      ...(chatOptions?._tag !== "Durable" || proposals === undefined ? [] : [
        HttpRouter.route("POST", "/api/chat/resume", signedIn(resumeChat(proposals, guard, chatOptions, context)))
      ]),
      // Only with a timeline: the runs page and its one endpoint.
      ...(options.timeline === undefined ? [] : [
        HttpRouter.route("GET", "/runs", timelineIndex),
        HttpRouter.route(
          "GET",
          "/api/runs",
          signedIn(
            Effect.flatMap(
              HttpServerRequest.HttpServerRequest,
              (request) => Timeline.handler(options.timeline!, request)
            )
          )
        )
      ])
    ]
    // A router of its own, not `HttpRouter.toHttpEffect`'s: that builds
    // Effect's `HttpRouter.layer`, whose effect is the same object at every
    // build (Invocation.freshLayer says why that matters). Its routes answer
    // every failure (`answer`): what is left is the router's own, typed as
    // `toHttpEffect` types it.
    const router = yield* HttpRouter.make
    yield* router.addAll(routes)
    const app = router.asHttpEffect() as Effect.Effect<
      HttpServerResponse.HttpServerResponse,
      HttpServerError.HttpServerError,
      HttpServerRequest.HttpServerRequest | Scope.Scope
    >
    return Effect.andThen(guard.request, app).pipe(
      Effect.catchTags({
        HttpServerError: (failure) =>
          failure.reason._tag === "RouteNotFound"
            ? Effect.succeed(json(404, { error: "not found" }))
            : Effect.fail(failure),
        "@graded/confirm/WebConfirm/MisdirectedHost": error(421),
        "@graded/confirm/WebConfirm/BadPath": error(400),
        "@graded/confirm/WebConfirm/TooLarge": error(413)
      })
    )
  })

// Sealed where they are made (Invocation.seal): each is shared by every
// fiber, and a tool's code that finds one must not rewrite it in place.
Invocation.seal(Caller)
Invocation.seal(me)
Invocation.seal(index)
Invocation.seal(chatIndex)
Invocation.seal(timelineIndex)
