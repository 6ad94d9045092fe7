// The debug bridge's layer must provide every service the tools and plans
// need, each by its own tag. Layer is contravariant in what it provides, so
// without the check a layer typed `{}` or `unknown` stood in for HumanConfirm.
import { Context, Effect, Layer, Schema } from "effect"
import { expectError, expectType } from "tsd"
import { Bridge, HumanConfirm, Plan, Registry, ScriptedModel, Toolkit } from "@graded/core"
import type { SendCapability, WriteCapability } from "@graded/core"
import {
  Anything,
  KnowledgeBase,
  knowledgeBase,
  SendReply,
  SomeObject,
  SubmitTicket,
  support,
  ui,
  Whatever
} from "./fixtures.js"

const registry = Registry.make(support)
const humans = HumanConfirm.layer(ui)
const wide = Layer.succeed(Anything, "x") // Layer<{}>
const unknowing = Layer.succeed(Whatever, "x") // Layer<unknown>
const objects = Layer.succeed(SomeObject, "x") // Layer<object>
const PartialSend = Context.Service<Partial<SendCapability>, string>("PartialSend")
const almostSend = Layer.succeed(PartialSend, "x")

// Rejected: layers typed wider than what they provide.

// error: Bridge needs a layer that provides WriteCapability and SendCapability and KnowledgeBase: merge HumanConfirm.layer(ui)
expectError(Bridge.make(registry, [], { layer: wide }))

// error: Bridge needs a layer that provides WriteCapability and SendCapability and KnowledgeBase: merge HumanConfirm.layer(ui)
expectError(Bridge.make(registry, [], { layer: unknowing }))

// error: Bridge needs a layer that provides WriteCapability and SendCapability and KnowledgeBase
expectError(Bridge.make(registry, [], { layer: Layer.effectContext(Effect.die("no UI")) }))

// error: Bridge needs a layer that provides WriteCapability and SendCapability and KnowledgeBase
expectError(Bridge.expose(registry, [], { layer: objects }))

// error: Bridge needs a layer that provides SendCapability: merge HumanConfirm.layer(ui)
expectError(Bridge.make(Registry.make(Toolkit.make(SendReply)), [], { layer: almostSend }))

// Rejected: a wide layer merged with a real one still provides only the real one.

// error: Bridge needs a layer that provides WriteCapability and SendCapability: merge HumanConfirm.layer(ui)
expectError(Bridge.expose(registry, [], { layer: Layer.merge(knowledgeBase, wide) }))

// Rejected: layers that leave something out.

// error: Bridge needs a layer that provides KnowledgeBase: merge HumanConfirm.layer(ui)
expectError(Bridge.make(registry, [], { layer: humans }))

// error: Bridge needs a layer that provides WriteCapability and SendCapability: merge HumanConfirm.layer(ui)
expectError(Bridge.make(registry, [], { layer: Layer.merge(knowledgeBase, ScriptedModel.layer([])) }))

// error: Bridge needs a layer that provides SendCapability: merge HumanConfirm.layer(ui)
expectError(Bridge.make(Registry.make(Toolkit.make(SendReply)), [], { layer: Layer.empty }))

// error: Bridge needs a layer that provides WriteCapability: merge HumanConfirm.layer(ui)
expectError(
  Bridge.make(Registry.make(Toolkit.make(SubmitTicket)), [], { layer: HumanConfirm.trigger({ by: "me", via: "cli" }) })
)

// Rejected: a plan's own services count too.
const Research = Plan.make("research", {
  input: Schema.Struct({}),
  writes: [],
  steps: () => Effect.map(KnowledgeBase, () => "done")
})

// error: Bridge needs a layer that provides KnowledgeBase: merge HumanConfirm.layer(ui)
expectError(Bridge.make(Registry.make(Toolkit.make()), [Research], { layer: humans }))

// Accepted: no plans add nothing, as the documented example shows.
expectType<Bridge.Bridge>(Bridge.make(Registry.make(Toolkit.make()), [], { layer: HumanConfirm.layer(ui) }))
expectType<Bridge.Bridge>(Bridge.expose(Registry.make(Toolkit.make(SendReply)), [], { layer: humans }))

// Accepted: every service by its own tag; more than needed is fine.
expectType<Bridge.Bridge>(Bridge.make(registry, [], { layer: Layer.merge(humans, knowledgeBase) }))
expectType<Bridge.Bridge>(
  Bridge.make(registry, [Research], { layer: Layer.mergeAll(humans, knowledgeBase, ScriptedModel.layer([])) })
)
expectType<Bridge.Bridge>(Bridge.make(registry, [], { layer: Layer.mergeAll(humans, knowledgeBase, wide) }))

// Accepted: a plan's write steps are its own (Plan.run authorizes them); the
// bridge provides HumanTrigger itself.
const FileIt = Plan.make("file-it", {
  input: Schema.Struct({}),
  writes: [SubmitTicket],
  steps: (_, step) => step.write("submit", SubmitTicket, { subject: "x" })
})
expectType<Bridge.Bridge>(Bridge.make(Registry.make(Toolkit.make()), [FileIt], { layer: Layer.empty }))

// The services needed, as a type: nothing for no tools and no plans.
declare const none: Bridge.Services<readonly [], readonly []>
expectType<never>(none)
declare const some: Bridge.Services<typeof support.tools, readonly [typeof Research, typeof FileIt]>
expectType<KnowledgeBase | SendCapability | WriteCapability>(some)
