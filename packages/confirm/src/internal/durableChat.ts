// A durable chat's server side: the app's run on its own stores, told to the
// page as chat.ts tells an in-memory one (`project`, `sse`). The page hears
// the run's id first (`run`), and, resuming, the conversation so far
// (`history`). Each write or send of the run is a proposal of the store,
// told as its card (`card`, as the confirm page lists it) after its
// `pending`. When the run stops waiting, the stream does not end: it watches
// the store for the waiting turn's proposals, tells each decision as it is
// made, wherever (`card-decided`, with who decided), and once none is open it
// resumes the run (`reply` with `Resume`) in the same answer. Closing the
// page interrupts the run where it is (core saves it waiting and lets it go)
// or the watch (which holds nothing). Which runs a person may resume is
// `owned`: a chat's own id (`chat-` and 32 hex digits), and, where people
// sign in, a run whose actor is them; any other id is told "no such chat
// run", the same for a run that exists as for one that does not.
// Imported by internal/api.ts only.
import { Clock, type Context, Effect, Queue, Schema, Stream } from "effect"
import { type Agent, Invocation, Proposal, type ProposalStore, RunStore, type Runs } from "@graded/core"
import { randomBytes } from "node:crypto"
import type { ChatMessage, DurableChat, DurableChatRequest } from "../WebConfirm.js"
import { maxContent, project, sse, stopped, type Told } from "./chat.js"
import type { Proposals } from "./proposals.js"

/** How often a waiting chat reads its proposals from the store. */
export const watchEvery = "250 millis"

const chatRunId = /^chat-[0-9a-f]{32}$/

/** A fresh run id for a chat's new message. */
export const freshRunId = (): string => `chat-${randomBytes(16).toString("hex")}`

const resumeShape = "the body must be a JSON object: { runId }"
const runIdText = "runId must be the chat run's id, as the page was told it"

/** `POST /api/chat/resume`: the run to go on with; `by` in single-user mode. */
export const ResumeBody = Schema.Struct({
  by: Schema.optional(Schema.Unknown),
  runId: Schema.String.pipe(
    Schema.annotate({ message: runIdText }),
    Schema.annotateKey({ messageMissingKey: runIdText })
  )
}).annotate({ message: resumeShape })

/** 404: not a chat run of this person's (or no run at all: the answer is the same). */
export class NotYours extends Schema.TaggedError<NotYours>()("@graded/confirm/WebConfirm/NotYours", {}) {
  override get message(): string {
    return "no such chat run"
  }
}

/**
 * The stored run `runId`, if it is a chat's and, where people sign in
 * (`caller`), theirs. In single-user mode one person holds the page's token:
 * every chat run of the store is theirs.
 */
export const owned = (runId: string, caller: string | undefined) =>
  Effect.gen(function*() {
    if (!chatRunId.test(runId)) return yield* new NotYours()
    const runs = yield* RunStore.RunStore
    const run = yield* Effect.catchTag(runs.get(runId), "@graded/core/RunStore/RunNotFound", () => new NotYours())
    if (caller !== undefined && run.actor !== caller) return yield* new NotYours()
    return run
  })

/** A stored run's conversation as the page shows it: the person's messages and the agent's text. */
export const historyOf = (run: RunStore.Run): ReadonlyArray<ChatMessage> =>
  run.state.messages.flatMap((message): ReadonlyArray<ChatMessage> =>
    message.role === "user"
      ? [{ role: "user", content: message.content.slice(0, maxContent) }]
      : message.role === "assistant" && message.content !== undefined && message.content !== ""
      ? [{ role: "assistant", content: message.content.slice(0, maxContent) }]
      : []
  )

/** A proposal's decision as the page says it, with who decided. */
const decision = (proposal: Proposal.Proposal): string => {
  const by = proposal.decision?.by ?? "someone"
  switch (proposal.status) {
    case "delivered":
      return `Approved by ${by}: done.`
    case "rejected":
      return `Rejected by ${by}${proposal.decision?.reason === undefined ? "" : `: ${proposal.decision.reason}`}.`
    case "failed":
      return `Approved by ${by}; it failed.`
    case "expired":
      return "Expired: nobody decided it in time."
    case "in-doubt":
      return `Approved by ${by}; its delivery is in doubt: see the confirm page.`
    default:
      return `Approved by ${by}.`
  }
}

const iso = (millis: number) => new Date(millis).toISOString()

/**
 * The durable run for `first`, told as SSE lines, run in `context` (the
 * server's, with its stores) as `actor`. `history` is told first when given
 * (a resume).
 */
export const events = (options: {
  readonly chat: DurableChat
  readonly proposals: Proposals
  readonly first: DurableChatRequest
  readonly history: ReadonlyArray<ChatMessage> | undefined
  readonly actor: string | undefined
  readonly context: Context.Context<never>
}): Stream.Stream<Uint8Array> => {
  const { actor, chat, first, history, proposals } = options
  const told = Stream.callback<Told>((queue) => {
    const tell = (event: Told) => Effect.asVoid(Queue.offer(queue, event))
    // Each proposal's card is told once, and each decision once.
    const carded = new Set<string>()
    const settled = new Set<string>()
    const card = (proposal: Proposal.Proposal) =>
      Effect.suspend(() => {
        if (carded.has(proposal.id)) return Effect.void
        const listed = proposals.card(proposal)
        if (listed === undefined) return Effect.void
        carded.add(proposal.id)
        return tell({ type: "card", card: listed })
      })
    const decided = (proposal: Proposal.Proposal) =>
      Effect.suspend(() => {
        if (settled.has(proposal.id)) return Effect.void
        settled.add(proposal.id)
        return tell({ type: "card-decided", id: proposal.id, message: decision(proposal) })
      })
    // One pass of the app's run: its events told, its outcome kept.
    const pass = (request: DurableChatRequest) =>
      Effect.gen(function*() {
        let outcome: Runs.Outcome<any> | undefined
        yield* Stream.runForEach(
          Stream.suspend(() => chat.durable.reply(request)),
          (event: Agent.Event<any> | Runs.End<any>) => {
            if (event?.type === "end") {
              if ("outcome" in event) outcome = event.outcome
              return Effect.void
            }
            const projected = project(event)
            if (projected === undefined) return Effect.void
            if (event.type === "pending") return Effect.andThen(tell(projected), card(event.proposal))
            if (event.type === "decided") return Effect.andThen(tell(projected), decided(event.proposal))
            return tell(projected)
          }
        )
        return outcome
      })
    // Until no proposal of the waiting turn is open: each read from the
    // store, its decision told as soon as it is seen; a pending one past its
    // expiry counts as decided (the resume settles it).
    const watch = (waiting: ReadonlyArray<Proposal.Proposal>) =>
      Effect.gen(function*() {
        for (;;) {
          const now = iso(yield* Clock.currentTimeMillis)
          let open = 0
          for (const { id } of waiting) {
            const proposal = yield* Effect.orDie(Proposal.get(id))
            const lapsed = proposal.status === "pending" && proposal.expiresAt !== undefined &&
              proposal.expiresAt <= now
            if (proposal.status !== "pending") yield* decided(proposal)
            if (Proposal.isOpen(proposal.status) && !lapsed) open++
          }
          if (open === 0) return
          yield* Effect.sleep(watchEvery)
        }
      })
    const run: Effect.Effect<void, unknown, ProposalStore.ProposalStore | RunStore.RunStore> = Effect.gen(function*() {
      yield* tell({ type: "run", runId: first.runId })
      if (history !== undefined) yield* tell({ type: "history", messages: history })
      let request = first
      for (;;) {
        const outcome = yield* pass(request)
        if (outcome === undefined) {
          return yield* tell({ type: "error", message: "the run ended without saying how far it got" })
        }
        if (outcome.status === "finished") {
          return yield* tell({ type: "end", answer: outcome.result.answer, stopped: outcome.result.stopped })
        }
        if (outcome.status === "cancelled") {
          return yield* tell({ type: "end", answer: undefined, stopped: "cancelled" })
        }
        // A resumed run that still waits tells no `pending` again: its cards are told here.
        yield* Effect.forEach(outcome.pending, (proposal) =>
          carded.has(proposal.id) ? Effect.void : Effect.andThen(
            tell({ type: "pending", tool: proposal.tool }),
            card(proposal)
          ), { discard: true })
        yield* watch(outcome.pending)
        request = { _tag: "Resume", runId: first.runId, by: first.by }
      }
    })
    return run.pipe(
      Effect.catchCause(stopped(tell)),
      Effect.andThen(Queue.end(queue)),
      // As the person chatting: the run's actor, whom `owned` checks.
      (self) => actor === undefined ? self : Invocation.within({ actor })(self),
      // The server's context, not the request's (chat.ts says why).
      Effect.updateContext(() => options.context as Context.Context<ProposalStore.ProposalStore | RunStore.RunStore>)
    )
  }, { bufferSize: 64, strategy: "suspend" })
  return sse(told)
}
