// The chat's server side: what `POST /api/chat` takes (a conversation,
// decoded with Schema), and what it answers: the app's run (`chat.reply`)
// told to the page as Server-Sent Events, one `data: <json>` line each,
// projected for the browser (text, calls, refusals, cards, decisions, the
// end, or an error). The run's writes and sends are asked through a
// HumanConfirm over this server's own cards, made for this run: each card it
// opens is told to its page (`card`) as the confirm page lists it, and is
// decided on the confirm page's route with the card's own CSRF value; once
// decided, wherever, the page is told who decided (`card-decided`). Ending
// the response (the page closed, the connection cut) interrupts the run, and
// a card it left waiting is removed (cards.ask). The run runs in the
// server's context, never the request's (whose headers hold the person's
// token and the chat's CSRF value), so no tool's code can read them. A failed run is told as its
// message, escaped; a defect as a fixed sentence (the cause is logged here,
// never sent).
// Imported by internal/api.ts and internal/durableChat.ts (what both tell, and how).
import { Cause, type Context, Effect, Option, Queue, Schema, Stream } from "effect"
import { type Agent, HumanConfirm, Printable } from "@graded/core"
import type { Chat, ChatMessage, ChatRequest } from "../WebConfirm.js"
import { type Card, type Cards, listed, type Listed } from "./cards.js"

/** The most messages a conversation sends, and the most characters of one. */
export const maxMessages = 100
export const maxContent = 20_000

const roles = "each message's role must be user or assistant"
const content = "each message's content must be text"
const message = "each message must be an object: { role, content }"
const messages = `messages must be a list of 1 to ${maxMessages} messages`
const shape = "the body must be a JSON object: { messages: [{ role, content }, ...] }"

const Message = Schema.Struct({
  role: Schema.Literals(["user", "assistant"]).pipe(
    Schema.annotate({ message: roles }),
    Schema.annotateKey({ messageMissingKey: roles })
  ),
  content: Schema.String.pipe(
    Schema.annotate({ message: content }),
    Schema.annotateKey({ messageMissingKey: content })
  ).check(Schema.makeFilter((text: string) =>
    text.length <= maxContent ||
    `a message's content must be at most ${maxContent.toLocaleString("en-US")} characters, got ${
      text.length.toLocaleString("en-US")
    }`
  ))
}).annotate({ message })

/** `POST /api/chat`: the conversation so far, the person's message last; `by` in single-user mode. */
export const Body = Schema.Struct({
  by: Schema.optional(Schema.Unknown),
  messages: Schema.Array(Message).pipe(
    Schema.annotate({ message: messages }),
    Schema.annotateKey({ messageMissingKey: messages })
  ).check(
    Schema.makeFilter((list: ReadonlyArray<unknown>) =>
      (list.length >= 1 && list.length <= maxMessages) || `${messages}, got ${list.length}`
    ),
    Schema.makeFilter((list: ReadonlyArray<{ readonly role: string }>) =>
      list.length === 0 || list[list.length - 1]!.role === "user" ||
      "the last message must be the user's: the run answers it"
    )
  )
}).annotate({ message: shape })

/** What the page is told, one event a `data:` line. */
export type Told =
  | { readonly type: "text"; readonly delta: string }
  | { readonly type: "call-start"; readonly id: string; readonly tool: string }
  | {
    readonly type: "call"
    readonly id: string
    readonly tool: string
    readonly ok: boolean
    readonly code?: string
    readonly message?: string
  }
  | { readonly type: "refused"; readonly tool: string; readonly gate: string; readonly reason: string }
  | { readonly type: "card"; readonly card: Listed }
  | { readonly type: "pending"; readonly tool: string }
  | { readonly type: "decided"; readonly tool: string; readonly status: string; readonly by: string | undefined }
  | { readonly type: "card-decided"; readonly id: string; readonly message: string }
  | { readonly type: "run"; readonly runId: string }
  | { readonly type: "history"; readonly messages: ReadonlyArray<ChatMessage> }
  | { readonly type: "end"; readonly answer: string | undefined; readonly stopped: string }
  | { readonly type: "error"; readonly message: string }

// The app's events as the page needs them: no round, no call's argument
// pieces (the card shows the payload), no proposal beyond its tool, status
// and decider. An event of no known type (an app's own) is left out.
export const project = (event: Agent.Event<any> | Agent.End<any>): Told | undefined => {
  switch (event?.type) {
    case "text-delta":
      return { type: "text", delta: event.delta }
    case "call-start":
      return { type: "call-start", id: event.id, tool: event.tool }
    case "call": {
      const call = event.call
      return call.ok
        ? { type: "call", id: call.id, tool: call.tool, ok: true }
        : {
          type: "call",
          id: call.id,
          tool: call.tool,
          ok: false,
          code: call.error.code,
          message: call.error.message
        }
    }
    case "refused":
      return { type: "refused", tool: event.tool, gate: event.gate, reason: event.reason }
    case "pending":
      return { type: "pending", tool: event.proposal.tool }
    case "decided":
      return {
        type: "decided",
        tool: event.proposal.tool,
        status: event.proposal.status,
        by: event.proposal.decision?.by
      }
    case "end":
      return { type: "end", answer: event.result.answer, stopped: event.result.stopped }
    default:
      return undefined
  }
}

const unexpected = "the run stopped with an unexpected error"

// A failure's own message, escaped; anything else a fixed sentence.
export const failed = (cause: Cause.Cause<unknown>): string => {
  const error = Cause.findErrorOption(cause)
  if (Option.isSome(error)) {
    const text = typeof error.value === "object" && error.value !== null && "message" in error.value
      ? (error.value as { readonly message: unknown }).message
      : undefined
    return typeof text === "string" && text !== ""
      ? Printable.escape(`the run failed: ${text}`, { multiline: true })
      : "the run failed"
  }
  return unexpected
}

/** A comment line, every so often while a card waits: a proxy that cuts idle connections sees bytes. */
const keepAlive = ": keep-alive\n\n"

/**
 * How a run's stop is told: an interruption (the page went away) is not told
 * at all; a failure or a defect is an `error` event (a defect logged here).
 */
export const stopped = (tell: (event: Told) => Effect.Effect<void>) => (cause: Cause.Cause<unknown>) =>
  Cause.hasInterruptsOnly(cause) ? Effect.failCause(cause as Cause.Cause<never>) : Effect.andThen(
    Cause.hasFails(cause) ? Effect.void : Effect.logError("WebConfirm chat: the run died", cause),
    tell({ type: "error", message: failed(cause) })
  )

/** What is told, as the response's body: one `data:` line an event, and a keep-alive comment every 15 seconds. */
export const sse = (told: Stream.Stream<Told>): Stream.Stream<Uint8Array> =>
  told.pipe(
    Stream.map((event) => `data: ${JSON.stringify(event)}\n\n`),
    Stream.merge(Stream.map(Stream.tick("15 seconds"), () => keepAlive), { haltStrategy: "left" }),
    Stream.encodeText
  )

/** A live card's decision as its page says it, with who decided (the decision routes' own words). */
const decidedMessage = (card: Card): string => {
  const record = card.decided
  switch (record?.decision) {
    case "approved":
      return `Approved by ${record.by}.`
    case "edited":
      return `Approved with an edit by ${record.by}.`
    case "rejected":
      return `Rejected by ${record.by}.`
    case "timed out":
      return "Timed out: nobody decided it in time."
    case "closed":
      return "The confirm server closed."
    default:
      return "Decided."
  }
}

/**
 * The run for `request`, told as SSE lines, run in `context` (the server's).
 * Its writes and sends are cards of this server; each is told (`card`) after
 * its `pending` event.
 */
export const events = (
  cards: Cards,
  chat: Chat,
  request: ChatRequest,
  context: Context.Context<never>
): Stream.Stream<Uint8Array> => {
  const told = Stream.callback<Told>((queue) => {
    const tell = (event: Told) => Effect.asVoid(Queue.offer(queue, event))
    // A card opens while the run's events before it may still be on their
    // way (the run does not wait for the page to read them), so each card is
    // told after the `pending` event of its proposal: the nth card after the
    // nth pending. Every card of a supervised run is a pending proposal's (a
    // write a rule approves is pending with no card, which only lets the
    // next card through sooner), so none is held for good.
    let pendings = 0
    let shown = 0
    const held: Array<Listed> = []
    const release = Effect.suspend(() => {
      const ready: Array<Listed> = []
      while (held.length > 0 && shown < pendings) {
        ready.push(held.shift()!)
        shown++
      }
      return Effect.forEach(ready, (card) => tell({ type: "card", card }), { discard: true })
    })
    // Once a card is decided (here or on the confirm page), the page is told
    // who decided, so the card it drew stops offering a decision.
    const ui: HumanConfirm.UI = {
      confirm: (view) => {
        let opened: Card | undefined
        return cards.ask(view, (card) =>
          Effect.suspend(() => {
            opened = card
            held.push(listed(card))
            return release
          })).pipe(
            Effect.tap(() =>
              opened === undefined ? Effect.void
                : tell({ type: "card-decided", id: opened.id, message: decidedMessage(opened) })
            )
          )
      }
    }
    return Stream.suspend(() => chat.reply(request)).pipe(
      Stream.provide(HumanConfirm.layer(ui)),
      Stream.runForEach((event) => {
        const projected = project(event)
        if (projected === undefined) return Effect.void
        if (projected.type !== "pending") return tell(projected)
        return Effect.andThen(
          tell(projected),
          Effect.suspend(() => {
            pendings++
            return release
          })
        )
      }),
      Effect.catchCause(stopped(tell)),
      Effect.andThen(Queue.end(queue)),
      // The run's context is the server's, not the request's: a tool's code
      // can read any service in its context, and the request carries the
      // person's token and the chat's CSRF value.
      Effect.updateContext(() => context)
    )
  }, { bufferSize: 64, strategy: "suspend" })
  return sse(told)
}
