/**
 * A guideline: when a condition on the context holds, these tools may be
 * offered and called (or, with `forbids`, may not). Tools reach a model only
 * when a matched guideline authorizes them; grades still decide who must
 * confirm a write or a send.
 *
 * @since 0.1.0
 */
import type { Result } from "effect"
import { HumanConfirm, type Tool } from "@graded/core"
import type { Condition } from "./Condition.js"
import { evaluate } from "./internal/condition.js"
import * as internal from "./internal/guideline.js"

/**
 * A guideline, as data: it can be listed, compared, stored and checked.
 *
 * @since 0.1.0
 * @category models
 */
export interface Guideline<
  Id extends string = string,
  Tools extends string = string,
  Autonomous extends boolean = boolean
> {
  readonly id: Id
  /** For people: what the guideline is for, shown in the manifest and in audit reasons. */
  readonly description: string
  /** When it matches. */
  readonly when: Condition
  /** The tools it authorizes while it matches. */
  readonly tools: ReadonlyArray<Tools>
  /** The tools it forbids while it matches. */
  readonly forbids: ReadonlyArray<string>
  /**
   * Where matched guidelines disagree about a tool, the higher priority
   * decides; at equal priority, forbidding wins.
   */
  readonly priority: number
  /** Dependency: it matches only when every guideline named here matches too. */
  readonly requires: ReadonlyArray<string>
  /** Exclusion: while it matches, the guidelines named here do not count. */
  readonly excludes: ReadonlyArray<string>
  /** Meant to let a model act alone (`Agent.run`): it may authorize read tools only. */
  readonly autonomous: Autonomous
}

/**
 * Any guideline, for constraints.
 *
 * @since 0.1.0
 * @category models
 */
export interface Any extends Guideline<string, string, boolean> {}

/**
 * What `Guideline.make` takes.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options<Tools extends string, Autonomous extends boolean> {
  readonly description: string
  readonly when: Condition
  readonly tools?: ReadonlyArray<Tools> | undefined
  readonly forbids?: ReadonlyArray<string> | undefined
  readonly priority?: number | undefined
  readonly requires?: ReadonlyArray<string> | undefined
  readonly excludes?: ReadonlyArray<string> | undefined
  readonly autonomous?: Autonomous | undefined
}

/**
 * Thrown where a guideline is defined wrongly (an id that is not a plain
 * name, no description, nothing authorized or forbidden, a priority that is
 * not a finite number, a condition outside the language); the message names
 * the guideline and what was wrong.
 *
 * @since 0.1.0
 * @category errors
 */
export const InvalidGuideline = internal.InvalidGuideline

/**
 * Makes a guideline. Its id is a plain name (`credit-officer-scores`); the
 * tools are named as in the toolkit, and `Policy.make` checks every name.
 *
 * @example
 * import { Condition, Guideline } from "@graded/policy"
 * const scores = Guideline.make("credit-officer-scores", {
 *   description: "Credit officers look up a consenting customer's credit score.",
 *   when: Condition.and(Condition.role("credit-officer"), Condition.has("consents", "credit-check")),
 *   tools: ["credit.score"]
 * })
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = <
  const Id extends string,
  const Tools extends string = never,
  const Autonomous extends boolean = false
>(
  id: Id,
  options: Options<Tools, Autonomous>
): Guideline<Id, Tools, Autonomous> => internal.make(id, options) as Guideline<Id, Tools, Autonomous>

/**
 * Reads a guideline from data (a stored draft, a JSON file), or says what was
 * wrong with it.
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromData: (data: unknown) => Result.Result<Any, string> = internal.fromData

/**
 * A guideline as plain JSON data, for storing it or diffing it in review.
 *
 * @since 0.1.0
 * @category formatting
 */
export const toData: (guideline: Any) => unknown = internal.toData

/**
 * An approval rule written as a guideline, for the UI layer's
 * `HumanConfirm.layer(ui, { autoApprove })`: calls of one write tool whose
 * input and context satisfy `when` (read the input as `input.<field>`) are
 * approved without asking, audited as decided by `rule:<id>`. A send tool is
 * a compile error naming it: a send always asks a human.
 *
 * @example
 * import { Effect, Schema } from "effect"
 * import { Tool } from "@graded/core"
 * import { Condition, Guideline } from "@graded/policy"
 * const SubmitTicket = Tool.write("ticket.submit", {
 *   title: "Submit a ticket",
 *   description: "File a ticket.",
 *   input: Schema.Struct({ subject: Schema.String, priority: Schema.Literals(["low", "high"]) }),
 *   output: Schema.String,
 *   run: () => Effect.succeed("T-1")
 * })
 * const lowPriority = Guideline.autoApprove("low-priority-tickets", {
 *   description: "Low-priority tickets are filed without asking.",
 *   tool: SubmitTicket,
 *   when: Condition.equals("input.priority", "low")
 * })
 *
 * @since 0.1.0
 * @category constructors
 */
export const autoApprove = <const T extends Tool.Any>(
  id: string,
  options: {
    readonly description: string
    readonly tool: HumanConfirm.WriteOnly<T>
    readonly when: Condition
  }
): HumanConfirm.AutoApprove => {
  // Checked as a guideline would be: a plain id, a description, a valid condition.
  internal.make(id, { description: options.description, when: options.when, tools: ["(rule)"] })
  const when = options.when
  return HumanConfirm.autoApprove(
    id,
    options.tool as unknown as HumanConfirm.WriteTool,
    (input, context) => evaluate(when, { ...context, input }, undefined).holds
  )
}
