/**
 * The fallback: when no guideline matches, a few general read tools may still
 * run, counted and watched. It keeps the rules governed rather than widening
 * them quietly:
 *
 * 1. Only the read tools named in `Fallback.config` run (the policy checks
 *    names and grades), in a sandboxed context.
 * 2. Each run counts against two quotas, per trace and per tenant per day, in
 *    the `Fallback.Store` (in SQL, where proposals are stored); counting and
 *    queueing are one step, so two callers racing for the last slot never
 *    both get it.
 * 3. Every run is queued as a review case; past either quota the model gets the
 *    configured fixed answer instead, and the case goes to the queue all the
 *    same, marked `overQuota`.
 * 4. A human decides each case: reject it, or approve it into a guideline
 *    draft. A draft is only a draft until a human approves it; approved ones
 *    are listed by `Fallback.approvedGuidelines` for the app to load into its
 *    next `Policy.make`. Nothing changes a running policy.
 * 5. The deciding human is the `actor` of the current invocation context; a
 *    decision is refused where the fiber works for a model (autonomous) or no
 *    actor is known. Each decision is audited.
 *
 * @since 0.1.0
 */
import { Context, Effect, type Layer } from "effect"
import type * as Guideline from "./Guideline.js"
import type { AlreadyDecided, InvalidDecision, NotFound, Refused } from "./internal/fallback.js"
import * as internal from "./internal/fallback.js"
import { Invocation } from "@graded/core"

/**
 * What the fallback may do: the read tools it may run, its two quotas, and
 * the fixed text the model gets past them.
 *
 * @since 0.1.0
 * @category models
 */
export interface Config {
  /** Read tools only, named as in the toolkit; `Policy.make` checks names and grades. */
  readonly tools: ReadonlyArray<string>
  /** Fallback runs allowed in one trace. */
  readonly perTrace: number
  /** Fallback runs allowed for one tenant in one UTC day. */
  readonly perTenantPerDay: number
  /** What the model gets instead of a run past either quota. */
  readonly answer: string
}

/**
 * Thrown where a fallback is configured wrongly; names the field (`field`)
 * and what was wrong with it (`issue`).
 *
 * @since 0.1.0
 * @category errors
 */
export { InvalidConfig } from "./internal/fallback.js"

/**
 * Checks a fallback's configuration: at least one tool name, quotas that are
 * positive whole numbers, a non-empty answer. Throws `InvalidConfig`.
 *
 * @example
 * import { Fallback } from "@graded/policy"
 * const fallback = Fallback.config({
 *   tools: ["kb.search", "faq.lookup"],
 *   perTrace: 2,
 *   perTenantPerDay: 50,
 *   answer: "I cannot help with that here; a colleague will look at your request."
 * })
 *
 * @since 0.1.0
 * @category constructors
 */
export const config = <const Name extends string>(
  config: Config & { readonly tools: ReadonlyArray<Name> }
): Config & { readonly tools: ReadonlyArray<Name> } =>
  internal.config(config) as Config & { readonly tools: ReadonlyArray<Name> }

/**
 * No review case or draft has this id.
 *
 * @since 0.1.0
 * @category errors
 */
export { NotFound } from "./internal/fallback.js"

/**
 * The case or draft was decided already: the first decision stands; names
 * its state, who decided and when.
 *
 * @since 0.1.0
 * @category errors
 */
export { AlreadyDecided } from "./internal/fallback.js"

/**
 * A review decision no human made: the fiber works for a model
 * (`autonomous`), or the invocation context names no `actor` (`no-actor`).
 *
 * @since 0.1.0
 * @category errors
 */
export { Refused } from "./internal/fallback.js"

/**
 * A decision that cannot be stored as given: a guideline draft that is not a
 * valid guideline, a rejection with no reason. Nothing was stored.
 *
 * @since 0.1.0
 * @category errors
 */
export { InvalidDecision } from "./internal/fallback.js"

/**
 * The context a fallback run happened in, as the reviewer sees it.
 *
 * @since 0.1.0
 * @category models
 */
export interface ContextSummary {
  readonly actor?: string | undefined
  readonly role?: string | undefined
  readonly page?: string | undefined
  readonly features?: ReadonlyArray<string> | undefined
  readonly autonomous: boolean
}

/**
 * One fallback run asked for: where it counts and what the reviewer sees.
 * `day` is the UTC date (`2026-11-30`) the tenant's quota counts in.
 *
 * @since 0.1.0
 * @category models
 */
export interface Request {
  readonly traceId: string
  readonly tenant: string
  readonly day: string
  readonly tool: string
  readonly input: unknown
  readonly context: ContextSummary
}

/**
 * The two quotas a run counts against.
 *
 * @since 0.1.0
 * @category models
 */
export interface Limits {
  readonly perTrace: number
  readonly perTenantPerDay: number
}

/**
 * What `take` answers: whether the run may go ahead, its review case, and the
 * quotas used after it (a refused run uses none).
 *
 * @since 0.1.0
 * @category models
 */
export interface Taken {
  readonly granted: boolean
  readonly case: string
  readonly usedTrace: number
  readonly usedTenantDay: number
}

/**
 * A review case's state: `pending` until a human drafts a guideline from it
 * (`drafted`) or rejects it.
 *
 * @since 0.1.0
 * @category models
 */
export type CaseStatus = "pending" | "drafted" | "rejected"

/**
 * Who decided, when, and why.
 *
 * @since 0.1.0
 * @category models
 */
export interface Decision {
  readonly by: string
  /** ISO time. */
  readonly at: string
  readonly reason?: string | undefined
}

/**
 * A fallback run (or a refused one, `overQuota`) waiting for review.
 *
 * @since 0.1.0
 * @category models
 */
export interface Case {
  /** `c-<number>`. */
  readonly id: string
  readonly tool: string
  readonly input: unknown
  readonly context: ContextSummary
  readonly traceId: string
  readonly tenant: string
  readonly day: string
  /** When it was queued (ISO). */
  readonly at: string
  /** True when the run was refused past a quota and the model got the fixed answer. */
  readonly overQuota: boolean
  readonly status: CaseStatus
  readonly decision?: Decision | undefined
  /** The guideline draft made from it, once drafted. */
  readonly draft?: string | undefined
}

/**
 * A guideline draft's state: `draft` until a human approves or rejects it.
 *
 * @since 0.1.0
 * @category models
 */
export type DraftStatus = "draft" | "approved" | "rejected"

/**
 * A guideline induced from a review case; it governs nothing until approved
 * and loaded into a `Policy.make`.
 *
 * @since 0.1.0
 * @category models
 */
export interface Draft {
  /** `d-<number>`. */
  readonly id: string
  /** The review case it came from. */
  readonly case: string
  /** The case's tool. */
  readonly tool: string
  /** The guideline, as data (`Guideline.toData`). */
  readonly guideline: unknown
  readonly status: DraftStatus
  /** Who drafted it, and when. */
  readonly drafted: Decision
  readonly decision?: Decision | undefined
}

/**
 * Where fallback quotas, review cases and guideline drafts are kept.
 * `Fallback.memory` here; `SqlFallbackStore` (and `Sql.sqlite`,
 * `Sql.postgres`) in @graded/sql.
 *
 * @since 0.1.0
 * @category services
 */
export class Store extends Context.Service<Store, Store.Service>()("@graded/policy/FallbackStore") {}

/**
 * @since 0.1.0
 */
export declare namespace Store {
  /**
   * Every way a review decision can fail.
   *
   * @since 0.1.0
   * @category models
   */
  export type Failure = NotFound | AlreadyDecided | Refused | InvalidDecision

  /**
   * What a store does. Every decision reads its human from the invocation
   * context and is refused (`Refused`) for a model's fiber or with no actor.
   *
   * @since 0.1.0
   * @category models
   */
  export interface Service {
    /** Counts one run against both quotas and queues its case, in one step. */
    readonly take: (request: Request, limits: Limits) => Effect.Effect<Taken>
    readonly cases: (filter?: { readonly status?: CaseStatus | undefined }) => Effect.Effect<ReadonlyArray<Case>>
    readonly case: (id: string) => Effect.Effect<Case, NotFound>
    /** Approves a case into a guideline draft (checked with `Guideline.fromData`). */
    readonly approve: (
      id: string,
      decision: { readonly guideline: unknown }
    ) => Effect.Effect<
      { readonly case: Case; readonly draft: Draft },
      NotFound | AlreadyDecided | Refused | InvalidDecision
    >
    readonly reject: (
      id: string,
      decision: { readonly reason: string }
    ) => Effect.Effect<Case, NotFound | AlreadyDecided | Refused | InvalidDecision>
    readonly drafts: (filter?: { readonly status?: DraftStatus | undefined }) => Effect.Effect<ReadonlyArray<Draft>>
    readonly draft: (id: string) => Effect.Effect<Draft, NotFound>
    /** Approves a draft; its guideline is returned for the app's next `Policy.make`. */
    readonly approveDraft: (
      id: string
    ) => Effect.Effect<Guideline.Any, NotFound | AlreadyDecided | Refused | InvalidDecision>
    readonly rejectDraft: (
      id: string,
      decision: { readonly reason: string }
    ) => Effect.Effect<Draft, NotFound | AlreadyDecided | Refused | InvalidDecision>
  }
}

/**
 * The storage a store is made of, for store implementations
 * (`SqlFallbackStore`): each transition is conditional (a case leaves
 * `pending`, a draft leaves `draft`, once) and takes the decider explicitly.
 * `Fallback.makeStore` puts the guards in front: apps never see this.
 *
 * @since 0.1.0
 * @category models
 */
export interface Backend {
  readonly take: (request: Request, limits: Limits, at: string) => Effect.Effect<Taken>
  readonly cases: (filter?: { readonly status?: CaseStatus | undefined }) => Effect.Effect<ReadonlyArray<Case>>
  readonly case: (id: string) => Effect.Effect<Case, NotFound>
  /** Moves a pending case to `drafted` and adds its draft, in one step. */
  readonly draftCase: (
    id: string,
    guideline: unknown,
    decision: Decision
  ) => Effect.Effect<{ readonly case: Case; readonly draft: Draft }, NotFound | AlreadyDecided>
  readonly rejectCase: (id: string, decision: Decision) => Effect.Effect<Case, NotFound | AlreadyDecided>
  readonly drafts: (filter?: { readonly status?: DraftStatus | undefined }) => Effect.Effect<ReadonlyArray<Draft>>
  readonly draft: (id: string) => Effect.Effect<Draft, NotFound>
  readonly decideDraft: (
    id: string,
    status: "approved" | "rejected",
    decision: Decision
  ) => Effect.Effect<Draft, NotFound | AlreadyDecided>
}

/**
 * Makes a store from its storage, with the guards every store has: the
 * decider is the context's human, drafts are valid guidelines, decisions are
 * audited.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeStore = (backend: Backend): Store.Service => Object.freeze(internal.makeStore(backend))

/**
 * A store in memory, for tests and demos: it forgets everything when the
 * process ends.
 *
 * @example
 * import { Effect } from "effect"
 * import { Fallback } from "@graded/policy"
 * const pending = Fallback.Store.use((store) => store.cases({ status: "pending" })).pipe(
 *   Effect.provide(Fallback.memory)
 * )
 *
 * @since 0.1.0
 * @category layers
 */
export const memory: Layer.Layer<Store> = Invocation.freshLayer(
  Store,
  () => Effect.sync(() => makeStore(internal.memoryBackend()))
)

/**
 * What `admit` answers: run the tool (its case is queued), or give the model
 * the fixed answer (the case is queued, `overQuota`).
 *
 * @since 0.1.0
 * @category models
 */
export type Admission =
  | { readonly granted: true; readonly case: string }
  | {
    readonly granted: false
    readonly case: string
    readonly answer: string
    /** Why, for the audit: which quota is used up, and the case queued. */
    readonly reason: string
  }

/**
 * Admits one call of a fallback tool: counts it against the quotas of the
 * current trace and tenant (from `Invocation.current`, `(none)` when absent;
 * the day from the Clock, in UTC) and queues its review case. Past a quota
 * the answer is `config.answer`, with the reason for the audit (the policy
 * records the refusal, gate `policy:fallback-quota`). A tool outside `config.tools` is a defect of the caller.
 *
 * @example
 * import { Effect } from "effect"
 * import { Fallback } from "@graded/policy"
 * const fallback = Fallback.config({ tools: ["kb.search"], perTrace: 2, perTenantPerDay: 50, answer: "Not here." })
 * const admitted = Fallback.admit(fallback, "kb.search", { query: "opening hours" }).pipe(
 *   Effect.provide(Fallback.memory)
 * )
 *
 * @since 0.1.0
 * @category constructors
 */
export const admit = (config: Config, tool: string, input: unknown): Effect.Effect<Admission, never, Store> =>
  internal.admit(Store, config, tool, input)

/**
 * The guidelines of every approved draft, for the app to load into its next
 * `Policy.make`. A stored draft that no longer reads as a guideline fails
 * with `InvalidDecision` naming it.
 *
 * @example
 * import { Effect } from "effect"
 * import { Fallback } from "@graded/policy"
 * const learned = Fallback.Store.use(Fallback.approvedGuidelines).pipe(Effect.provide(Fallback.memory))
 *
 * @since 0.1.0
 * @category constructors
 */
export const approvedGuidelines: (
  store: Store.Service
) => Effect.Effect<ReadonlyArray<Guideline.Any>, InvalidDecision> = internal.approvedGuidelines

// Sealed where they are made (Invocation.seal): each is shared by every
// fiber, and a tool's code that finds one must not rewrite it in place.
Invocation.seal(Store)
Invocation.seal(memory)
