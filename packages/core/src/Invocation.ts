/**
 * The context of one invocation: who or what asked, from where, and whether
 * a model chose the call on its own. Every gate reads it.
 *
 * @since 0.1.0
 */
import { Context as Services, Effect, type Layer, type Scope } from "effect"
import { dual } from "effect/Function"
import * as internal from "./internal/authority.js"
import * as fresh from "./internal/freshLayer.js"
import { seal as sealValue, sealed as sealedValue, sealShared } from "./internal/seal.js"

/**
 * Who or what is calling, from which page, with which features, and whether a
 * model chose the call; every gate and audit entry reads it.
 *
 * @since 0.1.0
 * @category models
 */
export interface Context {
  /**
   * True when a model, not a human, chose this call. Once set it stays set for
   * the work inside: the gates read graded's own mark of the fiber, which code
   * running in it cannot lift, not this field.
   */
  readonly autonomous: boolean
  /** The page or screen type the caller is on; unknown pages never block a tool. */
  readonly page?: string | undefined
  /** Feature flags licensed for this caller. */
  readonly features?: ReadonlyArray<string> | undefined
  /** Who is acting: a user id, an agent id. */
  readonly actor?: string | undefined
  /** The actor's role: a policy (`@graded/policy`) decides by it which tools this caller may see and call. */
  readonly role?: string | undefined
  /** The tenant the work is for; a policy may treat a test tenant differently and count quotas per tenant. */
  readonly tenant?: string | undefined
  /** The consents the customer gave that the app holds (`credit-check`), for a policy's conditions. */
  readonly consents?: ReadonlyArray<string> | undefined
  /**
   * Facts recorded so far in this piece of work: set by the app, and by a
   * tool's declared `facts` from its results in an agent run (never by the
   * model's words). A policy's conditions read them.
   */
  readonly facts?: Readonly<Record<string, Fact>> | undefined
  /** Correlates every audit event of one piece of work. */
  readonly traceId?: string | undefined
  /**
   * The tools marked `untrusted` whose output has entered this run. Only grows:
   * a nested context cannot clear it. `Agent.run` adds to it; an app that feeds
   * outside content to a model sets it too.
   */
  readonly untrusted?: ReadonlyArray<string> | undefined
}

/**
 * A recorded fact's value.
 *
 * @since 0.1.0
 * @category models
 */
export type Fact = string | number | boolean

/**
 * The context a fresh fiber starts with: a human, nothing more known.
 *
 * @since 0.1.0
 * @category constructors
 */
export const initial: Context = internal.initial

const currentRef = internal.currentRef

/**
 * The invocation context of the current fiber. `autonomous` comes from
 * graded's own mark of the fiber, which code running in it cannot lift.
 *
 * @since 0.1.0
 * @category services
 */
export const current: Effect.Effect<Context> = sealedValue(Effect.withFiber((fiber) => {
  const context = fiber.getRef(currentRef)
  return Effect.succeed(
    context.autonomous || !internal.isAutonomous(fiber) ? context : merge(context, { autonomous: true })
  )
}))

/**
 * Merges two contexts. `autonomous` is sticky: code running for a model can
 * never declare itself human again; so is `untrusted`, which only grows.
 *
 * @since 0.1.0
 * @category combinators
 */
export const merge = (outer: Context, inner: Partial<Context>): Context => {
  // Object.assign, not `{ ...outer, ...inner, autonomous }`: on Node 20 a
  // spread followed by more properties costs about a microsecond a property.
  const autonomous = outer.autonomous || inner.autonomous === true
  if (outer.untrusted === undefined || outer.untrusted.length === 0) {
    return sealed(Object.assign({}, outer, inner, { autonomous }))
  }
  const untrusted = inner.untrusted === undefined ? outer.untrusted
    : [...new Set([...outer.untrusted, ...inner.untrusted])]
  return sealed(Object.assign({}, outer, inner, { autonomous, untrusted }))
}

// A context is shared by every piece of work that runs in it and read by the
// gates and the policy: frozen, with its lists and facts, so that code handed
// it (`Invocation.current`) cannot change it in place for the work that follows.
const sealed = (context: Mutable<Context>): Context => {
  if (context.features !== undefined) context.features = frozen(context.features)
  if (context.consents !== undefined) context.consents = frozen(context.consents)
  if (context.untrusted !== undefined) context.untrusted = frozen(context.untrusted)
  if (context.facts !== undefined && !Object.isFrozen(context.facts)) {
    context.facts = Object.freeze({ ...context.facts })
  }
  return Object.freeze(context)
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] }

const frozen = <A>(list: ReadonlyArray<A>): ReadonlyArray<A> => Object.isFrozen(list) ? list : Object.freeze([...list])

/**
 * Runs an effect within a context, merged into the current one (data-last
 * or data-first, as Effect's combinators). In a model's
 * work (an autonomous fiber) and inside a tool's own code, only
 * `autonomous: true` and `untrusted` take effect: such code speaks for whoever
 * started it and cannot change who that is (actor, role, tenant, consents,
 * features, facts, page, trace).
 *
 * @example
 * import { Effect } from "effect"
 * import { Invocation } from "@graded/core"
 * const program = Invocation.within({ actor: "agent:7", page: "ticket" })(Effect.void)
 * const same = Invocation.within(Effect.void, { actor: "agent:7", page: "ticket" })
 *
 * @since 0.1.0
 * @category combinators
 */
export const within: {
  (context: Partial<Context>): <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  <A, E, R>(self: Effect.Effect<A, E, R>, context: Partial<Context>): Effect.Effect<A, E, R>
} = dual(
  2,
  <A, E, R>(self: Effect.Effect<A, E, R>, context: Partial<Context>): Effect.Effect<A, E, R> => {
    // Nothing to add is the common case on a hot path: skip the FiberRef dance.
    if (Object.keys(context).length === 0) return self
    const restricted = (patch: Partial<Context>) => {
      const merged = Effect.updateService(self, currentRef, (outer) => merge(outer, patch))
      // Marking the fiber itself is what the gates trust.
      return context.autonomous === true ? internal.restrict({ autonomous: true })(merged) : merged
    }
    if (!saysWho(context)) return restricted(context)
    // A model's work, and a tool's own code, speak for whoever started them:
    // they may mark the work autonomous or untrusted, but not say who, where,
    // for which tenant, with which consents, features or facts (what a policy
    // and the registry's gates judge by), nor start another trace.
    return Effect.withFiber<A, E, R>((fiber) =>
      restricted(internal.isAutonomous(fiber) || internal.inToolCode(fiber) ? pinned(context) : context)
    )
  }
)

const saysWho = (context: Partial<Context>): boolean => {
  for (const key in context) if (key !== "autonomous" && key !== "untrusted") return true
  return false
}

const pinned = (context: Partial<Context>): Partial<Context> => {
  const patch: { autonomous?: boolean; untrusted?: ReadonlyArray<string> } = {}
  if (context.autonomous === true) patch.autonomous = true
  if (context.untrusted !== undefined) patch.untrusted = context.untrusted
  return patch
}

/**
 * Why a human's decision may not be made from the current fiber (a model's
 * work, or any tool's own code: a read's run, a write's run, a send's
 * prepare or deliver), or undefined when it may. For decisions made outside
 * HumanConfirm (reviewing a queue, approving a draft): the same mark the
 * capability gates trust, which code running in the fiber cannot lift.
 *
 * @since 0.1.0
 * @category getters
 */
export const decisionRefusal: Effect.Effect<string | undefined> = sealedValue(Effect.map(
  internal.mayDecide("a decision"),
  (refusal) => refusal?.reason
))

/**
 * Makes values that every fiber shares read-only, with what they hold:
 * effects, layers, services and references, contexts (their maps too) and plain data; a module
 * namespace seals each of its exports. Objects that keep state in their
 * properties (a fiber, a scheduler, a `Map`'s entries) are left as they are.
 *
 * A tool's own code can import whatever your app exports. An effect or layer
 * it can change in place (`Object.assign`, a `set` on a context's `mapUnsafe`)
 * runs later wherever it is used, in a human's fiber too, where what it builds
 * is not tainted. graded seals its own packages' exports, Effect's, the
 * default values of Effect's references and the empty context every root
 * fiber starts from when it is loaded; seal the effects and layers your app
 * shares the same way.
 *
 * @example
 * import { Effect } from "effect"
 * import { Invocation } from "@graded/core"
 *
 * const Startup = Effect.log("ready")
 * Invocation.seal(Startup)
 * Object.isFrozen(Startup) // true
 *
 * @since 0.1.0
 * @category utils
 */
export const seal = <A>(value: A): A => {
  sealShared()
  sealValue(value)
  return value
}

/**
 * A layer whose effect is made again for each build, sealed: `make` runs at
 * every build, in the layer's scope. Of one service (`freshLayer(Service,
 * make)`, as `Layer.effect`) or of a whole context (`freshLayer(make)`, as
 * `Layer.effectContext`).
 *
 * Effect's `Layer.effect`, `sync`, `succeed` and `effectContext` keep the
 * effect they run in a closure, where `seal` cannot reach it, and every build
 * runs that same object. A tracer a tool's code provides in its own fiber is
 * handed each effect object the fiber runs: code that builds a layer your
 * app keeps in a module (it can import it) could rewrite that object in
 * place, and your next build, in a human's fiber, would run it there, where
 * what it builds is not tainted. Every layer graded hands out is made this
 * way; make the layers your app keeps with it too.
 *
 * @example
 * import { Context, Effect } from "effect"
 * import { Invocation } from "@graded/core"
 *
 * class Mailer extends Context.Service<Mailer, { readonly send: (to: string) => Effect.Effect<void> }>()("app/Mailer") {}
 * const MailerLive = Invocation.freshLayer(Mailer, () => Effect.sync(() => ({ send: () => Effect.void })))
 *
 * @since 0.4.0
 * @category utils
 */
export const freshLayer: {
  <I, S, E = never, R = never>(
    service: Services.Key<I, S>,
    make: () => Effect.Effect<S, E, R>
  ): Layer.Layer<I, E, Exclude<R, Scope.Scope>>
  <A, E = never, R = never>(
    make: () => Effect.Effect<Services.Context<A>, E, R>
  ): Layer.Layer<A, E, Exclude<R, Scope.Scope>>
} = <I, S, E, R>(
  first: Services.Key<I, S> | (() => Effect.Effect<Services.Context<I>, E, R>),
  make?: () => Effect.Effect<S, E, R>
): Layer.Layer<I, E, Exclude<R, Scope.Scope>> =>
  sealedValue(Services.isKey(first) ? fresh.freshService(first, make!) : fresh.freshLayer(first))
