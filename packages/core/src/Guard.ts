/**
 * Gates an app adds on top of the registry's own, such as a policy
 * (`@graded/policy`): asked which tools a context may be offered, and again
 * before every call. Guards only add up: code running inside a guarded
 * region can add another, never remove one. With no guard in force, the
 * registry and the agent loops behave exactly as without this module.
 *
 * A guard narrows what may happen; it never widens it. The registry's gates
 * (features, pages, grades, the autonomous mark) run first and a guard
 * cannot lift them.
 *
 * @since 0.1.0
 */
import { Context, Effect, Layer } from "effect"
import { dual } from "effect/Function"
import type * as Invocation from "./Invocation.js"
import type { Message } from "./LanguageModel.js"
import type * as Tool from "./Tool.js"
import { adding, Guards, guardsHere } from "./internal/guard.js"
import { sealed } from "./internal/seal.js"
import { freshLayer } from "./internal/freshLayer.js"

/**
 * Why a guard leaves a tool out or refuses a call: the gate (written into the
 * audit entry, e.g. `policy:role`) and a reason for people.
 *
 * @since 0.1.0
 * @category models
 */
export interface Verdict {
  readonly gate: string
  readonly reason: string
}

/**
 * What a guard decided for one offer: each tool it leaves out and why, and
 * the rules that matched (recorded with the offer).
 *
 * @since 0.1.0
 * @category models
 */
export interface Screening {
  readonly left: ReadonlyMap<string, Verdict>
  readonly guidelines?: ReadonlyArray<{ readonly id: string; readonly via: "data" | "model" }> | undefined
}

/**
 * A guard. `screen` runs once per offer (each model turn) over the tools the
 * registry's gates passed; `admit` runs before every call the registry
 * dispatches, after its own gates. Neither may fail: a guard that cannot
 * decide refuses.
 *
 * @since 0.1.0
 * @category models
 */
export interface Guard {
  readonly name: string
  readonly screen: (request: {
    readonly tools: ReadonlyArray<Tool.Any>
    readonly context: Invocation.Context
    /** The conversation so far, when a model is being offered tools. */
    readonly conversation?: ReadonlyArray<Message> | undefined
  }) => Effect.Effect<Screening>
  readonly admit: (request: {
    readonly tool: Tool.Any
    readonly input: unknown
    readonly context: Invocation.Context
  }) => Effect.Effect<Verdict | undefined>
}

/**
 * Adds a guard for the effect it is provided to; the guard's own services
 * are read once, when the layer is built. The guard object is frozen when it
 * is added (here and by `within`): it runs in every caller's fiber. An
 * effect that makes it is sealed (`Invocation.seal`): each build runs that
 * same effect (`Policy.layer`'s too), in whichever fiber builds the layer.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = <E = never, R = never>(guard: Guard | Effect.Effect<Guard, E, R>): Layer.Layer<never, E, R> => {
  if (Effect.isEffect(guard)) sealed(guard)
  return sealed(freshLayer(() =>
    Effect.zipWith(
      guardsHere,
      Effect.isEffect(guard) ? guard : Effect.succeed(guard),
      (guards, made) => Context.make(Guards, adding(made)(guards))
    )
  )) as unknown as Layer.Layer<never, E, R>
}

/**
 * Runs an effect with a guard added: `Guard.within(guard)(self)`, or
 * `Guard.within(self, guard)`.
 *
 * @since 0.1.0
 * @category combinators
 */
export const within: {
  (guard: Guard): <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  <A, E, R>(self: Effect.Effect<A, E, R>, guard: Guard): Effect.Effect<A, E, R>
} = dual(
  2,
  <A, E, R>(self: Effect.Effect<A, E, R>, guard: Guard): Effect.Effect<A, E, R> =>
    Effect.flatMap(guardsHere, (guards) => Effect.provideService(self, Guards, adding(guard)(guards)))
)

/**
 * The guards in force in the current fiber.
 *
 * @since 0.1.0
 * @category getters
 */
export const current: Effect.Effect<ReadonlyArray<Guard>> = guardsHere
