// The console bridge's body (Bridge.ts has its types and docs): one managed
// runtime on the app's layer, every call through the registry or Plan.run,
// every answer data, never a rejected promise.
// Who may import this: Bridge.ts.
import { Cause, Effect, Exit, type Layer, ManagedRuntime } from "effect"
import type { Bridge, Options, PlanResult } from "../Bridge.js"
import * as HumanConfirm from "../HumanConfirm.js"
import * as Plan from "../Plan.js"
import type * as Registry from "../Registry.js"
import type * as Tool from "../Tool.js"
import { unexpectedFailure } from "../ToolError.js"

export const make = <Tools extends ReadonlyArray<Tool.Any>, Plans extends ReadonlyArray<Plan.Any>, E, ROut>(
  registry: Registry.Registry<Tools>,
  plans: Plans,
  options: Options<Tools, Plans, E, ROut>
): Bridge => {
  // The type of `layer` is the layer itself once the check above has passed.
  const runtime = ManagedRuntime.make(options.layer as Layer.Layer<ROut, E>)
  const by = options.by ?? "console"
  const byName = new Map(plans.map((plan) => [plan.name, plan]))
  // Nothing the console does rejects its promise: every answer is data.
  const settle = <A>(effect: Effect.Effect<A, never, any>, onDefect: (cause: Cause.Cause<unknown>) => A) =>
    runtime.runPromiseExit(effect as Effect.Effect<A, never, ROut>).then(
      (exit) => Exit.isSuccess(exit) ? exit.value : onDefect(exit.cause),
      (error: unknown) => onDefect(Cause.die(error))
    )
  return Object.freeze<Bridge>({
    // The console stands for `by`: a caller's context sets the page or the
    // features, never who is acting (the card and the audit name `by`).
    list: async (context) => registry.list({ ...context, actor: by }),
    invoke: (name, input, context) =>
      settle(
        registry.invoke(name, input ?? {}, { ...context, actor: by }) as Effect.Effect<Registry.ToolResult, never, any>,
        (cause) => ({
          ok: false,
          code: "failed",
          error: `${unexpectedFailure(name)} ${Cause.pretty(cause).split("\n")[0]}`
        })
      ),
    runPlan: (name, input) => {
      const plan = byName.get(name)
      if (plan === undefined) return Promise.resolve({ ok: false, error: `there is no plan named ${name}` })
      return settle(
        Plan.run(plan, input ?? {}).pipe(
          Effect.provide(HumanConfirm.trigger({ by, via: "console" })),
          Effect.map((data): PlanResult => ({ ok: true, data })),
          Effect.catch((error) =>
            Effect.succeed<PlanResult>(
              error._tag === "@graded/core/Plan/StepFailed"
                ? { ok: false, error: error.message, step: error.step, index: error.index }
                : { ok: false, error: error.message }
            )
          )
        ),
        (cause) => ({ ok: false, error: `${unexpectedFailure(name)} ${Cause.pretty(cause).split("\n")[0]}` })
      )
    },
    plans: () => [...byName.keys()],
    dispose: () => runtime.dispose()
  })
}
