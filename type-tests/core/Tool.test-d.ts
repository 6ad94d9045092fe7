import { Data, Effect, Schema } from "effect"
import { expectError, expectType } from "tsd"
import {
  HumanConfirm,
  type HumanTrigger,
  type SendCapability,
  Tool,
  ToolError,
  type WriteCapability
} from "@graded/core"

// What a UI entry point's code sees: the human who started the work. The
// HumanTrigger tag is internal, so tools reach it through code like this.
declare const startedBy: Effect.Effect<string, never, HumanTrigger>
import { KbSearch, KnowledgeBase, Payload, SendReply, SubmitTicket } from "./fixtures.js"

const Query = Schema.Struct({ query: Schema.String })
const Delivered = Schema.Struct({ delivered: Schema.Boolean })

// Rejected: a read tool whose run calls a send tool's invoke.

// error: kb.leaky is a read tool, but its run needs SendCapability: grade it Tool.write or Tool.send
expectError(Tool.read("kb.leaky", {
  title: "t",
  description: "d",
  input: Query,
  output: Delivered,
  run: ({ query }) => SendReply.invoke({ text: query })
}))

// Rejected: a read tool whose run calls a write tool's invoke.

// error: kb.sneaky is a read tool, but its run needs WriteCapability: grade it Tool.write or Tool.send
expectError(Tool.read("kb.sneaky", {
  title: "t",
  description: "d",
  input: Query,
  output: Schema.Struct({ id: Schema.String }),
  run: ({ query }) => SubmitTicket.invoke({ subject: query })
}))

// Rejected: a read tool that needs HumanTrigger.

// error: kb.triggered is a read tool, but its run needs HumanTrigger
expectError(Tool.read("kb.triggered", {
  title: "t",
  description: "d",
  input: Query,
  output: Schema.String,
  run: () => startedBy
}))

// Rejected: both at once are named together.

// error: kb.both is a read tool, but its run needs WriteCapability and SendCapability
expectError(Tool.read("kb.both", {
  title: "t",
  description: "d",
  input: Query,
  output: Schema.String,
  run: ({ query }) =>
    Effect.andThen(SubmitTicket.invoke({ subject: query }), SendReply.invoke({ text: query })).pipe(Effect.as("x"))
}))

// Rejected: a write tool whose run needs SendCapability.

// error: ticket.notify is a write tool, but its run needs SendCapability: grade it Tool.send
expectError(Tool.write("ticket.notify", {
  title: "t",
  description: "d",
  input: Query,
  output: Delivered,
  run: ({ query }) => SendReply.invoke({ text: query })
}))

// Rejected: a send tool whose prepare needs WriteCapability or SendCapability.

// error: chat.eager is a send tool, but its prepare needs WriteCapability: prepare only builds the payload
expectError(Tool.send("chat.eager", {
  title: "t",
  description: "d",
  input: Query,
  payload: Payload,
  output: Delivered,
  prepare: ({ query }) => Effect.as(SubmitTicket.invoke({ subject: query }), { to: "c", text: query }),
  deliver: () => Effect.succeed({ delivered: true })
}))

// error: chat.double is a send tool, but its prepare needs SendCapability: prepare only builds the payload
expectError(Tool.send("chat.double", {
  title: "t",
  description: "d",
  input: Query,
  payload: Payload,
  output: Delivered,
  prepare: ({ query }) => Effect.as(SendReply.invoke({ text: query }), { to: "c", text: query }),
  deliver: () => Effect.succeed({ delivered: true })
}))

// Rejected: a hand-made Confirmed<P> passed to deliver.

// error: Property 'madeByHumanConfirmOnly' is missing
expectError(
  SendReply.deliver({
    tool: "chat.sendMessage",
    payload: { to: "c", text: "x" },
    by: "me",
    edited: false,
    idempotencyKey: "k-1"
  })
)

// Rejected: running a send with no HumanConfirm in scope.

// error: Type 'SendCapability' is not assignable to type 'never'
expectError(Effect.runPromise(SendReply.invoke({ text: "Hi" })))

// error: Type 'WriteCapability' is not assignable to type 'never'
expectError(Effect.runPromise(SubmitTicket.invoke({ subject: "Hi" })))

// Rejected: a name that breaks the wire mapping, where the tool is defined.

// error: Tool name 'kb..search' is invalid
expectError(
  Tool.read("kb..search", {
    title: "t",
    description: "d",
    input: Query,
    output: Schema.String,
    run: () => Effect.succeed("x")
  })
)

// Accepted: invoke's requirements by grade; ordinary services stay in R.
expectType<Effect.Effect<ReadonlyArray<string>, ToolError.ToolError<never>, KnowledgeBase>>(
  KbSearch.invoke({ query: "invoice" })
)
expectType<Effect.Effect<{ readonly id: string }, ToolError.ToolError<never>, WriteCapability>>(
  SubmitTicket.invoke({ subject: "Refund" })
)
expectType<Effect.Effect<{ readonly delivered: boolean }, ToolError.ToolError<never>, SendCapability>>(
  SendReply.invoke({ text: "Hi" })
)

// Accepted: a send with HumanConfirm.layer provided runs with R = never.
const confirmed = SendReply.invoke({ text: "Hi" }).pipe(
  Effect.provide(HumanConfirm.layer(HumanConfirm.scripted([HumanConfirm.approve("agent:alice")])))
)
expectType<Effect.Effect<{ readonly delivered: boolean }, ToolError.ToolError<never>, never>>(confirmed)
expectType<Promise<{ readonly delivered: boolean }>>(Effect.runPromise(confirmed))

// Accepted: a write tool may need HumanTrigger, and a send's deliver may write.
const started = Tool.write("ticket.escalate", {
  title: "t",
  description: "d",
  input: Query,
  output: Schema.String,
  run: () => startedBy
})
expectType<Effect.Effect<string, ToolError.ToolError<never>, HumanTrigger | WriteCapability>>(
  started.invoke({ query: "x" })
)

// The extractors.
expectType<"kb.search">(KbSearch.name)
expectType<"send">(SendReply.grade)
expectType<Tool.Grade<typeof SubmitTicket>>("write")
declare const sendCapability: SendCapability
expectType<Tool.Requirements<typeof SendReply>>(sendCapability)

// Accepted: a name built from a pattern is checked where the tool is made.
declare const domain: string
expectType<`${string}.search`>(
  Tool.read(`${domain}.search`, {
    title: "t",
    description: "d",
    input: Query,
    output: Schema.String,
    run: () => Effect.succeed("x")
  }).name
)

// failureMessages are keyed by the tool's declared failures: a key that names
// none of them (a typo) would never be shown, and does not compile.
class CustomerNotFound extends Data.TaggedError("CustomerNotFound")<{}> {}
const lookup = (): Effect.Effect<{ readonly name: string }, CustomerNotFound> => Effect.fail(new CustomerNotFound())

// error: 'CustomerNotFund' does not exist in type 'FailureMessages<CustomerNotFound>'. Did you mean to write 'CustomerNotFound'?
expectError(Tool.read("crm.lookup", {
  title: "Look up a customer",
  description: "Find a customer.",
  input: Schema.Struct({ id: Schema.String }),
  output: Schema.Struct({ name: Schema.String }),
  failureMessages: { CustomerNotFund: "No customer has that id." },
  run: lookup
}))

// The same with the failures read off a run written in place, after the keys.

// error: 'Unknown' does not exist in type 'FailureMessages<CustomerNotFound>'
expectError(Tool.write("crm.rename", {
  title: "Rename a customer",
  description: "Rename a customer.",
  input: Schema.Struct({ id: Schema.String }),
  output: Schema.Struct({ name: Schema.String }),
  failureMessages: { Unknown: "No customer has that id." },
  run: ({ id }) => id === "" ? Effect.fail(new CustomerNotFound()) : Effect.succeed({ name: id })
}))

// A key for each declared failure compiles, and so does leaving one out.
Tool.read("crm.lookup", {
  title: "Look up a customer",
  description: "Find a customer.",
  input: Schema.Struct({ id: Schema.String }),
  output: Schema.Struct({ name: Schema.String }),
  failureMessages: { CustomerNotFound: "No customer has that id." },
  run: lookup
})
