// What the Runs suites share: the stores a run outlives its processes in, a
// scripted human deciding as a named person, and the results the model got.
import { Effect, Layer } from "effect"
import { HumanConfirm, Invocation, type LanguageModel, ProposalStore, RunStore } from "@graded/core"

/** The tool results the model was given, parsed, in order. */
export const results = (messages: ReadonlyArray<LanguageModel.Message>) =>
  messages.flatMap((message) => message.role === "tool" ? [JSON.parse(message.content)] : [])

/** The stores outlive each "process"; each process has its own model script. */
export const stores = () =>
  Effect.map(Layer.build(Layer.merge(RunStore.memory, ProposalStore.memory)), Layer.succeedContext)

/** Runs an effect as the person `by`, deciding through a scripted HumanConfirm. */
export const human =
  (by: string, ...decisions: ReadonlyArray<HumanConfirm.Decision>) => <A, E, R>(self: Effect.Effect<A, E, R>) =>
    Invocation.within({ actor: by })(self).pipe(Effect.provide(HumanConfirm.layer(HumanConfirm.scripted(decisions))))
