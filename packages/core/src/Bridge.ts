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
import { Cause, Effect, Exit, type Layer, ManagedRuntime } from "effect"
import type { HumanTrigger, WriteCapability } from "./Capability.js"
import * as HumanConfirm from "./HumanConfirm.js"
import type * as Invocation from "./Invocation.js"
import * as Plan from "./Plan.js"
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
  | { readonly ok: false; readonly error: string; readonly step?: string | undefined; readonly index?: number | undefined }

/**
 * @since 0.1.0
 * @category models
 */
export interface Bridge {
  readonly list: (context?: Partial<Invocation.Context>) => Promise<ReadonlyArray<Registry.Listing>>
  readonly invoke: (name: string, input?: unknown, context?: Partial<Invocation.Context>) => Promise<Registry.ToolResult>
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
  Tool.Requirements<Tools[number]> | (Plans[number] extends Plan.Plan<any, any, any, infer R> ? Exclude<R, WriteCapability> : never),
  HumanTrigger
>

/**
 * @since 0.1.0
 * @category models
 */
export interface Options<Tools extends ReadonlyArray<Tool.Any>, Plans extends ReadonlyArray<Plan.Any>, E> {
  /** Provides the tools' and plans' services, and the app's HumanConfirm. */
  readonly layer: Layer.Layer<Services<Tools, Plans>, E>
  /** Who the console stands for, in audit and as the plans' trigger (default "console"). */
  readonly by?: string | undefined
  /** The name on `globalThis` (default "__graded"); `expose` only. */
  readonly name?: string | undefined
}

/**
 * Makes a bridge without touching `globalThis`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = <Tools extends ReadonlyArray<Tool.Any>, Plans extends ReadonlyArray<Plan.Any>, E>(
  registry: Registry.Registry<Tools>,
  plans: Plans,
  options: Options<Tools, Plans, E>
): Bridge => {
  const runtime = ManagedRuntime.make(options.layer)
  const by = options.by ?? "console"
  const byName = new Map(plans.map((plan) => [plan.name, plan]))
  // Nothing the console does rejects its promise: every answer is data.
  const settle = <A>(effect: Effect.Effect<A, never, any>, onDefect: (cause: Cause.Cause<unknown>) => A) =>
    runtime.runPromiseExit(effect as Effect.Effect<A, never, Services<Tools, Plans>>).then(
      (exit) => Exit.isSuccess(exit) ? exit.value : onDefect(exit.cause),
      (error: unknown) => onDefect(Cause.die(error))
    )
  return {
    list: async (context) => registry.list({ actor: by, ...context }),
    invoke: (name, input, context) =>
      settle(
        registry.invoke(name, input ?? {}, { actor: by, ...context }) as Effect.Effect<Registry.ToolResult, never, any>,
        (cause) => ({ ok: false, code: "failed", error: `${name} failed unexpectedly: ${Cause.pretty(cause).split("\n")[0]}` })
      ),
    runPlan: (name, input) => {
      const plan = byName.get(name)
      if (plan === undefined) return Promise.resolve({ ok: false, error: `there is no plan named ${name}` })
      return settle(
        Plan.run(plan, input ?? {}).pipe(
          Effect.provide(HumanConfirm.trigger({ by, via: "console" })),
          Effect.map((data): PlanResult => ({ ok: true, data })),
          Effect.catchAll((error) =>
            Effect.succeed<PlanResult>({ ok: false, error: error.message, step: error.step, index: error.index })
          )
        ),
        (cause) => ({ ok: false, error: `${name} failed unexpectedly: ${Cause.pretty(cause).split("\n")[0]}` })
      )
    },
    plans: () => [...byName.keys()],
    dispose: () => runtime.dispose()
  }
}

/**
 * Makes a bridge and puts it on `globalThis` (as `__graded` unless named).
 *
 * @example
 * import { Layer } from "effect"
 * import { Bridge, HumanConfirm, Registry, Toolkit } from "@graded/core"
 *
 * const registry = Registry.make(Toolkit.make())
 * Bridge.expose(registry, [], { layer: HumanConfirm.layer(HumanConfirm.scripted([])) })
 *
 * @since 0.1.0
 * @category constructors
 */
export const expose = <Tools extends ReadonlyArray<Tool.Any>, Plans extends ReadonlyArray<Plan.Any>, E>(
  registry: Registry.Registry<Tools>,
  plans: Plans,
  options: Options<Tools, Plans, E>
): Bridge => {
  const bridge = make(registry, plans, options)
  ;(globalThis as Record<string, unknown>)[options.name ?? "__graded"] = bridge
  return bridge
}
