/**
 * Conflict detection over a set of guidelines, as a pure function: two
 * guidelines that can match the same context where one authorizes a tool and
 * the other forbids it, cycles and unknown names in `requires`/`excludes`,
 * guidelines that can never match given the declared vocabulary, and
 * near-duplicates to merge. Every finding names the guidelines involved and,
 * where a context triggers it, an example context.
 *
 * @since 0.1.0
 */
import type { Scalar, Subject } from "./Condition.js"
import type { Any } from "./Guideline.js"
import * as internal from "./internal/check.js"

/**
 * What a finding is about: `conflict` (one guideline authorizes a tool another
 * forbids, and both can match at once), `cycle` (guidelines that require each
 * other in a circle), `missing` (`requires` or `excludes` names no guideline),
 * `unreachable` (a guideline that can never match), `near-duplicate` (the same
 * tools, conditions that can hold together).
 *
 * @since 0.1.0
 * @category models
 */
export type Kind = "conflict" | "cycle" | "missing" | "unreachable" | "near-duplicate"

/**
 * One finding of {@link run}.
 *
 * @since 0.1.0
 * @category models
 */
export interface Finding {
  readonly kind: Kind
  /**
   * `error`: the policy says two things at once or cannot be evaluated as
   * written (an unresolved conflict, a cycle, a missing name); `warning`: it
   * works, but likely not as meant.
   */
  readonly severity: "error" | "warning"
  /** Every guideline involved, the one the finding is about first. */
  readonly guidelines: ReadonlyArray<string>
  /** The tool a conflict is about. */
  readonly tool?: string | undefined
  /** A context in which the finding shows: both guidelines match in it. */
  readonly example?: Subject | undefined
  /** The natural-language (`text`) conditions the example assumes a model matched. */
  readonly texts?: ReadonlyArray<string> | undefined
  /** For people: the guidelines, the tool and the example context in words, and what to do. */
  readonly message: string
}

/**
 * The vocabulary a policy is written against. A path given here is closed:
 * its value is always one of these (a declared fact may also not be recorded
 * yet), so a condition naming another value never holds. A path not given is
 * open: any value is possible.
 *
 * @since 0.1.0
 * @category models
 */
export interface Declared {
  readonly roles?: ReadonlyArray<Scalar> | undefined
  readonly pages?: ReadonlyArray<Scalar> | undefined
  readonly tenants?: ReadonlyArray<Scalar> | undefined
  readonly features?: ReadonlyArray<string> | undefined
  readonly consents?: ReadonlyArray<string> | undefined
  readonly facts?: Readonly<Record<string, ReadonlyArray<Scalar>>> | undefined
}

/**
 * Thrown by {@link run} where the declared vocabulary is not lists of values;
 * the message names the field.
 *
 * @since 0.1.0
 * @category errors
 */
export const InvalidDeclared = internal.InvalidDeclared

/**
 * Checks a set of guidelines: conflicts (errors at equal priority, where
 * forbidding wins at run time; warnings naming the winner otherwise),
 * dependency cycles and unknown names (errors), unreachable guidelines and
 * near-duplicates (warnings). A guideline's condition is taken with those of
 * every guideline it requires; a guideline that excludes one of the two
 * resolves their conflict. Errors come first.
 *
 * @example
 * import { Check, Condition, Guideline } from "@graded/policy"
 * const findings = Check.run([
 *   Guideline.make("support-refunds", {
 *     description: "Support issues refunds.",
 *     when: Condition.role("support"),
 *     tools: ["refund.issue"]
 *   }),
 *   Guideline.make("no-refunds-on-trial", {
 *     description: "No refunds on a trial account.",
 *     when: Condition.has("features", "trial"),
 *     forbids: ["refund.issue"]
 *   })
 * ], { roles: ["support", "credit-officer"] })
 * // findings[0].kind === "conflict", findings[0].example: { role: "support", features: ["trial"] }
 *
 * @since 0.1.0
 * @category checking
 */
export const run: (guidelines: ReadonlyArray<Any>, declared?: Declared) => ReadonlyArray<Finding> = internal.run

/**
 * Findings as text for a terminal: one block a finding, errors first, and a
 * count of errors and warnings.
 *
 * @since 0.1.0
 * @category formatting
 */
export const format: (findings: ReadonlyArray<Finding>) => string = internal.format
