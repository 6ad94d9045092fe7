/**
 * The one place a human's decision becomes a capability. `HumanConfirm.layer`
 * provides `WriteCapability` and `SendCapability` from a UI that shows the
 * human the exact payload and returns their decision.
 *
 * A confirmation is decided in this order:
 * 1. refused, before anything is shown, in a model's fiber or inside a read
 *    tool's own code, whatever layer is in scope, and by a layer that was
 *    built in such a place, wherever it was carried to;
 * 2. `confirm-requested` is audited with the payload as it will be shown;
 * 3. for a write only, the layer's `autoApprove` rules for that very tool, in
 *    order: the first whose predicate answers `true` approves, audited as
 *    decided by `rule:<id>`, and the UI is not asked;
 * 4. otherwise the UI asks the human: approve, approve an edit (decoded
 *    again), or reject.
 *
 * @since 0.1.0
 */
import { Context, Data, Effect, Layer } from "effect"
import type { HumanTrigger, NeedsHumanConfirm, SendCapability, WriteCapability } from "./Capability.js"
import type { Confirmable } from "./Grade.js"
import {
  grant,
  HumanTriggerTag,
  OnlyGradedLayersGrantThis,
  sendCapability,
  SendCapabilityTag,
  taint,
  writeCapability,
  WriteCapabilityTag
} from "./internal/capability.js"
import * as rules from "./internal/autoApprove.js"
import { taintHere } from "./internal/authority.js"
import { confirmWith } from "./internal/confirm.js"
import { isMade } from "./internal/tool.js"
import type * as Invocation from "./Invocation.js"
import * as Printable from "./Printable.js"
import type * as Tool from "./Tool.js"
import { sealed } from "./internal/seal.js"
import { freshLayer, freshService } from "./internal/freshLayer.js"

/**
 * What the human decided.
 *
 * @since 0.1.0
 * @category models
 */
export type Decision = Data.TaggedEnum<{
  /** Go ahead; with `payload`, go ahead with this edited payload instead. */
  Approve: { readonly by: string; readonly payload?: unknown }
  Reject: { readonly by: string; readonly reason: string }
}>

const Decision = Data.taggedEnum<Decision>()

/**
 * A decision to go ahead, for a UI to return; with `payload`, the human's edit,
 * which HumanConfirm decodes again with the tool's schema first.
 *
 * @since 0.1.0
 * @category constructors
 */
export const approve = (by: string, payload?: unknown): Decision =>
  payload === undefined ? Decision.Approve({ by }) : Decision.Approve({ by, payload })

/**
 * A decision not to go ahead: nothing runs, the reason is audited, and the
 * caller gets `ToolError.Rejected`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const reject = (by: string, reason: string): Decision => Decision.Reject({ by, reason })

/**
 * What the human is shown.
 *
 * @since 0.1.0
 * @category models
 */
export interface View {
  readonly tool: string
  readonly grade: Confirmable
  readonly title: string
  readonly description: string
  /** The exact payload, encoded with the tool's schema. */
  readonly payload: unknown
  readonly actor: string | undefined
  readonly traceId: string | undefined
  /**
   * Where the call was made inside a sub-agent (`Agent.tool`): the sub-agents'
   * names from the run's own call down, the tool being this view's `tool`.
   * Absent for a call the run's own model made.
   *
   * @since 0.4.0
   */
  readonly path?: ReadonlyArray<string> | undefined
  /** The JSON Schema of the payload, for a UI that builds an edit form. */
  readonly schema: unknown
  /** Checks an edit before answering; HumanConfirm checks it again regardless. */
  readonly check: (edited: unknown) => Effect.Effect<void, string>
}

/**
 * A user interface that asks a human.
 *
 * @since 0.1.0
 * @category models
 */
export interface UI {
  readonly confirm: (view: View) => Effect.Effect<Decision>
}

// ---------------------------------------------------------------------------
// Approving by rule
// ---------------------------------------------------------------------------

/**
 * The key that marks a rule made by `HumanConfirm.autoApprove`.
 *
 * @since 0.2.0
 * @category symbols
 */
export const AutoApproveTypeId: unique symbol = Symbol.for("@graded/core/HumanConfirm/AutoApprove")

/**
 * @since 0.2.0
 * @category symbols
 */
export type AutoApproveTypeId = typeof AutoApproveTypeId

/**
 * A rule, owned by the UI layer, that approves certain calls of one write
 * tool without asking the human: made by `HumanConfirm.autoApprove`, given to
 * `HumanConfirm.layer(ui, { autoApprove })`. Its predicate is kept by graded:
 * a value shaped like a rule approves nothing.
 *
 * @since 0.2.0
 * @category models
 */
export interface AutoApprove {
  readonly [AutoApproveTypeId]: AutoApproveTypeId
  /** Recorded as the decider, `rule:<id>`, of every call it approves. */
  readonly id: string
  /** The one write tool whose calls it may approve (that tool object, not its name). */
  readonly tool: Tool.Any
}

/**
 * Whether a value is a rule made by `HumanConfirm.autoApprove`.
 *
 * @since 0.2.0
 * @category guards
 */
export const isAutoApprove = (u: unknown): u is AutoApprove => rules.ruleOf(u) !== undefined

/**
 * The decider an audit entry and a proposal record for a call a rule
 * approved: `rule:<id>`.
 *
 * @since 0.2.0
 * @category constructors
 */
export const ruleBy: <const Id extends string>(id: Id) => `rule:${Id}` = rules.ruleBy

type Why<G extends string> = G extends "send" ? "a send always asks a human"
  : G extends "read" ? "a read asks no one"
  : "only a tool made by Tool.write can be approved by rule"

/**
 * The compile error for a rule given a tool that is not a write: it names the
 * tool and its grade, and says that a send always asks a human.
 *
 * @since 0.2.0
 * @category errors
 */
export type AutoApproveViolation<Name extends string, G extends string> = G extends string
  ? `HumanConfirm.autoApprove takes one write tool: ${Name} is a ${G} tool, and ${Why<G>}`
  : never

/**
 * The same message at run time, for a tool whose grade the compiler did not
 * see (a cast, a tool typed `Tool.Any`).
 *
 * @since 0.2.0
 * @category errors
 */
export const autoApproveViolation = <const Name extends string, const G extends string>(
  name: Name,
  grade: G
): AutoApproveViolation<Name, G> =>
  `HumanConfirm.autoApprove takes one write tool: ${name} is a ${grade} tool, and ${
    grade === "send" ? "a send always asks a human"
      : grade === "read" ? "a read asks no one"
      : "only a tool made by Tool.write can be approved by rule"
  }` as AutoApproveViolation<Name, G>

type Label<N extends string> = string extends N
  ? "a tool typed as Tool.Any (its name and grade unknown to the compiler)"
  : N

/**
 * The compile error for a tool that may be `undefined`, such as what
 * `toolkit.get(name)` returns: a rule is made for one tool object.
 *
 * @since 0.2.0
 * @category errors
 */
export type MaybeUndefinedTool =
  "HumanConfirm.autoApprove takes one write tool: this one may be undefined (toolkit.get finds a tool by name when the program runs, typed as any tool of the toolkit): pass the write tool itself"

// Each tool of T (one, or a union of tools) that is not a write, by the
// grade it may not have.
type Offense<T> = T extends undefined ? MaybeUndefinedTool
  : T extends Tool.Any ? [T["grade"]] extends [never] ? AutoApproveViolation<Label<T["name"]>, "never">
    : [T["grade"]] extends ["write"] ? never
    : AutoApproveViolation<Label<T["name"]>, Exclude<T["grade"], "write">>
  : never

/**
 * `T` when it is a write tool; otherwise the message naming each tool that
 * is not and its grade, so the error lands on the tool argument.
 *
 * @since 0.2.0
 * @category utility types
 */
export type WriteOnly<T> = [Offense<T>] extends [never] ? T
  // `T & WriteTool` is never for a tool that is not a write, and lets code
  // generic in a write tool pass its own `T`.
  : Offense<T> | (T & WriteTool)

/**
 * A write tool, for constraints: what `HumanConfirm.autoApprove` takes.
 *
 * @since 0.2.0
 * @category models
 */
export interface WriteTool extends Tool.Tool<string, "write", any, any, any, any> {}

/**
 * The type of `HumanConfirm.autoApprove`: one signature, so that a tool that
 * is not a write (or may be undefined) is refused with graded's message,
 * naming the tool and its grade, rather than "No overload matches this call".
 *
 * @since 0.2.0
 * @category models
 */
export interface AutoApproveConstructor {
  <const T extends Tool.Any | undefined>(
    id: string,
    tool: WriteOnly<T>,
    approves: (input: Tool.Input<NonNullable<T>>, context: Invocation.Context) => boolean
  ): AutoApprove
}

/**
 * Thrown where a rule or a layer's rules are made with what the type system
 * could not check: an id that is not 1 to 100 letters, digits and `._:-`
 * (starting with a letter or digit), a tool that is not a write made by
 * `Tool.write`, a predicate that is not a function, a value not made by
 * `HumanConfirm.autoApprove`, or two rules of one id in one layer.
 *
 * @since 0.2.0
 * @category errors
 */
export class InvalidRule extends Data.TaggedError("@graded/core/HumanConfirm/InvalidRule")<{
  readonly rule: string
  readonly message: string
}> {}

const shownId = (id: unknown): string => typeof id === "string" ? Printable.name(id) : `(a ${typeof id})`

const invalid = (id: unknown, problem: string): InvalidRule =>
  new InvalidRule({ rule: shownId(id), message: `HumanConfirm.autoApprove rule '${shownId(id)}': ${problem}` })

/**
 * A rule that approves a call of `tool`, one write tool, without asking the
 * human, when `approves(input, context)` answers `true`: `input` is the
 * decoded input of that call (a copy; changing it changes nothing), `context`
 * the invocation context of the confirmation. Anything else it answers, or a
 * throw, is no match: the next rule is tried, then the human is asked. A call
 * it approves is audited as decided by `rule:<id>`. A predicate that reads a
 * fact of `context.facts` that was never recorded approves nothing, whatever
 * it answers: absent is not "not frozen". A send tool (or a read
 * tool) does not compile: a send always asks a human.
 *
 * @example
 * import { Effect, Schema } from "effect"
 * import { HumanConfirm, Tool } from "@graded/core"
 *
 * const FileTicket = Tool.write("ticket.file", {
 *   title: "File a ticket",
 *   description: "File a support ticket.",
 *   input: Schema.Struct({ subject: Schema.String, priority: Schema.Literals(["low", "high"]) }),
 *   output: Schema.Struct({ id: Schema.String }),
 *   run: () => Effect.succeed({ id: "T-1" })
 * })
 * const lowPriority = HumanConfirm.autoApprove("low-priority-tickets", FileTicket, (input) => input.priority === "low")
 * const layer = HumanConfirm.layer(HumanConfirm.scripted([]), { autoApprove: [lowPriority] })
 *
 * @since 0.2.0
 * @category constructors
 */
export const autoApprove: AutoApproveConstructor = (
  id: string,
  tool: unknown,
  approves: (input: any, context: Invocation.Context) => boolean
): AutoApprove => {
  if (typeof id !== "string" || !rules.idPattern.test(id)) {
    throw invalid(id, "an id is 1 to 100 letters, digits and . _ : -, starting with a letter or a digit")
  }
  if (typeof tool !== "object" || tool === null || !isMade(tool)) {
    throw invalid(id, "its tool was not made by Tool.write (a copy or a changed tool loses its gates)")
  }
  const made = tool as Tool.Any
  if (made.grade !== "write") throw invalid(id, autoApproveViolation(made.name, made.grade))
  if (typeof approves !== "function") throw invalid(id, "approves is not a function")
  return rules.register(
    { [AutoApproveTypeId]: AutoApproveTypeId, id, tool: made } as AutoApprove,
    { id, tool: made, approves: approves as rules.Rule["approves"] }
  )
}

/**
 * What `HumanConfirm.layer` takes beside the UI.
 *
 * @since 0.2.0
 * @category models
 */
export interface Options {
  /**
   * Rules that approve certain write calls without asking, tried in order
   * for the tool of each confirmation; the first that answers `true` decides.
   */
  readonly autoApprove?: ReadonlyArray<AutoApprove> | undefined
}

const indexOf = (options: Options | undefined): rules.Index => {
  const list = options?.autoApprove ?? []
  if (!Array.isArray(list)) throw invalid(undefined, "autoApprove is not a list of rules")
  const ids = new Set<string>()
  return rules.index(list.map((value: unknown) => {
    const rule = rules.ruleOf(value)
    const id = typeof value === "object" && value !== null ? (value as { id?: unknown }).id : value
    if (rule === undefined) throw invalid(id, "it was not made by HumanConfirm.autoApprove")
    if (ids.has(rule.id)) throw invalid(rule.id, "two rules of one layer have this id")
    ids.add(rule.id)
    return rule
  }))
}

/**
 * Provides `WriteCapability` and `SendCapability` through a UI (and
 * `NeedsHumanConfirm` for any tool, what `Agent.supervised` and
 * `Proposal.approve` name their writes and sends with). Every write
 * and every send asks the human, shown what graded computed from the tool and
 * the payload, except a write that one of `options.autoApprove`'s rules
 * approves (audited as decided by `rule:<id>`). A send always asks. A fiber
 * running for a model is refused whatever layer is in scope, and so is a read
 * tool's own code (a read tool that provides this layer itself gains
 * nothing, rules or not). Throws `InvalidRule` for a value among the rules
 * that `HumanConfirm.autoApprove` did not make, or two rules of one id.
 *
 * @example
 * import { Effect } from "effect"
 * import { HumanConfirm } from "@graded/core"
 *
 * const ui = HumanConfirm.scripted([HumanConfirm.approve("agent:alice")])
 * const layer = HumanConfirm.layer(ui)
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (
  ui: UI,
  options?: Options
): Layer.Layer<WriteCapability | SendCapability | NeedsHumanConfirm<string>> => {
  const auto = indexOf(options)
  // The UI's `confirm` as it is now: a tool's code that reaches the app's UI
  // object and swaps the function on it later is not asked instead of it.
  const asked: UI = Object.freeze({ confirm: ui.confirm.bind(ui) })
  // The capabilities are made when the layer is built, in the fiber that
  // builds it: made in a model's run or inside a tool's own code, they are
  // tainted there, so carrying them into a caller's context gains nothing.
  // The layer is sealed: an app keeps it in a module, where a tool's code can
  // import it and rewrite what its build runs.
  return sealed(freshLayer(() =>
    Effect.map(taintHere, (tainted) => {
      const authority = { confirm: confirmWith(asked, auto, tainted) }
      return Context.make(WriteCapabilityTag, writeCapability(authority)).pipe(
        Context.add(SendCapabilityTag, sendCapability(authority))
      )
    })
    // NeedsHumanConfirm is a type only: this layer is what it asks for.
  )) as Layer.Layer<WriteCapability | SendCapability | NeedsHumanConfirm<string>>
}

/**
 * A scripted UI: it answers with its decisions in order and keeps what it
 * was shown. Past the last decision it rejects, so a script that runs short
 * never approves by accident.
 *
 * @since 0.1.0
 * @category models
 */
export interface Scripted extends UI {
  readonly seen: ReadonlyArray<View>
}

/**
 * Makes a UI that answers from a list, for tests and demos: each confirmation
 * takes the next decision, or calls it with the view.
 *
 * @example
 * import { HumanConfirm } from "@graded/core"
 * const ui = HumanConfirm.scripted([
 *   HumanConfirm.approve("agent:alice"),
 *   (view) => HumanConfirm.reject("agent:alice", `not sending ${view.tool} today`)
 * ])
 *
 * @since 0.1.0
 * @category constructors
 */
export const scripted = (decisions: ReadonlyArray<Decision | ((view: View) => Decision)>): Scripted => {
  const seen: Array<View> = []
  const ui: Scripted = {
    seen,
    confirm: (view) =>
      Effect.sync(() => {
        const next = decisions[seen.length]
        seen.push(view)
        if (next === undefined) return reject("scripted-ui", "the script has no decision left")
        return typeof next === "function" ? next(view) : next
      })
  }
  return Object.freeze(ui)
}

/**
 * Provides `HumanTrigger`: for UI entry points (a shortcut, a CLI command, a
 * click handler) that start work on a human's behalf.
 *
 * @example
 * import { HumanConfirm } from "@graded/core"
 * const started = HumanConfirm.trigger({ by: "agent:alice", via: "shortcut" })
 *
 * @since 0.1.0
 * @category layers
 */
export const trigger = (options: { readonly by: string; readonly via: string }): Layer.Layer<HumanTrigger> =>
  // Built where a human's code runs, or tainted; sealed (see `layer`).
  sealed(freshService(
    HumanTriggerTag,
    () =>
      Effect.map(taintHere, (tainted) =>
        taint(grant({ [OnlyGradedLayersGrantThis]: "HumanTrigger", by: options.by, via: options.via }), tainted))
  ))
