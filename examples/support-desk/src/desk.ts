// The support desk's own systems, in memory: the conversation on screen,
// customers and their past tickets, the knowledge base, the ticket queue and
// the chat channel. Each is an Effect service, as it would be in an app.
import { Context, Effect, Layer } from "effect"
import * as fs from "node:fs"

export interface Customer {
  readonly id: string
  readonly name: string
  readonly plan: string
  readonly email: string
  readonly pastTickets: ReadonlyArray<{ readonly id: string; readonly subject: string; readonly resolution: string }>
}

export interface Article {
  readonly id: string
  readonly title: string
  readonly body: string
  readonly internalNotes: string
}

export class Desk extends Context.Service<Desk, {
  readonly conversation: Effect.Effect<{ readonly customerId: string; readonly messages: ReadonlyArray<string> }>
  readonly customer: (id: string) => Effect.Effect<Customer | undefined>
  readonly searchArticles: (query: string) => Effect.Effect<ReadonlyArray<Article>>
  readonly fileTicket: (subject: string, body: string) => Effect.Effect<string>
  /** Posts once per idempotency key, as a chat API that honours an `Idempotency-Key` header does. */
  readonly postMessage: (message: Message) => Effect.Effect<void>
  readonly openForm: Effect.Effect<void>
  readonly fillForm: (fields: Readonly<Record<string, string>>) => Effect.Effect<Readonly<Record<string, string>>>
}>()("support-desk/Desk") {}

/** A chat message and the key its sender gave it. */
export interface Message {
  readonly to: string
  readonly text: string
  readonly idempotencyKey: string
}

export interface Outbox {
  readonly tickets: Array<{ readonly id: string; readonly subject: string }>
  /** The ticket form on screen: undefined while closed. */
  form: Record<string, string> | undefined
  readonly messages: Array<Message>
}

/** An empty outbox: no tickets, no messages, the form closed. */
export const empty = (): Outbox => ({ tickets: [], messages: [], form: undefined })

const customers: ReadonlyArray<Customer> = [{
  id: "c-42",
  name: "Mei Lin",
  plan: "Business",
  email: "mei.lin@example.com",
  pastTickets: [
    { id: "T-1031", subject: "Invoice shows the wrong VAT number", resolution: "Corrected in billing settings" },
    { id: "T-1107", subject: "Password reset email never arrives", resolution: "Mail filter; whitelisted sender" }
  ]
}]

const articles: ReadonlyArray<Article> = [
  {
    id: "kb-7",
    title: "Changing the VAT number on invoices",
    body: "Billing > Settings > Tax ID. New invoices use the new number; past invoices can be reissued.",
    internalNotes: "Reissue needs finance approval"
  },
  {
    id: "kb-9",
    title: "Reissuing an invoice",
    body: "Open the invoice and choose Reissue. The customer receives the corrected PDF.",
    internalNotes: "none"
  }
]

// The customer's chat as a file: an outside system that outlives the app's
// processes. One JSON line per message; a key it holds already is not posted again.
export const readChat = (file: string): ReadonlyArray<Message> =>
  fs.existsSync(file)
    ? fs.readFileSync(file, "utf8").split("\n").filter((line) => line !== "").map((line) => JSON.parse(line) as Message)
    : []

const post = (outbox: Outbox, chatFile: string | undefined, message: Message) => {
  const seen = chatFile === undefined ? outbox.messages : readChat(chatFile)
  if (seen.some((m) => m.idempotencyKey === message.idempotencyKey)) return
  if (chatFile !== undefined) fs.appendFileSync(chatFile, `${JSON.stringify(message)}\n`)
  outbox.messages.push(message)
}

/** The desk in memory; with `chatFile`, messages to the customer go to that file, which outlives the process. */
export const layer = (outbox: Outbox, options?: { readonly chatFile?: string | undefined }): Layer.Layer<Desk> =>
  Layer.succeed(Desk, {
    conversation: Effect.succeed({
      customerId: "c-42",
      messages: ["Mei Lin: Hi, my latest invoice has our old VAT number on it again. Can you fix it?"]
    }),
    customer: (id) => Effect.succeed(customers.find((customer) => customer.id === id)),
    searchArticles: (query) =>
      Effect.succeed(
        articles.filter((article) =>
          query.toLowerCase().split(/\s+/).some((word) =>
            `${article.title} ${article.body}`.toLowerCase().includes(word)
          )
        )
      ),
    fileTicket: (subject) =>
      Effect.sync(() => {
        const id = `T-${1200 + outbox.tickets.length}`
        outbox.tickets.push({ id, subject })
        return id
      }),
    postMessage: (message) => Effect.sync(() => post(outbox, options?.chatFile, message)),
    openForm: Effect.sync(() => void (outbox.form = {})),
    fillForm: (fields) => Effect.sync(() => (outbox.form = { ...outbox.form, ...fields }))
  })
