/**
 * Conditions on the invocation context, written as data: a guideline's
 * `when`, a contract's precondition, an approval rule. Being data, they can be
 * listed, compared, checked for conflicts and stored; only the system
 * evaluates them, never the model.
 *
 * @since 0.1.0
 */
import type { Result, Schema } from "effect"
import * as internal from "./internal/condition.js"

/**
 * What a condition can read: the context's `role`, `page`, `tenant`, `actor`,
 * `autonomous`, the lists `features` and `consents`, a fact recorded by an
 * earlier tool result (`facts.<name>`), or, for approval rules, a field of
 * the call's input (`input.<field>`, dotted for nested fields).
 *
 * @since 0.1.0
 * @category models
 */
export type Path =
  | "role"
  | "page"
  | "tenant"
  | "actor"
  | "autonomous"
  | "features"
  | "consents"
  | `facts.${string}`
  | `input.${string}`

/**
 * A value a condition compares with.
 *
 * @since 0.1.0
 * @category models
 */
export type Scalar = string | number | boolean

/**
 * A condition: `equals`, `in`, `has` (a list holds a value), `and`, `or`,
 * `not`, `always`, and `text`, a natural-language condition a language model
 * matches for what data cannot express (recorded as matched by a model).
 *
 * @since 0.1.0
 * @category models
 */
export type Condition =
  | { readonly op: "always" }
  | { readonly op: "equals"; readonly path: Path; readonly value: Scalar }
  | { readonly op: "in"; readonly path: Path; readonly values: ReadonlyArray<Scalar> }
  | { readonly op: "has"; readonly path: Path; readonly value: string }
  | { readonly op: "and"; readonly all: ReadonlyArray<Condition> }
  | { readonly op: "or"; readonly any: ReadonlyArray<Condition> }
  | { readonly op: "not"; readonly condition: Condition }
  | { readonly op: "text"; readonly text: string }

/**
 * The schema of a condition, for conditions read from JSON (a guideline
 * draft, a stored policy): paths outside {@link Path} are refused.
 *
 * @since 0.1.0
 * @category schemas
 */
export const schema: Schema.Codec<Condition> = internal.schema

/**
 * What a condition is evaluated against: the invocation context and, for an
 * approval rule, the call's input.
 *
 * @since 0.1.0
 * @category models
 */
export interface Subject {
  readonly role?: string | undefined
  readonly page?: string | undefined
  readonly tenant?: string | undefined
  readonly actor?: string | undefined
  readonly autonomous?: boolean | undefined
  readonly features?: ReadonlyArray<string> | undefined
  readonly consents?: ReadonlyArray<string> | undefined
  readonly facts?: Readonly<Record<string, Scalar>> | undefined
  readonly input?: unknown
}

/**
 * Holds in every context.
 *
 * @since 0.1.0
 * @category constructors
 */
export const always: Condition = Object.freeze({ op: "always" })

/**
 * The value at `path` is `value`.
 *
 * @example
 * import { Condition } from "@graded/policy"
 * const officer = Condition.equals("role", "credit-officer")
 *
 * @since 0.1.0
 * @category constructors
 */
export const equals = (path: Path, value: Scalar): Condition => internal.leaf({ op: "equals", path, value })

/**
 * The value at `path` is one of `values`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const isIn = (path: Path, values: ReadonlyArray<Scalar>): Condition =>
  internal.leaf({ op: "in", path, values: Object.freeze([...values]) })

/**
 * The list at `path` (`features`, `consents`, or a list fact) holds `value`.
 *
 * @example
 * import { Condition } from "@graded/policy"
 * const consented = Condition.has("consents", "credit-check")
 *
 * @since 0.1.0
 * @category constructors
 */
export const has = (path: Path, value: string): Condition => internal.leaf({ op: "has", path, value })

/**
 * Every condition holds (`and()` holds always).
 *
 * @since 0.1.0
 * @category constructors
 */
export const and = (...all: ReadonlyArray<Condition>): Condition => Object.freeze({ op: "and", all })

/**
 * At least one condition holds (`or()` holds never).
 *
 * @since 0.1.0
 * @category constructors
 */
export const or = (...any: ReadonlyArray<Condition>): Condition => Object.freeze({ op: "or", any })

/**
 * The condition does not hold.
 *
 * @since 0.1.0
 * @category constructors
 */
export const not = (condition: Condition): Condition => Object.freeze({ op: "not", condition })

/**
 * A natural-language condition, matched by a language model against the
 * conversation, for what data cannot express. Such a match is recorded as
 * made by a model; with no model in scope it does not hold.
 *
 * @since 0.1.0
 * @category constructors
 */
export const text = (text: string): Condition => internal.leaf({ op: "text", text })

/**
 * The caller's role is one of `roles`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const role = (...roles: ReadonlyArray<string>): Condition =>
  roles.length === 1 ? equals("role", roles[0]!) : isIn("role", roles)

/**
 * Whether `condition` holds for `subject`. A `text` condition holds only when
 * `matchText` says so (no matcher: it does not hold).
 *
 * @since 0.1.0
 * @category evaluation
 */
export const holds = (
  condition: Condition,
  subject: Subject,
  matchText?: (text: string) => boolean
): boolean => internal.evaluate(condition, subject, matchText).holds

/**
 * The first part of `condition` that does not hold for `subject` (a leaf, or a
 * `not`), or undefined when it holds: the "why not" of an audit entry.
 *
 * @since 0.1.0
 * @category evaluation
 */
export const failing = (
  condition: Condition,
  subject: Subject,
  matchText?: (text: string) => boolean
): Condition | undefined => internal.evaluate(condition, subject, matchText).failed

/**
 * A condition as people read it: `role = "credit-officer" and consents has "credit-check"`.
 *
 * @since 0.1.0
 * @category formatting
 */
export const describe: (condition: Condition) => string = internal.describe

/**
 * Every path a condition reads, in order of first appearance.
 *
 * @since 0.1.0
 * @category evaluation
 */
export const paths: (condition: Condition) => ReadonlyArray<Path> = internal.paths

/**
 * Whether a condition holds a `text` part (matched by a model, not by data).
 *
 * @since 0.1.0
 * @category evaluation
 */
export const hasText: (condition: Condition) => boolean = internal.hasText

/**
 * What the value at `path` is in `subject` (undefined when absent).
 *
 * @since 0.1.0
 * @category evaluation
 */
export const valueAt: (subject: Subject, path: Path) => unknown = internal.valueAt

/**
 * Thrown where a condition is built from values the language does not admit
 * (an unknown path, a value that is not a string, number or boolean); the
 * message names the condition and what was wrong.
 *
 * @since 0.1.0
 * @category errors
 */
export const InvalidCondition = internal.InvalidCondition

/**
 * Decodes a condition from data (JSON), or says what was wrong with it.
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromData: (data: unknown) => Result.Result<Condition, string> = internal.fromData
