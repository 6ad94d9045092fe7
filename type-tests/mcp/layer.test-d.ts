import { Effect, Layer, Schema } from "effect"
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

const reads = Registry.make(Toolkit.make(KbSearch))
const desk = Registry.make(Toolkit.make(KbSearch, SubmitTicket))

// Accepted: a read-only toolkit's layers need nothing; the HTTP one provides its address and may fail to listen.
expectType<Layer.Layer<never, never, never>>(McpServe.layerStdio(reads))
expectType<Layer.Layer<McpServe.Address, McpServe.ListenError, never>>(McpServe.layerHttp(reads))
expectType<Effect.Effect<McpServe.Address, McpServe.ListenError>>(
  Effect.provide(McpServe.Address, McpServe.layerHttp(reads))
)

// Accepted: with a write, the layers require a ProposalStore, never a WriteCapability.
expectType<Layer.Layer<never, never, ProposalStore.ProposalStore>>(McpServe.layerStdio(desk))
expectType<Layer.Layer<McpServe.Address, McpServe.ListenError, never>>(
  McpServe.layerHttp(desk).pipe(Layer.provide(ProposalStore.memory))
)

// Rejected: launching a layer that serves a write with no store to record its proposals.

// error: Type 'ProposalStore' is not assignable to type 'never'
expectError(Effect.runPromise(Layer.launch(McpServe.layerStdio(desk))))
