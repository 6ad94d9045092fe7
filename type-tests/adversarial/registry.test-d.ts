// registry.invoke with a name the types cannot pin to one tool: a branded
// name, a pattern, a literal no tool has, a wider string, `never`. Each needs
// what every tool needs, so it cannot run without HumanConfirm; a branded
// literal is the tool whose name it refines.
import { Brand, Effect } from "effect"
import { expectError, expectType } from "tsd"
import { HumanConfirm, Registry, Tool, Toolkit } from "@graded/core"
import type { SendCapability, WriteCapability } from "@graded/core"
import { KbSearch, KnowledgeBase, knowledgeBase, support, ui } from "./fixtures.js"

const registry = Registry.make(support)
type Everything = KnowledgeBase | WriteCapability | SendCapability

type ToolName = string & Brand.Brand<"ToolName">
declare const brandedSubmit: "ticket.submit" & Brand.Brand<"ToolName">
declare const brandedSend: "chat.sendMessage" & Brand.Brand<"ToolName">
declare const brandedSearch: "kb.search" & Brand.Brand<"ToolName">
declare const anyBranded: ToolName
declare const domain: string
declare const nothing: never
declare const cond: boolean

// Rejected: a branded write or send name still needs its capability.

// error: Type 'WriteCapability' is not assignable to type 'never'
expectError(Effect.runPromise(registry.invoke(brandedSubmit, { subject: "x" })))

// error: Type 'SendCapability' is not assignable to type 'never'
expectError(Effect.runPromise(registry.invoke(brandedSend, { text: "x" })))

// Rejected: a pattern may be any tool's name.

// error: Type 'WriteCapability | SendCapability | KnowledgeBase' is not assignable to type 'never'
expectError(Effect.runPromise(registry.invoke(`${domain}.submit`, { subject: "x" })))

// error: Type 'WriteCapability | SendCapability | KnowledgeBase' is not assignable to type 'never'
expectError(Effect.runPromise(registry.invoke(`chat.${domain}`, { text: "x" })))

// Rejected: a literal that is no name of the toolkit.

// error: Type 'WriteCapability | SendCapability | KnowledgeBase' is not assignable to type 'never'
expectError(Effect.runPromise(registry.invoke("ticket.nope", {})))

// Rejected: a branded string, and a name of type never.

// error: Type 'WriteCapability | SendCapability | KnowledgeBase' is not assignable to type 'never'
expectError(Effect.runPromise(registry.invoke(anyBranded, {})))

// error: Type 'WriteCapability | SendCapability | KnowledgeBase' is not assignable to type 'never'
expectError(Effect.runPromise(registry.invoke(nothing, {})))

// Rejected: a union with one name the toolkit does not have.

// error: Type 'WriteCapability | SendCapability | KnowledgeBase' is not assignable to type 'never'
expectError(Effect.runPromise(registry.invoke(cond ? "kb.search" : "chat.send", {})))

// Rejected: HumanConfirm does not cover the services of a name the types cannot see.

// error: Type 'KnowledgeBase' is not assignable to type 'never'
expectError(Effect.runPromise(Effect.provide(registry.invoke(`${domain}.search`, {}), HumanConfirm.layer(ui))))

// Accepted: the requirements, exactly.
expectType<Effect.Effect<Registry.ToolResult, never, KnowledgeBase>>(registry.invoke(brandedSearch, {}))
expectType<Effect.Effect<Registry.ToolResult, never, WriteCapability>>(registry.invoke(brandedSubmit, {}))
expectType<Effect.Effect<Registry.ToolResult, never, Everything>>(registry.invoke(`${domain}.submit`, {}))
expectType<Effect.Effect<Registry.ToolResult, never, Everything>>(registry.invoke("ticket.nope", {}))
expectType<Effect.Effect<Registry.ToolResult, never, Everything>>(registry.invoke(nothing, {}))
expectType<Effect.Effect<Registry.ToolResult, never, KnowledgeBase | WriteCapability>>(
  registry.invoke(cond ? "kb.search" : "ticket.submit", {})
)

// Accepted: a read with its service provided runs; so does anything with both.
expectType<Promise<Registry.ToolResult>>(
  Effect.runPromise(Effect.provide(registry.invoke("kb.search", {}), knowledgeBase))
)
expectType<Promise<Registry.ToolResult>>(
  Effect.runPromise(Effect.provide(registry.invoke(`${domain}.x`, {}), [HumanConfirm.layer(ui), knowledgeBase]))
)

// A tool named by a pattern may be the tool a literal names: both count.
declare const AnySearch: Tool.Tool<`${string}.search`, "write", {}, string, never, never>
const patterned = Registry.make(Toolkit.make(KbSearch, AnySearch))
expectType<Effect.Effect<Registry.ToolResult, never, KnowledgeBase | WriteCapability>>(
  patterned.invoke("kb.search", {})
)
