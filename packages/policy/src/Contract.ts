/**
 * A tool's contract beyond its schemas: preconditions the system checks
 * before the tool is offered or run (never left to the model), and the
 * failures it may end in, each of which must have a fixed message. Its tags,
 * declared side effects and failure messages live on the tool itself.
 *
 * @since 0.1.0
 */
import type { Tool } from "@graded/core"
import type { Condition } from "./Condition.js"
import * as internal from "./internal/contract.js"

/**
 * A condition a call needs, and the fixed text a user sees when it fails.
 *
 * @since 0.1.0
 * @category models
 */
export interface Precondition {
  readonly id: string
  readonly when: Condition
  /** What a user is told when it does not hold: fixed text, never generated. */
  readonly message: string
}

/**
 * A tool's contract.
 *
 * @since 0.1.0
 * @category models
 */
export interface Contract<Name extends string = string> {
  readonly tool: Name
  readonly preconditions: ReadonlyArray<Precondition>
  /** The error tags the tool may fail with; the review asks each for a fixed message. */
  readonly failures: ReadonlyArray<string>
}

/**
 * The `_tag`s of a tool's typed errors.
 *
 * @since 0.1.0
 * @category utility types
 */
export type ErrorTag<T> = T extends Tool.Tool<any, any, any, any, infer E, any>
  ? E extends { readonly _tag: infer Tag extends string } ? Tag : never
  : never

/**
 * Thrown where a contract or precondition is defined wrongly; the message
 * names it and what was wrong.
 *
 * @since 0.1.0
 * @category errors
 */
export const InvalidContract = internal.InvalidContract

/**
 * A precondition: its id, its condition, and the fixed text a user sees when
 * it fails.
 *
 * @example
 * import { Condition, Contract } from "@graded/policy"
 * const consent = Contract.precondition(
 *   "credit-consent",
 *   Condition.has("consents", "credit-check"),
 *   "We need the customer's consent before checking their credit."
 * )
 *
 * @since 0.1.0
 * @category constructors
 */
export const precondition: (id: string, when: Condition, message: string) => Precondition = internal.precondition

/**
 * A tool's contract: its preconditions and the failures it may end in (typed
 * as the tool's own error tags).
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = <T extends Tool.Any>(
  tool: T,
  options: {
    readonly preconditions?: ReadonlyArray<Precondition> | undefined
    readonly failures?: ReadonlyArray<ErrorTag<T>> | undefined
  }
): Contract<Tool.Name<T>> => internal.make(tool, options) as Contract<Tool.Name<T>>
