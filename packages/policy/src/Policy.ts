/**
 * A policy: guidelines compiled once into a permission graph (for each tool,
 * which guidelines authorize or forbid it, under which conditions), and
 * evaluated each turn against the invocation context. As a layer it adds a
 * core `Guard`: a tool reaches a model, or a human's button, only when a
 * matched guideline authorizes it, and every tool left out is audited with
 * why. Without the layer, graded behaves as it does without this package.
 *
 * @since 0.1.0
 */
import { Effect, type Layer, Option, Result, Schema } from "effect"
import { Guard, LanguageModel, type Tool, type Toolkit } from "@graded/core"
import type { Subject } from "./Condition.js"
import * as Check from "./Check.js"
import type { Contract } from "./Contract.js"
import * as Fallback from "./Fallback.js"
import type * as Guideline from "./Guideline.js"
import { type FallbackGate, make as makeGuard } from "./internal/guard.js"
import * as internal from "./internal/policy.js"
import { openOnAbsentFacts } from "./internal/absentFact.js"
import * as review_ from "./internal/review.js"
import * as state from "./internal/state.js"
import type * as Manifest from "./Manifest.js"
import type * as Review from "./Review.js"

/**
 * What `Policy.make` takes beside the guidelines.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options<T extends Toolkit.Any> {
  readonly toolkit: T
  /** Preconditions (and declared failures) per tool. */
  readonly contracts?: ReadonlyArray<Contract> | undefined
  /** Tenants where a tool no guideline names is on (for development); everywhere else it is off. */
  readonly testTenants?: ReadonlyArray<string> | undefined
  /**
   * The values contexts can hold (roles, pages, tenants, features, consents,
   * facts): `Policy.check` treats a declared path as closed, so a guideline
   * whose condition no declared value meets is reported unreachable.
   */
  readonly declared?: Check.Declared | undefined
  /**
   * Read tools that may run when no guideline matches, counted against quotas
   * and queued for human review in the `Fallback.Store` in scope (no store:
   * they do not run). See `Fallback.config`.
   */
  readonly fallback?:
    | (Fallback.Config & { readonly tools: ReadonlyArray<Toolkit.Tools<T>[number]["name"]> })
    | undefined
  /**
   * The four-question contract review (`Review.run`, with this policy's
   * contracts), run by default: a tool that fails it is left out, with the
   * gate `policy:review`, everywhere but a test tenant. `false` turns it off
   * (`Policy.review` still reports, with the defaults).
   */
  readonly review?: Omit<Review.Options, "contracts"> | false | undefined
}

/**
 * A compiled policy.
 *
 * @since 0.1.0
 * @category models
 */
export interface Policy<T extends Toolkit.Any = Toolkit.Any> {
  readonly toolkit: T
  readonly guidelines: ReadonlyArray<Guideline.Any>
  readonly contracts: ReadonlyArray<Contract>
  readonly testTenants: ReadonlyArray<string>
  readonly declared: Check.Declared | undefined
  /** The permission graph: for each tool, the guidelines that authorize it and those that forbid it. */
  readonly graph: ReadonlyMap<
    string,
    { readonly authorizedBy: ReadonlyArray<string>; readonly forbiddenBy: ReadonlyArray<string> }
  >
}

/**
 * Why a tool is left out, as a kind; the audit's gate is `policy:<kind>`.
 *
 * @since 0.1.0
 * @category models
 */
export type Kind = internal.Kind

/**
 * One turn's candidate set: the tools offered, each tool left out with why
 * (and the guidelines that would have authorized it), the guidelines in
 * force and how each matched, and whether the fallback applies.
 *
 * @since 0.1.0
 * @category models
 */
export type Evaluation = internal.Evaluation

/**
 * Thrown by `Policy.make` for a policy that cannot be compiled: a guideline
 * naming a tool the toolkit lacks, an autonomous guideline authorizing a
 * write or send, two guidelines with one id, a contract or fallback that does
 * not fit; the message names the guideline and the tool.
 *
 * @since 0.1.0
 * @category errors
 */
export const InvalidPolicy = internal.InvalidPolicy

/**
 * The message a policy gets at compile time for an autonomous guideline that
 * authorizes a write or send tool.
 *
 * @since 0.1.0
 * @category utility types
 */
export type AutonomousGrade<Id extends string, Name extends string, G extends string> =
  `guideline ${Id} is autonomous but authorizes ${Name} (${G}): a guideline cannot lift a grade; only HumanConfirm can`

/**
 * The message a policy gets at compile time for a guideline naming a tool
 * its toolkit does not have.
 *
 * @since 0.1.0
 * @category utility types
 */
export type UnknownTool<Id extends string, Name extends string> =
  `guideline ${Id} names ${Name}, which is not in the toolkit`

type GradeIn<Tools extends ReadonlyArray<Tool.Any>, N> = Extract<Tools[number], { readonly name: N }>["grade"]

type OffensesOf<G, Tools extends ReadonlyArray<Tool.Any>> = G extends
  Guideline.Guideline<infer Id, infer Names, infer Autonomous> ? string extends Names ? never
  : [Exclude<Names, Tools[number]["name"]>] extends [never]
    ? [Autonomous] extends [true]
      ? { [N in Names]: GradeIn<Tools, N> extends "read" ? never : AutonomousGrade<Id, N, GradeIn<Tools, N>> }[Names]
    : never
  : UnknownTool<Id, Exclude<Names, Tools[number]["name"]>>
  : never

/**
 * The guidelines when each names tools of the toolkit and no autonomous one
 * authorizes a write or send; otherwise the message naming the guideline,
 * the tool and its grade. Names typed as `string` are checked when the
 * policy is made.
 *
 * @since 0.1.0
 * @category utility types
 */
export type Checked<G extends ReadonlyArray<Guideline.Any>, T extends Toolkit.Any> =
  [OffensesOf<G[number], Toolkit.Tools<T>>] extends [never] ? G : OffensesOf<G[number], Toolkit.Tools<T>>

const fallbacks = new WeakMap<Policy<any>, Fallback.Config>()

const compiledPolicies = new WeakMap<Policy<any>, internal.Compiled>()

/**
 * Compiles guidelines into a policy. Checked at compile time where the names
 * are literal, and at construction for everything (throws `InvalidPolicy`).
 *
 * @example
 * import { Condition, Guideline, Policy } from "@graded/policy"
 * import { Toolkit } from "@graded/core"
 * const policy = Policy.make([], { toolkit: Toolkit.make() })
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = <const G extends ReadonlyArray<Guideline.Any>, T extends Toolkit.Any>(
  guidelines: Checked<G, T>,
  options: Options<T>
): Policy<T> => {
  const reviewOptions = options.review === false ? {} : options.review ?? {}
  const findings = Object.freeze([
    ...review_.reviewToolkit(options.toolkit, { ...reviewOptions, contracts: options.contracts }),
    ...openOnAbsentFacts(guidelines as ReadonlyArray<Guideline.Any>, options.toolkit, options.declared)
  ])
  const enforced = options.review === false ? [] : findings
  const compiled = internal.compile(guidelines as ReadonlyArray<Guideline.Any>, {
    ...options,
    unreviewed: review_.unreviewed(enforced)
  })
  const policy: Policy<T> = Object.freeze({
    toolkit: options.toolkit,
    guidelines: Object.freeze([...(guidelines as ReadonlyArray<Guideline.Any>)]),
    contracts: Object.freeze([...(options.contracts ?? [])]),
    testTenants: Object.freeze([...(options.testTenants ?? [])]),
    declared: options.declared,
    graph: new Map(
      options.toolkit.tools.map((tool) => [tool.name, {
        authorizedBy: compiled.authorizers.get(tool.name)!.map((guideline) => guideline.id),
        forbiddenBy: compiled.forbidders.get(tool.name)!.map((guideline) => guideline.id)
      }])
    )
  })
  compiledPolicies.set(policy, compiled)
  state.remember(policy, { compiled, findings, enforced })
  if (options.fallback !== undefined) fallbacks.set(policy, Fallback.config(options.fallback))
  return policy
}

/**
 * Whether a value is a policy made by `Policy.make` (a config module's
 * `policy` export, say).
 *
 * @since 0.1.0
 * @category guards
 */
export const isPolicy = (u: unknown): u is Policy<Toolkit.Any> => state.isPolicy(u)

/**
 * The four-question review of the policy's tools (`Review.run` with its
 * contracts and review options), and question 5 over its guidelines: a
 * guideline that authorizes a write or send and can hold while a fact its
 * condition reads was never recorded (the fact does not guard the tool
 * there). Each finding names the tool and the question. A tool with a finding is not offered outside a test tenant,
 * unless the policy was made with `review: false`.
 *
 * @since 0.1.0
 * @category review
 */
export const review = (policy: Policy<any>): ReadonlyArray<Review.Finding> => state.findingsOf(policy)

/**
 * The permission manifest of the policy (`Manifest.make`): every tool with
 * its grade, roles, tags, side effects, guidelines, and whether it is on in
 * production and in a test tenant.
 *
 * @since 0.1.0
 * @category review
 */
export const manifest = (policy: Policy<any>): ReadonlyArray<Manifest.Row> => state.manifestOf(policy)

const compiledOf = (policy: Policy<any>): internal.Compiled => {
  const compiled = compiledPolicies.get(policy)
  if (compiled === undefined) throw new InvalidPolicy(undefined, "this policy was not made by Policy.make")
  return compiled
}

/**
 * The candidate set for a context, by data alone (a `text` condition holds
 * only if `texts` says it matched). The same evaluation the layer runs each
 * turn after the registry's own gates.
 *
 * @since 0.1.0
 * @category evaluation
 */
export const evaluate = (
  policy: Policy<any>,
  context: Subject,
  texts: ReadonlyMap<string, boolean> = new Map()
): Evaluation => internal.evaluateAll(compiledOf(policy), context, texts)

/**
 * The policy as a core `Guard`, for `Guard.layer`. What is in scope when it
 * is made is used: a `LanguageModel` matches the guidelines' `text`
 * conditions; a `Fallback.Store` counts and queues fallback runs.
 *
 * @since 0.1.0
 * @category constructors
 */
export const guard = (policy: Policy<any>): Effect.Effect<Guard.Guard> =>
  Effect.gen(function*() {
    const model = yield* Effect.serviceOption(LanguageModel.LanguageModel)
    const store = yield* Effect.serviceOption(Fallback.Store)
    const config = fallbacks.get(policy)
    // An input the tool would refuse costs no quota and queues no case: the
    // registry refuses it as invalid next.
    const gate: FallbackGate | undefined = config === undefined || Option.isNone(store) ? undefined : (tool, input) =>
      Result.isFailure(Schema.decodeUnknownResult(tool.input, { onExcessProperty: "error" })(input))
        ? Effect.succeed(undefined)
        : Effect.map(
          Effect.provideService(Fallback.admit(config, tool.name, input), Fallback.Store, store.value),
          (admission): Guard.Verdict | undefined =>
            admission.granted ? undefined : {
              gate: "policy:fallback-quota",
              reason: `${admission.answer} (${admission.reason})`
            }
        )
    return makeGuard(compiledOf(policy), model, gate)
  })

/**
 * Puts a policy in force for the effect it is provided to: every offer and
 * every call the registry dispatches goes through it, after the registry's
 * own gates. Guards only add up: code inside cannot remove it.
 *
 * @example
 * import { Effect } from "effect"
 * import { Toolkit } from "@graded/core"
 * import { Policy } from "@graded/policy"
 * const policy = Policy.make([], { toolkit: Toolkit.make() })
 * const program = Effect.void.pipe(Effect.provide(Policy.layer(policy)))
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (policy: Policy<any>): Layer.Layer<never> => Guard.layer(guard(policy))

/**
 * Conflict detection over the policy's guidelines and its declared values:
 * authorize/forbid conflicts, cycles, missing names, unreachable guidelines,
 * near-duplicates; each finding names the guidelines and an example context.
 *
 * @since 0.1.0
 * @category evaluation
 */
export const check = (policy: Policy<any>): ReadonlyArray<Check.Finding> =>
  Check.run(policy.guidelines, policy.declared)
