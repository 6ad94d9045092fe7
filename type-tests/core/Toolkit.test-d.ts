import { Effect, Schema } from "effect"
import { expectError, expectType } from "tsd"
import { Tool, Toolkit, type WriteCapability } from "@graded/core"
import { CurrentConversation, KbSearch, KnowledgeBase, SendReply, SubmitTicket, support } from "./fixtures.js"

// Rejected: two tools of one name.

// error: Tool name 'kb.search' is used by more than one tool in this toolkit
expectError(Toolkit.make(KbSearch, SubmitTicket, KbSearch))

const Another = Tool.read("ticket.submit", {
  title: "t",
  description: "d",
  input: Schema.Struct({}),
  output: Schema.String,
  run: () => Effect.succeed("x")
})

// error: Tool name 'ticket.submit' is used by more than one tool in this toolkit
expectError(Toolkit.make(SubmitTicket, Another))

// Rejected: names that break the wire mapping. Tool.read refuses them where
// they are written; a toolkit refuses them when they arrive some other way.
declare const doubleDot: Tool.Tool<"kb..search", "read", {}, string, never, never>
declare const doubleUnderscore: Tool.Tool<"a__b", "read", {}, string, never, never>
declare const underscoreDot: Tool.Tool<"a_.b", "read", {}, string, never, never>
declare const tooLong: Tool.Tool<
  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.bbbbbbbbbbbbbbbbbbbbbbb",
  "read",
  {},
  string,
  never,
  never
>

// error: Tool name 'kb..search' is invalid
expectError(Toolkit.make(KbSearch, doubleDot))

// error: Tool name 'a__b' is invalid
expectError(Toolkit.make(doubleUnderscore))

// error: Tool name 'a_.b' is invalid
expectError(Toolkit.make(underscoreDot, KbSearch))

// error: its wire form must fit in 64 characters
expectError(Toolkit.make(tooLong))

// error: Tool name 'a__b' is invalid
expectError(
  Tool.read("a__b", {
    title: "t",
    description: "d",
    input: Schema.Struct({}),
    output: Schema.String,
    run: () => Effect.succeed("x")
  })
)

// error: Tool name 'a_.b' is invalid
expectError(
  Tool.write("a_.b", {
    title: "t",
    description: "d",
    input: Schema.Struct({}),
    output: Schema.String,
    run: () => Effect.succeed("x")
  })
)

// Accepted: readOnly keeps the read tools, as a type and a value (a list, not
// a tuple: filtering a tuple costs the compiler the square of its length).
const readOnly = Toolkit.readOnly(support)
expectType<Toolkit.Toolkit<ReadonlyArray<typeof KbSearch | typeof CurrentConversation>>>(readOnly)
expectType<Toolkit.Toolkit<ReadonlyArray<never>>>(Toolkit.readOnly(Toolkit.make(SubmitTicket, SendReply)))

// Requirements: ordinary services and the grades' capabilities.
expectType<Toolkit.Requirements<typeof readOnly>>(KnowledgeBase as unknown as KnowledgeBase)
declare const requirements: Toolkit.Requirements<ReturnType<typeof Toolkit.make<readonly [typeof SubmitTicket]>>>
expectType<WriteCapability>(requirements)
