import { Effect, Schema } from "effect"
import { Agent, HumanConfirm, ScriptedModel, Tool, Toolkit } from "@graded/core"

// read: nothing to undo, nobody outside sees it. A model may call it.
const KbSearch = Tool.read("kb.search", {
  title: "Search the knowledge base",
  description: "Find articles that answer a customer's question. Use before answering.",
  input: Schema.Struct({ query: Schema.String }),
  output: Schema.Array(Schema.Struct({ title: Schema.String })),
  run: ({ query }) => Effect.succeed([{ title: `Changing the VAT number (${query})` }])
})

// write: changes local state; invoke requires WriteCapability.
const SubmitTicket = Tool.write("ticket.submit", {
  title: "Submit a ticket",
  description: "File a support ticket.",
  input: Schema.Struct({ subject: Schema.String }),
  output: Schema.Struct({ id: Schema.String }),
  run: () => Effect.succeed({ id: "T-1201" })
})

// send: the customer sees it at once and it cannot be undone. prepare builds
// the payload; deliver runs only with a payload a human confirmed.
const SendReply = Tool.send("chat.sendMessage", {
  title: "Send a chat message",
  description: "Send a message to the customer.",
  input: Schema.Struct({ text: Schema.String }),
  payload: Schema.Struct({ to: Schema.String, text: Schema.String }),
  output: Schema.Struct({ sent: Schema.Boolean }),
  prepare: ({ text }) => Effect.succeed({ to: "customer:42", text }),
  deliver: (confirmed) => Effect.log(`sending ${confirmed.payload.text}`).pipe(Effect.as({ sent: true }))
})

const support = Toolkit.make(KbSearch, SubmitTicket, SendReply)

// The agent gets the read tools only. `Agent.run({ toolkit: support, ... })`
// does not compile: ticket.submit (write) needs WriteCapability;
// chat.sendMessage (send) needs SendCapability.
const answer = Agent.run({ toolkit: Toolkit.readOnly(support), prompt: "How do I fix my VAT number?" }).pipe(
  Effect.provide(ScriptedModel.layer([
    ScriptedModel.calls(ScriptedModel.call("kb.search", { query: "VAT number" })),
    ScriptedModel.text("See 'Changing the VAT number'.")
  ]))
)

// A human sends the reply: HumanConfirm is the only way to satisfy
// SendCapability, and this scripted UI approves on Alice's behalf.
const reply = SendReply.invoke({ text: "Billing > Settings > Tax ID." }).pipe(
  Effect.provide(HumanConfirm.layer(HumanConfirm.scripted([HumanConfirm.approve("agent:alice")])))
)

Effect.runPromise(Effect.zip(answer, reply)).then(([result, sent]) => console.log(result.answer, sent))
