// Grade honesty against requirements too wide to rule a capability out: `{}`,
// `unknown`, `object`, `any`, a supertype of one capability, and a type
// parameter. Each is caught where the tool is defined, and again by Agent.run
// for a tool typed by hand.
import { Effect, Schema } from "effect"
import { expectError, expectType } from "tsd"
import { Agent, LanguageModel, Tool, Toolkit, ToolError } from "@graded/core"
import type { HumanTrigger, SendCapability, WriteCapability } from "@graded/core"
import { Anything, Delivered, KnowledgeBase, Payload, Query, SomeObject, Whatever } from "./fixtures.js"

declare const wide: Effect.Effect<string, never, {}>
declare const unknowing: Effect.Effect<string, never, unknown>

// Rejected: a read tool whose run is annotated to need `{}`.

// error: kb.top is a read tool, but its run needs WriteCapability and SendCapability and HumanTrigger: grade it Tool.write or Tool.send
expectError(Tool.read("kb.top", {
  title: "t",
  description: "d",
  input: Query,
  output: Schema.String,
  run: (): Effect.Effect<string, never, {}> => Effect.succeed("x")
}))

// Rejected: a read tool whose run needs `unknown`.

// error: kb.unknown is a read tool, but its run needs WriteCapability and SendCapability and HumanTrigger
expectError(
  Tool.read("kb.unknown", { title: "t", description: "d", input: Query, output: Schema.String, run: () => unknowing })
)

// Rejected: a read tool whose run needs `object`.

// error: kb.object is a read tool, but its run needs WriteCapability and SendCapability and HumanTrigger
expectError(Tool.read("kb.object", {
  title: "t",
  description: "d",
  input: Query,
  output: Schema.String,
  run: (): Effect.Effect<string, never, object> => Effect.succeed("x")
}))

// Rejected: `any`, reached without writing it: the return type of JSON.parse.

// error: kb.parsed is a read tool, but its run needs WriteCapability and SendCapability and HumanTrigger
expectError(Tool.read("kb.parsed", {
  title: "t",
  description: "d",
  input: Query,
  output: Schema.String,
  run: (): Effect.Effect<string, never, ReturnType<typeof JSON.parse>> => Effect.succeed("x")
}))

// Rejected: an ordinary service next to `{}` does not hide it.

// error: kb.mixed is a read tool, but its run needs WriteCapability and SendCapability and HumanTrigger
expectError(Tool.read("kb.mixed", {
  title: "t",
  description: "d",
  input: Query,
  output: Schema.String,
  run: (): Effect.Effect<string, never, KnowledgeBase | {}> => Effect.succeed("x")
}))

// Rejected: a supertype of one capability names that capability only.

// error: kb.partial is a read tool, but its run needs WriteCapability: grade it Tool.write or Tool.send
expectError(Tool.read("kb.partial", {
  title: "t",
  description: "d",
  input: Query,
  output: Schema.String,
  run: (): Effect.Effect<string, never, Partial<WriteCapability>> => Effect.succeed("x")
}))

// error: kb.partialTrigger is a read tool, but its run needs HumanTrigger: grade it Tool.write or Tool.send
expectError(Tool.read("kb.partialTrigger", {
  title: "t",
  description: "d",
  input: Query,
  output: Schema.String,
  run: (): Effect.Effect<string, never, Partial<HumanTrigger>> => Effect.succeed("x")
}))

// Rejected: a service tag whose identifier is `{}` or `unknown`, yielded in run.

// error: kb.anything is a read tool, but its run needs WriteCapability and SendCapability and HumanTrigger
expectError(
  Tool.read("kb.anything", { title: "t", description: "d", input: Query, output: Schema.String, run: () => Anything })
)

// error: kb.whatever is a read tool, but its run needs WriteCapability and SendCapability and HumanTrigger
expectError(
  Tool.read("kb.whatever", { title: "t", description: "d", input: Query, output: Schema.String, run: () => Whatever })
)

// error: kb.someObject is a read tool, but its run needs WriteCapability and SendCapability and HumanTrigger
expectError(
  Tool.read("kb.someObject", {
    title: "t",
    description: "d",
    input: Query,
    output: Schema.String,
    run: () => SomeObject
  })
)

// Rejected: a write tool whose run needs `{}` or `unknown` may need SendCapability.

// error: ticket.wide is a write tool, but its run needs SendCapability: grade it Tool.send
expectError(
  Tool.write("ticket.wide", { title: "t", description: "d", input: Query, output: Schema.String, run: () => wide })
)

// error: ticket.unknown is a write tool, but its run needs SendCapability: grade it Tool.send
expectError(
  Tool.write("ticket.unknown", {
    title: "t",
    description: "d",
    input: Query,
    output: Schema.String,
    run: () => unknowing
  })
)

// Rejected: a send tool whose prepare needs `{}`, `unknown` or a supertype of SendCapability.

// error: chat.wide is a send tool, but its prepare needs WriteCapability and SendCapability: prepare only builds the payload
expectError(Tool.send("chat.wide", {
  title: "t",
  description: "d",
  input: Query,
  payload: Payload,
  output: Delivered,
  prepare: ({ query }) => Effect.as(wide, { to: "c", text: query }),
  deliver: () => Effect.succeed({ delivered: true })
}))

// error: chat.unknown is a send tool, but its prepare needs WriteCapability and SendCapability: prepare only builds the payload
expectError(Tool.send("chat.unknown", {
  title: "t",
  description: "d",
  input: Query,
  payload: Payload,
  output: Delivered,
  prepare: ({ query }) => Effect.as(unknowing, { to: "c", text: query }),
  deliver: () => Effect.succeed({ delivered: true })
}))

// error: chat.partial is a send tool, but its prepare needs SendCapability: prepare only builds the payload
expectError(Tool.send("chat.partial", {
  title: "t",
  description: "d",
  input: Query,
  payload: Payload,
  output: Delivered,
  prepare: ({ query }): Effect.Effect<{ to: string; text: string }, never, Partial<SendCapability>> =>
    Effect.succeed({ to: "c", text: query }),
  deliver: () => Effect.succeed({ delivered: true })
}))

// Rejected: a tool defined inside a generic function. The requirement is a
// type parameter that could be any capability; the message is still a sentence.

export const searchWith = <R>(search: Effect.Effect<string, never, R>) => {
  // error: kb.generic is a read tool, but its run needs a type parameter that could hold WriteCapability and SendCapability and HumanTrigger: name the services it needs instead
  expectError(
    Tool.read("kb.generic", { title: "t", description: "d", input: Query, output: Schema.String, run: () => search })
  )
}

export const fileWith = <R extends KnowledgeBase>(file: Effect.Effect<string, never, R>) => {
  // error: ticket.generic is a write tool, but its run needs a type parameter that could hold SendCapability: name the services it needs instead
  expectError(
    Tool.write("ticket.generic", { title: "t", description: "d", input: Query, output: Schema.String, run: () => file })
  )
}

// Rejected: the same requirements on tools typed by hand reach Agent.run.

declare const handTop: Tool.Tool<"kb.top", "read", { readonly query: string }, string, never, {}>
declare const handUnknown: Tool.Tool<"kb.unknown", "read", { readonly query: string }, string, never, unknown>
declare const handPartial: Tool.Tool<
  "kb.partial",
  "read",
  { readonly query: string },
  string,
  never,
  Partial<SendCapability>
>
declare const handWrite: Tool.Tool<"kb.write", "read", { readonly query: string }, string, never, WriteCapability>

// error: Agent.run takes read tools only: kb.top (read) needs WriteCapability and SendCapability and HumanTrigger. Pass
expectError(Agent.run({ toolkit: Toolkit.make(handTop), prompt: "?" }))

// error: Agent.run takes read tools only: kb.unknown (read) needs WriteCapability and SendCapability and HumanTrigger. Pass
expectError(Agent.run({ toolkit: Toolkit.make(handUnknown), prompt: "?" }))

// error: Agent.run takes read tools only: kb.partial (read) needs SendCapability. Pass
expectError(Agent.run({ toolkit: Toolkit.make(handPartial), prompt: "?" }))

// error: Agent.run takes read tools only: kb.top (read) needs WriteCapability and SendCapability and HumanTrigger; kb.write (read) needs WriteCapability. Pass
expectError(Agent.run({ toolkit: Toolkit.make(handTop, handWrite), prompt: "?" }))

// Accepted: a read tool that needs an ordinary service, and one that needs nothing.
const Search = Tool.read("kb.lookup", {
  title: "t",
  description: "d",
  input: Query,
  output: Schema.Array(Schema.String),
  run: ({ query }) => KnowledgeBase.use((kb) => kb.search(query))
})
expectType<Effect.Effect<ReadonlyArray<string>, ToolError.ToolError<never>, KnowledgeBase>>(
  Search.invoke({ query: "x" })
)
const Ping = Tool.read("net.ping", {
  title: "t",
  description: "d",
  input: Query,
  output: Schema.String,
  run: () => Effect.succeed("pong")
})
expectType<
  Effect.Effect<
    Agent.Result<readonly [typeof Search, typeof Ping]>,
    Agent.AgentError,
    LanguageModel.LanguageModel | KnowledgeBase
  >
>(
  Agent.run({ toolkit: Toolkit.make(Search, Ping), prompt: "?" })
)

// Accepted: a write tool may need HumanTrigger, and a send tool's deliver may need anything.
declare const started: Effect.Effect<string, never, HumanTrigger>
const Escalate = Tool.write("ticket.escalate", {
  title: "t",
  description: "d",
  input: Query,
  output: Schema.String,
  run: () => started
})
expectType<Effect.Effect<string, ToolError.ToolError<never>, HumanTrigger | WriteCapability>>(
  Escalate.invoke({ query: "x" })
)
const Loud = Tool.send("chat.loud", {
  title: "t",
  description: "d",
  input: Query,
  payload: Payload,
  output: Delivered,
  prepare: ({ query }) => Effect.succeed({ to: "c", text: query }),
  deliver: () => Effect.as(wide, { delivered: true })
})
expectType<"send">(Loud.grade)

// Accepted: a generic function whose requirement is fixed where the tool is made.
const searchKb = (search: Effect.Effect<string, never, KnowledgeBase>) =>
  Tool.read("kb.fixed", { title: "t", description: "d", input: Query, output: Schema.String, run: () => search })
expectType<"read">(searchKb(Effect.succeed("x")).grade)
