// The support desk as a chat: run `pnpm demo:chat` and open the chat link it
// prints for you (PORT picks the port). Ask the agent about Mei's invoice: it
// searches the knowledge base, drafts a message to Mei mid-answer, and the
// draft waits in the conversation as a card until you approve, edit or reject
// it; then the answer goes on. Each person on the team gets a token of their
// own, so a card is decided as who signed in. The same cards show on the
// confirm page (the link in the chat's header), and a card decided there shows
// decided in the chat. Close the page mid-answer and open the link again: the
// run was kept, and the conversation goes on where it was. With OPENAI_API_KEY set the
// agent is that model (model.ts); without it, the scripted one below, streamed
// a few characters at a time as a provider streams. Ctrl-C stops it.
import { Cause, Effect, Exit, Fiber, Layer, Stream } from "effect"
import { Audit, LanguageModel, ProposalStore, RunStore, Runs, ScriptedModel } from "@graded/core"
import { WebConfirm } from "@graded/confirm"
import * as Desk from "./desk.js"
import { fromEnv } from "./model.js"
import { desk } from "./tools.js"
import { randomBytes } from "node:crypto"

/** The message the scripted agent drafts for Mei. */
export const draft = "Hi Mei, sorry about that: the VAT number on invoices comes from Billing > Settings > Tax ID. " +
  "Once it is corrected there, open the invoice and choose Reissue, and you will get the corrected PDF."

const { call, calls, text } = ScriptedModel

// The last tool result the model was shown: what came of its call.
const lastResult = (request: LanguageModel.Request) => {
  const last = request.messages.at(-1)
  return last?.role === "tool" ? last.content : ""
}

/**
 * What the model would do, scripted so the demo needs no API key: it looks
 * the question up, drafts the reply to the customer, and answers once the
 * person decided it. Each turn is read from the conversation since the
 * person's last message, so a run resumed after the page closed gets the
 * turn it was on. It knows this one story: a later message in the same
 * conversation is told so.
 */
export const turn = (request: LanguageModel.Request): LanguageModel.Response => {
  const since = request.messages.map((message) => message.role).lastIndexOf("user")
  const results = request.messages.slice(since + 1).filter((message) => message.role === "tool").length
  if (results === 0) {
    return request.messages.filter((message) => message.role === "user").length > 1
      ? text("(The scripted agent knows one story. Set OPENAI_API_KEY to talk to a real model.)")
      : { ...calls(call("kb.search", { query: "VAT number invoice" })), text: "Let me check the help centre first." }
  }
  if (results === 1) {
    return {
      ...calls(call("chat.sendMessage", { text: draft })),
      text: " Article kb-7 covers this: the VAT number is set in the billing settings, and kb-9 explains " +
        "how to reissue the invoice. I have drafted a reply to Mei; it waits for your decision:"
    }
  }
  return text(
    lastResult(request).includes("\"sent\":true")
      ? "The reply is on its way to Mei. If the next invoice still shows the old number, we should file a ticket."
      : "I did not send anything to Mei. Tell me what to change, and I will draft it again."
  )
}

/** The script: the same turn, read from the conversation each time (a run takes at most four). */
export const script: ReadonlyArray<ScriptedModel.Turn> = Array.from({ length: 4 }, () => turn)

/** The scripted model, its parts `millis` apart: tokens arrive as a provider's do. */
export const paced = (turns: ReadonlyArray<ScriptedModel.Turn>, millis: number) =>
  Layer.effect(
    LanguageModel.LanguageModel,
    Effect.map(Effect.service(LanguageModel.LanguageModel), (model) => ({
      generate: model.generate,
      stream: (request: LanguageModel.Request) =>
        model.stream!(request).pipe(Stream.mapEffect((part) => Effect.as(Effect.sleep(millis), part)))
    }))
  ).pipe(Layer.provide(ScriptedModel.layer(turns, { chunk: 3 })))

const model = fromEnv(process.env)
const outbox = Desk.empty()
const audit = Audit.layer((entry) =>
  Effect.sync(() => console.log(`  [${entry.autonomous ? "agent" : "human"}] ${Audit.describe(entry)}`))
)

// The chat's agent: the whole desk, supervised, on the app's stores (here
// in memory; in production @graded/sql's). Reads run at once; the ticket and
// the message wait as proposals, cards of the chat's server. A page closed
// mid-answer leaves its run stored: reopened, the chat goes on with it.
const services = Layer.mergeAll(model.layer ?? paced(script, 15), Desk.layer(outbox))
const chat: WebConfirm.DurableChat = {
  durable: {
    reply: (request) =>
      (request._tag === "Start"
        ? Runs.startStream({
          toolkit: desk,
          runId: request.runId,
          system: "You help support agents answer customers. Search the knowledge base before answering; " +
            "send the customer a message with chat.sendMessage when the agent asks for a reply.",
          messages: WebConfirm.toMessages(request.messages),
          context: { page: "chat" }
        })
        : Runs.resumeStream(request.runId, { toolkit: desk })).pipe(Stream.provide(services))
  }
}
const stores = Layer.mergeAll(RunStore.memory, ProposalStore.memory, Desk.layer(outbox), audit)

// One token per person: in an app, your sign-in (`authenticate`) takes this place.
const team = ["alice", "bob"]
const tokens = new Map(team.map((person) => [person, randomBytes(24).toString("hex")]))
const users = Object.fromEntries([...tokens].map(([person, token]) => [token, person]))

const program = Effect.gen(function*() {
  const { server } = yield* WebConfirm.make({
    users,
    port: Number(process.env.PORT ?? 0),
    proposals: { toolkit: desk },
    chat
  }).pipe(Effect.provide(stores))
  console.log(`Model: ${model.name}`)
  for (const [person, token] of tokens) console.log(`Chat for ${person}: ${server.chatLink!(token)}`)
  console.log("Ask about Mei's invoice. Ctrl-C stops the server.")
  return yield* Effect.never
}).pipe(Effect.scoped)

const fiber = Effect.runFork(program)
const stop = () => Effect.runFork(Fiber.interrupt(fiber))
process.once("SIGINT", stop)
process.once("SIGTERM", stop)
fiber.addObserver((exit) => {
  if (Exit.isSuccess(exit) || Cause.hasInterruptsOnly(exit.cause)) {
    console.log(`Stopped. Messages that reached the customer: ${outbox.messages.length}`)
    process.exit(0)
  }
  console.error("The demo failed:", Cause.pretty(exit.cause))
  process.exit(1)
})
