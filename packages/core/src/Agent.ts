/**
 * The autonomous loop: a model turn, the tool calls it asked for, their
 * results back to the model, the next turn; until the model answers or the
 * round limit is reached. It accepts only toolkits whose every tool reads,
 * and it checks again at run time what the compiler checked.
 *
 * @since 0.1.0
 */
import type { Effect } from "effect/Effect"
import type { Builtin } from "./Capability.js"
import type * as Invocation from "./Invocation.js"
import type * as Registry from "./Registry.js"
import * as internal from "./internal/agent.js"
import type { LanguageModel, Message, ModelError, Usage } from "./LanguageModel.js"
import type * as Tool from "./Tool.js"
import type * as Toolkit from "./Toolkit.js"

// ---------------------------------------------------------------------------
// The compile-time check
// ---------------------------------------------------------------------------

type Offense<T> = T extends Tool.Tool<infer N, infer G, any, any, any, infer R> ?
  G extends "read" ? [Extract<R, Builtin>] extends [never] ? never
    : `${N} (read) needs ${Tool.CapabilityNames<Extract<R, Builtin>>}`
  : `${N} (${G}) needs ${G extends "write" ? "WriteCapability" : "SendCapability"}`
  : never

type Join<A extends string, B extends string> = [A] extends [never] ? B : [B] extends [never] ? A : `${A}; ${B}`

/**
 * What makes each tool unfit for an autonomous loop, in toolkit order;
 * `never` when every tool is fit.
 *
 * @since 0.1.0
 * @category utility types
 */
export type Offenses<Tools extends ReadonlyArray<Tool.Any>> = [Offense<Tools[number]>] extends [never] ? never
  // Only a toolkit that fails the check pays for listing its offenders in order.
  : number extends Tools["length"] ? Offense<Tools[number]>
  : Collect<Tools, never>

type Collect<Tools, Acc extends string> = Tools extends readonly [infer H, ...infer Rest] ?
  Collect<Rest, Join<Acc, Offense<H>>>
  : Acc

/**
 * The compile error for a toolkit an autonomous loop may not have.
 *
 * @since 0.1.0
 * @category errors
 */
export type AutonomousViolation<Offenses extends string> =
  `Agent.run takes read tools only: ${Offenses}. Pass Toolkit.readOnly(toolkit), or let a human confirm these tools through HumanConfirm`

/**
 * The same message at run time.
 *
 * @since 0.1.0
 * @category errors
 */
export const autonomousViolation: <const Offenses extends string>(offenses: Offenses) => AutonomousViolation<Offenses> =
  internal.autonomousViolation

/**
 * `T` when every tool of the toolkit reads and needs no capability; otherwise
 * the message naming each offending tool, its grade and what it needs.
 *
 * @since 0.1.0
 * @category utility types
 */
export type Autonomous<T> = [T] extends [Toolkit.Toolkit<infer Tools>] ?
  [Offenses<Tools>] extends [never] ? T : AutonomousViolation<Offenses<Tools>>
  : T

// ---------------------------------------------------------------------------
// Results
// ---------------------------------------------------------------------------

/**
 * Why a call did not run, as the model and the caller see it.
 *
 * @since 0.1.0
 * @category models
 */
export interface Denial {
  readonly code: Registry.Code | "round-limit"
  readonly message: string
}

/**
 * A call that ran, typed by its tool.
 *
 * @since 0.1.0
 * @category models
 */
export type Succeeded<T> = T extends Tool.Tool<infer N, any, infer I, infer O, any, any> ? {
    readonly ok: true
    readonly id: string
    readonly tool: N
    readonly input: I
    readonly output: O
  }
  : never

/**
 * A call that did not run or failed. `tool` is the name the model asked for,
 * mapped from its wire form.
 *
 * @since 0.1.0
 * @category models
 */
export interface Denied {
  readonly ok: false
  readonly id: string
  readonly tool: string
  readonly error: Denial
}

/**
 * @since 0.1.0
 * @category models
 */
export type Call<Tools extends ReadonlyArray<Tool.Any>> = Succeeded<Tools[number]> | Denied

/**
 * @since 0.1.0
 * @category models
 */
export interface Result<Tools extends ReadonlyArray<Tool.Any>> {
  /** Why the loop stopped: the model answered, or the round limit was reached. */
  readonly stopped: "answer" | "round-limit"
  /** The model's last text. */
  readonly answer: string | undefined
  /** Model turns taken. */
  readonly rounds: number
  readonly calls: ReadonlyArray<Call<Tools>>
  readonly messages: ReadonlyArray<Message>
  readonly usage: Usage
}

/**
 * @since 0.1.0
 * @category models
 */
export type Input =
  | { readonly prompt: string; readonly messages?: undefined }
  | { readonly messages: ReadonlyArray<Message>; readonly prompt?: undefined }

/**
 * @since 0.1.0
 * @category models
 */
export type Options<T> = Input & {
  readonly toolkit: Autonomous<T>
  /** Model turns allowed (default 4). */
  readonly maxRounds?: number | undefined
  /** Longest argument text accepted from the model for one call (default 100,000 characters). */
  readonly maxArgumentChars?: number | undefined
  /** A system message placed first. */
  readonly system?: string | undefined
  /** The invocation context; `autonomous` is always true here. */
  readonly context?: Partial<Omit<Invocation.Context, "autonomous">> | undefined
}

/**
 * The options were unusable: no prompt and no messages, or a round limit that
 * is not a positive whole number.
 *
 * @since 0.1.0
 * @category errors
 */
export { InvalidOptions } from "./internal/agent.js"

/**
 * Every way the loop itself can fail. Tool failures are not here: they go
 * back to the model as structured results.
 *
 * @since 0.1.0
 * @category errors
 */
export type AgentError = ModelError | internal.InvalidOptions

/**
 * The default round limit.
 *
 * @since 0.1.0
 * @category constructors
 */
export const defaultMaxRounds = 4

/**
 * The default limit on one call's argument text.
 *
 * @since 0.1.0
 * @category constructors
 */
export const defaultMaxArgumentChars: number = internal.defaultMaxArgumentChars

/**
 * Runs the autonomous loop.
 *
 * @example
 * import { Effect } from "effect"
 * import { Agent, ScriptedModel, Toolkit } from "@graded/core"
 *
 * const program = Agent.run({ toolkit: Toolkit.make(), prompt: "Hello?" }).pipe(
 *   Effect.provide(ScriptedModel.layer([ScriptedModel.text("Hello!")]))
 * )
 *
 * @since 0.1.0
 * @category constructors
 */
export const run = <T extends Toolkit.Any>(
  options: Options<T>
): Effect<Result<Toolkit.Tools<T>>, AgentError, LanguageModel | Toolkit.Requirements<T>> =>
  // The loop is written once for any toolkit; this signature restores what
  // the toolkit's type knows: its typed calls and its tools' requirements.
  internal.run(options as internal.RunOptions) as Effect<
    Result<Toolkit.Tools<T>>,
    AgentError,
    LanguageModel | Toolkit.Requirements<T>
  >
