// Tools and toolkits of type `never`, tools whose grade is `never` (or no
// single grade), and toolkits intersected with `Object.assign`: none of them
// reaches Agent.run, and Toolkit.make refuses the ones it is handed.
import { Effect } from "effect"
import { expectError, expectType } from "tsd"
import { Agent, LanguageModel, Tool, Toolkit, type WriteCapability } from "@graded/core"
import { CurrentConversation, KbSearch, KnowledgeBase, SubmitTicket, support } from "./fixtures.js"

// A write tool copied with its grade overwritten: its type is `never`.
const Disguised = Object.assign({}, SubmitTicket, { grade: "read" as const })
// Two read tools merged into one: `never` as well.
const Merged = Object.assign({}, KbSearch, CurrentConversation)
// Tools typed by hand with no single grade.
declare const Graceless: Tool.Tool<
  "ticket.submit",
  never,
  { readonly subject: string },
  { readonly id: string },
  never,
  never
>
declare const Either: Tool.Tool<"kb.either", "read" | "write", { readonly query: string }, string, never, never>
declare const cond: boolean

// Rejected in Toolkit.make: a tool of type never, wherever it stands.

// error: The tool at index 0 has type never: make each tool with Tool.read, Tool.write or Tool.send
expectError(Toolkit.make(Disguised))

// error: The tool at index 1 has type never: make each tool with Tool.read, Tool.write or Tool.send
expectError(Toolkit.make(KbSearch, Disguised))

// error: The tool at index 2 has type never
expectError(Toolkit.make(KbSearch, CurrentConversation, Merged))

// Rejected in Toolkit.make: a tool whose grade is never.

// error: ticket.submit has no single grade (its grade is never): make each tool with Tool.read, Tool.write or Tool.send
expectError(Toolkit.make(KbSearch, Graceless))

// Rejected in Agent.run: the same tools in toolkits typed by hand.

declare const disguisedKit: Toolkit.Toolkit<readonly [typeof KbSearch, never]>

// error: Agent.run takes read tools only: the tool at index 1 has type never. Pass
expectError(Agent.run({ toolkit: disguisedKit, prompt: "?" }))

// error: Agent.run takes read tools only: ticket.submit has no single grade (its grade is never). Pass
expectError(Agent.run({ toolkit: Toolkit.make(Graceless), prompt: "?" }))

// error: Agent.run takes read tools only: kb.either has no single grade (its grade is read | write). Pass
expectError(Agent.run({ toolkit: Toolkit.make(KbSearch, Either), prompt: "?" }))

// Rejected: readOnly keeps a tool whose grade is never (it is assignable to
// any grade); the loop still refuses it.

// error: Agent.run takes read tools only: ticket.submit has no single grade (its grade is never)
expectError(Agent.run({ toolkit: Toolkit.readOnly(Toolkit.make(KbSearch, Graceless)), prompt: "?" }))

// Rejected: two toolkits merged with Object.assign. Each place of the tools
// is the intersection of two tools, so `Tools[number]` alone says nothing.

// error: Agent.run takes read tools only: the tool at index 0 has type never. Pass
expectError(Agent.run({ toolkit: Object.assign(Toolkit.make(KbSearch), Toolkit.make(SubmitTicket)), prompt: "?" }))

// error: Agent.run takes read tools only: the tool at index 0 has type never. Pass
expectError(Agent.run({ toolkit: Object.assign(Toolkit.make(SubmitTicket), Toolkit.make(KbSearch)), prompt: "?" }))

// error: Agent.run takes read tools only: the toolkit's tools have type never. Pass
expectError(
  Agent.run({
    toolkit: Object.assign(Toolkit.make(KbSearch, CurrentConversation), Toolkit.make(SubmitTicket)),
    prompt: "?"
  })
)

// error: Agent.run takes read tools only: ticket.submit (write) needs WriteCapability. Pass
expectError(Agent.run({ toolkit: Object.assign(Toolkit.readOnly(support), Toolkit.make(SubmitTicket)), prompt: "?" }))

// error: Agent.run takes read tools only: ticket.submit (write) needs WriteCapability. Pass
expectError(
  Agent.run({
    toolkit: Object.assign(
      Toolkit.readOnly(support),
      Toolkit.readOnly(Toolkit.make(KbSearch)),
      Toolkit.make(SubmitTicket)
    ),
    prompt: "?"
  })
)

// Rejected: a toolkit chosen at run time is checked for each choice.

// error: Agent.run takes read tools only: ticket.submit (write) needs WriteCapability. Pass
expectError(Agent.run({ toolkit: cond ? Toolkit.make(KbSearch) : Toolkit.make(SubmitTicket), prompt: "?" }))

// error: Agent.run takes read tools only: ticket.submit (write) needs WriteCapability. Pass
expectError(
  Agent.run({ toolkit: cond ? Toolkit.make(KbSearch) : Toolkit.make(CurrentConversation, SubmitTicket), prompt: "?" })
)

// Rejected: a tool chosen at run time, in one place of the toolkit.

// error: Agent.run takes read tools only: ticket.submit (write) needs WriteCapability. Pass
expectError(Agent.run({ toolkit: Toolkit.make(cond ? KbSearch : SubmitTicket), prompt: "?" }))

// Accepted (edge cases): an empty toolkit, the read-only view of a toolkit
// without read tools (a list of `never`, not a tuple), and a toolkit chosen at
// run time between two read-only ones.
expectType<Effect.Effect<Agent.Result<readonly []>, Agent.AgentError, LanguageModel.LanguageModel>>(
  Agent.run({ toolkit: Toolkit.make(), prompt: "?" })
)
expectType<Effect.Effect<Agent.Result<ReadonlyArray<never>>, Agent.AgentError, LanguageModel.LanguageModel>>(
  Agent.run({ toolkit: Toolkit.readOnly(Toolkit.make(SubmitTicket)), prompt: "?" })
)
// eslint-disable-next-line @typescript-eslint/no-unused-vars -- a value only to take its type from
const either = Agent.run({ toolkit: cond ? Toolkit.make(KbSearch) : Toolkit.make(CurrentConversation), prompt: "?" })
declare const requirements: Effect.Services<typeof either>
expectType<LanguageModel.LanguageModel | KnowledgeBase>(requirements)

// A toolkit widened to any tools: the compiler knows neither names nor grades,
// and says so rather than printing a template.
declare const widened: Toolkit.Toolkit<ReadonlyArray<Tool.Any>>

// error: Agent.run takes read tools only: a tool typed as Tool.Any (name and grade unknown to the compiler). Pass Toolkit.readOnly(toolkit)
expectError(Agent.run({ toolkit: widened, prompt: "?" }))

// A read tool whose invoke is swapped with Object.assign: the copy keeps the
// grade "read", and its invoke becomes two signatures, the swapped one last.
// The loop reads the requirements off the last one (the one a call resolves
// to last), through the shortcut for plain read tools as through the full check.
declare const writes: (input: { readonly query: string }) => Effect.Effect<string, never, WriteCapability>
const Swapped = Object.assign({}, KbSearch, { invoke: writes })

// error: Agent.run takes read tools only: kb.search (read) needs WriteCapability. Pass
expectError(Agent.run({ toolkit: Toolkit.readOnly(Toolkit.make(CurrentConversation, Swapped)), prompt: "?" }))

declare const swappedList: Toolkit.Toolkit<ReadonlyArray<typeof Swapped | typeof CurrentConversation>>

// error: Agent.run takes read tools only: kb.search (read) needs WriteCapability. Pass
expectError(Agent.run({ toolkit: swappedList, prompt: "?" }))
