/**
 * Fixed flows: an order of steps written in code, started by a human. The
 * flow decides every call; a model inside it only writes text and never
 * chooses a tool. That predictability is why a plan may write where an
 * agent may not: `Plan.run` requires `HumanTrigger`, provides
 * `WriteCapability` for exactly the write tools the plan declares, and never
 * provides `SendCapability`, so a send step still needs a human's confirmation.
 *
 * @since 0.1.0
 */
import type { Effect, Schema } from "effect"
import type { Pipeable } from "effect/Pipeable"
import type { HumanTrigger, WriteCapability } from "./Capability.js"
import * as internal from "./internal/plan.js"
import type { LanguageModel } from "./LanguageModel.js"
import type * as Tool from "./Tool.js"
import type { PlanError } from "./internal/plan.js"

/**
 * A step failed, or the plan could not start. Names the plan and the step.
 *
 * @since 0.1.0
 * @category errors
 */
export { PlanError } from "./internal/plan.js"

/**
 * The steps a plan's body can take. Each is audited with its index and name.
 *
 * @since 0.1.0
 * @category models
 */
export interface Steps {
  /** Calls a read tool. */
  readonly read: <N extends string, I, O, E, R>(
    name: string,
    tool: Tool.Tool<N, "read", I, O, E, R>,
    input: I
  ) => Effect.Effect<O, PlanError, R>
  /** Calls a write tool the plan declared; the plan authorizes it. */
  readonly write: <N extends string, I, O, E, R>(
    name: string,
    tool: Tool.Tool<N, "write", I, O, E, R>,
    input: I
  ) => Effect.Effect<O, PlanError, R | WriteCapability>
  /** Calls a send tool: a human must still confirm it. */
  readonly send: <N extends string, I, O, E, R>(
    name: string,
    tool: Tool.Tool<N, "send", I, O, E, R>,
    input: I
  ) => Effect.Effect<O, PlanError, R | Tool.Requirements<Tool.Tool<N, "send", I, O, E, R>>>
  /** Lets the model write text; it is offered no tools. */
  readonly generate: (name: string, prompt: string, options?: { readonly system?: string }) => Effect.Effect<string, PlanError, LanguageModel>
  /** Fails the plan, naming this step, unless `check` is true. */
  readonly validate: (name: string, check: boolean, reason: string) => Effect.Effect<void, PlanError>
}

/**
 * The key that marks a value as a plan; `Plan.isPlan` checks for it.
 *
 * @since 0.1.0
 * @category symbols
 */
export const TypeId: typeof internal.TypeId = internal.TypeId

/**
 * @since 0.1.0
 * @category symbols
 */
export type TypeId = typeof TypeId

/**
 * A fixed flow: its name, its input schema, the write tools it declares, and
 * its steps.
 *
 * @since 0.1.0
 * @category models
 */
export interface Plan<Name extends string, In, Out, R> extends Pipeable {
  readonly [TypeId]: TypeId
  readonly name: Name
  readonly input: Schema.Schema<In, unknown>
  /** The write tools this plan may call. */
  readonly writes: ReadonlyArray<string>
  readonly steps: (input: In, step: Steps) => Effect.Effect<Out, PlanError, R>
}

/**
 * Any plan, for constraints.
 *
 * @since 0.1.0
 * @category models
 */
export interface Any extends Plan<string, any, any, any> {}

/**
 * Whether a value is a plan made by `Plan.make`.
 *
 * @since 0.1.0
 * @category guards
 */
export const isPlan = (u: unknown): u is Any => typeof u === "object" && u !== null && TypeId in u

/**
 * Defines a fixed flow.
 *
 * @example
 * import { Effect, Schema } from "effect"
 * import { Plan, Tool } from "@graded/core"
 *
 * declare const CurrentConversation: Tool.Tool<"conversation.current", "read", {}, { text: string }, never, never>
 * declare const SubmitTicket: Tool.Tool<"ticket.submit", "write", { subject: string }, { id: string }, never, never>
 *
 * const QuickTicket = Plan.make("quick-ticket", {
 *   input: Schema.Struct({}),
 *   writes: [SubmitTicket],
 *   steps: (_, step) =>
 *     Effect.gen(function*() {
 *       const conversation = yield* step.read("read the conversation", CurrentConversation, {})
 *       const subject = yield* step.generate("write the subject", `One line for: ${conversation.text}`)
 *       yield* step.validate("check the subject", subject.length > 0, "the subject is empty")
 *       return yield* step.write("submit", SubmitTicket, { subject })
 *     })
 * })
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = <const Name extends string, In, IE, Out, R>(
  name: Name,
  definition: {
    readonly input: Schema.Schema<In, IE>
    readonly writes: ReadonlyArray<Tool.Tool<string, "write", any, any, any, any>>
    readonly steps: (input: In, step: Steps) => Effect.Effect<Out, PlanError, R>
  }
): Plan<Name, In, Out, R> => internal.make(name, definition)

/**
 * Runs a plan a human started. Requires `HumanTrigger`; the plan's own
 * `WriteCapability` authorizes its declared write tools and refuses any other;
 * `SendCapability` is left to the caller's `HumanConfirm`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const run = <Name extends string, In, Out, R>(
  plan: Plan<Name, In, Out, R>,
  input: unknown
): Effect.Effect<Out, PlanError, Exclude<R, WriteCapability> | HumanTrigger> => internal.run(plan, input)

