/**
 * The debug bridge: every tool and plan, callable from a browser app's
 * devtools console (or any script) through one object on `globalThis`. It is
 * a forwarding proxy: every call goes through the registry, so every gate
 * stays on, and a write or send is confirmed by the app's own HumanConfirm.
 *
 * ```js
 * await __graded.list()                                  // what is there, and what is offered
 * await __graded.invoke("kb.search", { query: "invoice" })
 * await __graded.runPlan("quick-ticket", {})
 * ```
 *
 * @since 0.1.0
 */
import type { Layer } from "effect"
import type { Custom, HumanTrigger, SendCapability, WriteCapability } from "./Capability.js"
import type * as Invocation from "./Invocation.js"
import * as internal from "./internal/bridge.js"
import type * as Plan from "./Plan.js"
import type * as Registry from "./Registry.js"
import type * as Tool from "./Tool.js"

/**
 * What a plan run answers: never a rejected promise.
 *
 * @since 0.1.0
 * @category models
 */
export type PlanResult =
  | { readonly ok: true; readonly data: unknown }
  | {
    readonly ok: false
    readonly error: string
    readonly step?: string | undefined
    readonly index?: number | undefined
  }

/**
 * What `make` and `expose` return: list and invoke tools and run plans by name,
 * from a console or a script; a failed call is data, not a rejected promise.
 * A call's `context` sets what it is about (a page, features); who is acting
 * is always the bridge's `by`, whatever `actor` the context names.
 *
 * @since 0.1.0
 * @category models
 */
export interface Bridge {
  readonly list: (context?: Partial<Invocation.Context>) => Promise<ReadonlyArray<Registry.Listing>>
  readonly invoke: (
    name: string,
    input?: unknown,
    context?: Partial<Invocation.Context>
  ) => Promise<Registry.ToolResult>
  readonly runPlan: (name: string, input?: unknown) => Promise<PlanResult>
  readonly plans: () => ReadonlyArray<string>
  /** Releases the services the bridge built. */
  readonly dispose: () => Promise<void>
}

/**
 * What the bridge's layer must provide: every tool's and plan's services,
 * HumanConfirm included; the bridge itself provides HumanTrigger for plans.
 *
 * @since 0.1.0
 * @category utility types
 */
export type Services<Tools extends ReadonlyArray<Tool.Any>, Plans extends ReadonlyArray<Plan.Any>> = Exclude<
  Tool.Requirements<Tools[number]> | PlanServices<Plans[number]>,
  HumanTrigger
>

// Distributes over the plans, so that no plans (`[]`, whose element type is
// `never`) add nothing; a plan's own write steps are authorized by Plan.run.
type PlanServices<P> = P extends Plan.Plan<any, any, any, infer R> ? Exclude<R, WriteCapability> : never

/**
 * The compile error for a layer that does not provide what the bridge needs.
 *
 * @since 0.1.0
 * @category errors
 */
export type MissingServices<Names extends string> =
  `Bridge needs a layer that provides ${Names}: merge HumanConfirm.layer(ui) with a layer for each service the tools and plans use`

type Join<A extends string, B extends string> = [A] extends [never] ? B : [B] extends [never] ? A : `${A} and ${B}`

// The built-in capabilities first, in a fixed order, then the others.
type Names<S> = Join<
  Join<
    Join<Named<S, WriteCapability, "WriteCapability">, Named<S, SendCapability, "SendCapability">>,
    Named<S, HumanTrigger, "HumanTrigger">
  >,
  JoinAll<ServiceName<Exclude<S, WriteCapability | SendCapability | HumanTrigger>>, never>
>

type Named<S, C, Name extends string> = [Extract<S, C>] extends [never] ? never : Name

// Distributes over the missing services.
type ServiceName<S> = S extends unknown ? S extends { readonly key: infer Id extends string } ? Id // a Context.Service class
  : S extends Custom<infer Id> ? Id // a Capability.make
  : "a service that has no name"
  : never

// A union of names as one text. Only a layer that fails the check pays for it.
type LastOf<U> = (U extends unknown ? (x: () => U) => void : never) extends (x: infer I) => void
  ? I extends () => infer L ? L : never
  : never

type JoinAll<U extends string, Acc extends string> = [U] extends [never] ? Acc
  : LastOf<U> extends infer L extends string ? JoinAll<Exclude<U, L>, Join<L, Acc>>
  : Acc

// A service the bridge needs is provided when the layer's output holds that
// very service: a wider type (`{}`, `unknown`, an interface it satisfies)
// provides nothing, since Layer accepts one in place of any narrower one.
type Provided<S, ROut> = ROut extends unknown ? [ROut] extends [S] ? [S] extends [ROut] ? ROut : never : never : never

type Missing<Needed, ROut> = 0 extends 1 & ROut ? Needed
  : Needed extends unknown ? [Provided<Needed, ROut>] extends [never] ? Needed : never
  : never

/**
 * `L` (the layer) when its output holds every service `Needed`, each exactly;
 * otherwise the message naming what is missing.
 *
 * @since 0.1.0
 * @category utility types
 */
export type Provides<Needed, ROut, L> = 0 extends 1 & Needed ? L
  : [Missing<Needed, ROut>] extends [never] ? L
  : MissingServices<Names<Missing<Needed, ROut>>>

/**
 * What `make` and `expose` take: the layer of every service the tools and plans
 * use (HumanConfirm included), who the console acts as, the global name.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options<
  Tools extends ReadonlyArray<Tool.Any>,
  Plans extends ReadonlyArray<Plan.Any>,
  E,
  ROut = Services<Tools, Plans>
> {
  /**
   * Provides the tools' and plans' services, and the app's HumanConfirm:
   * each of them by its own tag (a layer typed `Layer<{}>` provides nothing).
   */
  readonly layer: Provides<Services<Tools, Plans>, ROut, Layer.Layer<ROut, E>>
  /** Who the console stands for, in audit and as the plans' trigger (default "console"). */
  readonly by?: string | undefined
  /** The name on `globalThis` (default "__graded"); `expose` only. */
  readonly name?: string | undefined
}

/**
 * Makes a bridge without touching `globalThis`. The layer must provide every
 * service the tools and plans need, each by its own tag.
 *
 * @example
 * import { Bridge, HumanConfirm, Registry, Toolkit } from "@graded/core"
 *
 * const registry = Registry.make(Toolkit.make())
 * const bridge = Bridge.make(registry, [], { layer: HumanConfirm.layer(HumanConfirm.scripted([])) })
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = <Tools extends ReadonlyArray<Tool.Any>, Plans extends ReadonlyArray<Plan.Any>, E, ROut>(
  registry: Registry.Registry<Tools>,
  plans: Plans,
  options: Options<Tools, Plans, E, ROut>
): Bridge => internal.make(registry, plans, options)

/**
 * Makes a bridge and puts it on `globalThis` (as `__graded` unless named).
 *
 * @example
 * import { Bridge, HumanConfirm, Registry, Toolkit } from "@graded/core"
 *
 * const registry = Registry.make(Toolkit.make())
 * Bridge.expose(registry, [], { layer: HumanConfirm.layer(HumanConfirm.scripted([])) })
 *
 * @since 0.1.0
 * @category constructors
 */
export const expose = <Tools extends ReadonlyArray<Tool.Any>, Plans extends ReadonlyArray<Plan.Any>, E, ROut>(
  registry: Registry.Registry<Tools>,
  plans: Plans,
  options: Options<Tools, Plans, E, ROut>
): Bridge => {
  const bridge = make(registry, plans, options)
  ;(globalThis as Record<string, unknown>)[options.name ?? "__graded"] = bridge
  return bridge
}
