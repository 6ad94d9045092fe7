// The demo: an agent answers a question with read tools only; then a human
// sends the reply, which goes out only after they confirm it; a second send
// is rejected. Every step is printed as it happens, from the audit trail.
import { Effect, Layer } from "effect"
import { Agent, Audit, HumanConfirm, Invocation, LanguageModel, Plan, ScriptedModel, Toolkit } from "@graded/core"
import * as Desk from "./desk.js"
import { QuickTicket } from "./quickTicket.js"
import { desk, SendMessage } from "./tools.js"

const question = "Has this customer reported a similar problem before?"

// What the model would do, scripted so the demo needs no API key. In round 3
// it reaches for ticket.submit, a tool it was never shown.
export const script: ReadonlyArray<ScriptedModel.Turn> = [
  ScriptedModel.calls(ScriptedModel.call("conversation.current", {})),
  ScriptedModel.calls(
    ScriptedModel.call("customer.lookup", { customerId: "c-42" }),
    ScriptedModel.call("kb.search", { query: "VAT number invoice" })
  ),
  ScriptedModel.calls(
    ScriptedModel.call("ticket.submit", { subject: "VAT number wrong again", body: "Reopen T-1031" })
  ),
  ScriptedModel.text(
    "Yes. Mei Lin reported the same problem in T-1031 (\"Invoice shows the wrong VAT number\"), " +
      "fixed then by correcting the billing settings. Article kb-7 explains how to change the VAT number, " +
      "and kb-9 how to reissue the invoice."
  )
]

const show = (value: unknown) => JSON.stringify(value)

export interface Options {
  readonly log: (line: string) => void
  /** The model; the scripted one when absent. */
  readonly model?: Layer.Layer<LanguageModel.LanguageModel> | undefined
  /** Which model is in use, for the first line. */
  readonly modelName?: string | undefined
}

export const run = (options: Options) => {
  const { log } = options
  const outbox: Desk.Outbox = { tickets: [], messages: [], form: undefined }
  const audit = Audit.layer((entry) =>
    Effect.sync(() => log(`  ${entry.autonomous ? "[agent]" : "[human]"} ${Audit.describe(entry)}`))
  )
  return Effect.gen(function*() {
    log(`Model: ${options.modelName ?? "scripted (no API key needed)"}`)
    log("")
    log(`1. Alice asks the agent: "${question}"`)
    log("   The agent gets Toolkit.readOnly(desk): the compiler rejects the full desk here.")
    const result = yield* Agent.run({
      toolkit: Toolkit.readOnly(desk),
      system: "You help support agents. Use the tools to check facts before answering.",
      prompt: question,
      context: { actor: "agent:alice", page: "conversation" }
    }).pipe(Effect.provide(options.model ?? ScriptedModel.layer(script)))
    log(`   The agent (${result.stopped}, ${result.rounds} rounds): ${result.answer ?? "(no answer)"}`)

    log("")
    log("2. Alice clicks Send on a reply. A human confirms the exact payload first.")
    const human = HumanConfirm.scripted([
      (view) => {
        log(`   Confirm card: ${view.title} (${view.grade}) to ${show(view.payload)}`)
        return HumanConfirm.approve("agent:alice")
      },
      (view) => {
        log(`   Confirm card: ${view.title} (${view.grade}) to ${show(view.payload)}`)
        return HumanConfirm.reject("agent:alice", "already answered; do not message the customer twice")
      }
    ])
    const asAlice = Invocation.within({ actor: "agent:alice", page: "conversation" })
    const confirm = HumanConfirm.layer(human)
    const sent = yield* SendMessage.invoke({
      text: "Hi Mei, sorry about this: the VAT number comes from Billing > Settings > Tax ID. " +
        "I have corrected it and reissued your invoice."
    }).pipe(asAlice, Effect.provide(confirm))
    log(`   Result: ${show(sent)}`)

    log("")
    log("3. Alice clicks Send again by mistake. This time she rejects it.")
    const second = yield* SendMessage.invoke({ text: "Hi Mei, following up on your invoice." }).pipe(
      asAlice,
      Effect.provide(confirm),
      Effect.result
    )
    if (second._tag === "Failure") log(`   Denied: ${second.failure.message}`)

    log("")
    log("4. Alice presses the quick-ticket shortcut: a fixed flow she started, which may write.")
    const ticket = yield* Plan.run(QuickTicket, {}).pipe(
      Effect.provide(HumanConfirm.trigger({ by: "agent:alice", via: "shortcut" })),
      Effect.provide(
        options.model ?? ScriptedModel.layer([ScriptedModel.text("Invoice shows the old VAT number again")])
      )
    )
    log(`   Filed ${ticket.id} with the form ${show(outbox.form)}`)

    log("")
    log(`Messages that reached the customer: ${outbox.messages.length}`)
    for (const message of outbox.messages) log(`  to ${message.to}: ${message.text}`)
    log(`Tickets filed: ${outbox.tickets.length}`)
    return { result, outbox, second, ticket }
  }).pipe(Effect.provide(Layer.merge(Desk.layer(outbox), audit)))
}
