/**
 * The four-question contract review. Every tool is asked: does its input
 * admit fields it does not need? Is every precondition evaluable from the
 * context, by the system? Are its side effects audited? Does every failure
 * have a fixed message? A tool that fails any of them is not offered in a
 * production context (`Policy.make` runs the review); each finding names the
 * question and the tool.
 *
 * @since 0.1.0
 */
import type { Plan, Tool, Toolkit } from "@graded/core"
import type { Contract } from "./Contract.js"
import * as internal from "./internal/review.js"

/**
 * The questions, by number: 1 excess input, 2 precondition not
 * evaluable, 3 side effect not audited, 4 failure without a fixed message,
 * and, asked of a policy's guidelines by `Policy.review`, 5 guard open on an
 * absent fact.
 *
 * @since 0.1.0
 * @category models
 */
export type Question = internal.Question

/**
 * Each question's title, as findings and the manifest show it.
 *
 * @since 0.1.0
 * @category models
 */
export type Title = internal.Title

/**
 * The title of each question, by number.
 *
 * @since 0.1.0
 * @category models
 */
export const titles: { readonly [Q in Question]: (typeof internal.titles)[Q] } = internal.titles

/**
 * One question a tool fails: the tool, the question and its title, and what
 * is wrong, in words. A composed contract's findings also name the plan and
 * the step (counted from 1).
 *
 * @since 0.1.0
 * @category models
 */
export interface Finding extends internal.Finding {}

/**
 * What the review takes beside the toolkit.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** The tools' contracts: their preconditions (question 2) and declared failures (question 4). */
  readonly contracts?: ReadonlyArray<Contract> | undefined
  /**
   * Sensitive field names by compliance tag: a tool whose input has one of
   * these fields must carry the tag (question 1). Added to
   * {@link defaultSensitive}; a tag named here replaces its default list.
   */
  readonly sensitive?: Readonly<Record<string, ReadonlyArray<string>>> | undefined
  /** Facts the context carries that no tool records (set by the app): evaluable by preconditions. */
  readonly facts?: ReadonlyArray<string> | undefined
  /**
   * Tags a tool must carry, by tool name (`{ "credit.score": ["credit-bureau"] }`):
   * a tool without them is not audited under its regulatory category (question 3).
   */
  readonly requiredTags?: Readonly<Record<string, ReadonlyArray<string>>> | undefined
}

/**
 * The sensitive field names the review knows without being told, by tag:
 * `pii` holds `ssn`, `password`, `cardNumber`, `iban`, `dateOfBirth` and the
 * like. Names match ignoring case and separators (`card_number` is `cardNumber`).
 *
 * @since 0.1.0
 * @category constants
 */
export const defaultSensitive: Readonly<Record<string, ReadonlyArray<string>>> = internal.defaultSensitive

/**
 * Thrown for a review that cannot be run: a contract naming a tool the
 * toolkit lacks, two contracts for one tool, a plan whose steps are not
 * named or not in the toolkit, or that leaves out a write tool it declares.
 *
 * @since 0.1.0
 * @category errors
 */
export const InvalidReview = internal.InvalidReview

/**
 * Asks every tool of a toolkit the four questions; no findings means every
 * tool passes.
 *
 * Question 1: the input admits arbitrary fields (a record, an index
 * signature, `Unknown`, `Any` or `Object` anywhere in its schema) or a field
 * named as a sensitive field of a tag the tool does not carry. Question 2: a
 * precondition has a `text` condition, reads the input, or reads a fact no
 * tool records (`facts` on the tool) and the options do not declare.
 * Question 3: a write or send tool declares no `sideEffects`, or lacks a
 * required tag. Question 4: an error tag of the contract's `failures` has no
 * entry in the tool's `failureMessages`, or a precondition has no message.
 *
 * @example
 * import { Effect, Schema } from "effect"
 * import { Tool, Toolkit } from "@graded/core"
 * import { Review } from "@graded/policy"
 * const Note = Tool.write("note.add", {
 *   title: "Add a note",
 *   description: "Adds a note to the customer's file.",
 *   input: Schema.Struct({ text: Schema.String }),
 *   output: Schema.Boolean,
 *   run: () => Effect.succeed(true)
 * })
 * const findings = Review.run(Toolkit.make(Note))
 * // [{ tool: "note.add", question: 3, title: "side effect not audited", ... }]
 * console.log(Review.format(findings))
 *
 * @since 0.1.0
 * @category review
 */
export const run: (toolkit: Toolkit.Any, options?: Options) => ReadonlyArray<Finding> = internal.run

/**
 * Reviews a composed contract: a plan whose steps are tools, named in the
 * order the plan takes them (`options.steps`; a plan's body is code, so the
 * review is told its steps, and every write tool the plan declares must be
 * among them). Each step's tool is asked the four questions, and a step's
 * preconditions may read only the facts an earlier step records or the
 * options declare.
 *
 * @since 0.1.0
 * @category review
 */
export const plan: (
  plan: Plan.Any,
  toolkit: Toolkit.Any,
  options: Options & { readonly steps: ReadonlyArray<Tool.Any | string> }
) => ReadonlyArray<Finding> = internal.plan

/**
 * Findings as lines for people: a count, then each finding with its tool,
 * question and title.
 *
 * @since 0.1.0
 * @category formatting
 */
export const format: (findings: ReadonlyArray<Finding>) => string = internal.format
