import { Effect, Schema } from "effect"
import { expectError, expectType } from "tsd"
import { ProposalStore, Registry, Tool, Toolkit } from "@graded/core"
import { McpServe } from "@graded/mcp"

const KbSearch = Tool.read("kb.search", {
  title: "Search",
  description: "Finds articles.",
  input: Schema.Struct({ query: Schema.String }),
  output: Schema.Struct({ hits: Schema.Array(Schema.String) }),
  run: () => Effect.succeed({ hits: [] })
})
const SubmitTicket = Tool.write("ticket.submit", {
  title: "Submit a ticket",
  description: "File a ticket.",
  input: Schema.Struct({ subject: Schema.String }),
  output: Schema.String,
  run: () => Effect.succeed("T-1")
})
const SendReply = Tool.send("chat.sendMessage", {
  title: "Reply",
  description: "Send a message.",
  input: Schema.Struct({ text: Schema.String }),
  payload: Schema.Struct({ text: Schema.String }),
  output: Schema.Boolean,
  prepare: (input) => Effect.succeed(input),
  deliver: () => Effect.succeed(true)
})

// Accepted: a read-only toolkit is served with nothing more.
expectType<Effect.Effect<void, never, never>>(McpServe.stdio(Registry.make(Toolkit.make(KbSearch))))

// Accepted: writes and sends are served where a ProposalStore records what clients ask for,
// and never need a WriteCapability or SendCapability.
const desk = Registry.make(Toolkit.make(KbSearch, SubmitTicket, SendReply))
expectType<Effect.Effect<void, never, never>>(McpServe.stdio(desk).pipe(Effect.provide(ProposalStore.memory)))

// Rejected: a write served with no store to record its proposals.

// error: Type 'ProposalStore' is not assignable to type 'never'
expectError(Effect.runPromise(McpServe.stdio(Registry.make(Toolkit.make(KbSearch, SubmitTicket)))))

// Rejected: a send likewise.

// error: Type 'ProposalStore' is not assignable to type 'never'
expectError(Effect.runPromise(McpServe.stdio(Registry.make(Toolkit.make(SendReply)))))
