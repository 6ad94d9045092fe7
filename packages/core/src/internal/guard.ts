// The guards in force: a reference in the context that only ever grows
// through the public API (`Guard.layer` and `Guard.within` read the guards in
// scope and add one), provided like a service, so it stays in the region it
// was provided to, also when its layer is built beside others. The key is not
// exported from the package.
import { Context, Effect } from "effect"
import type { Guard, Screening, Verdict } from "../Guard.js"
import type { Context as InvocationContext } from "../Invocation.js"
import type { Message } from "../LanguageModel.js"
import type { Any as AnyTool } from "../Tool.js"
import { keptService } from "./kept.js"
import { asServiceCode } from "./authority.js"
import { ownEffect } from "./serviceCode.js"
import { sealed } from "./seal.js"

const none: ReadonlyArray<Guard> = Object.freeze([])

export const Guards: Context.Reference<ReadonlyArray<Guard>> = Context.Reference<ReadonlyArray<Guard>>(
  "@graded/core/Guard/Guards",
  { defaultValue: () => none }
)

/** The guards in scope, as graded first read them from this context (see kept.ts). */
export const guardsHere: Effect.Effect<ReadonlyArray<Guard>> = sealed(
  Effect.withFiber((fiber) => Effect.succeed(keptService(fiber.context, Guards)))
)
sealed(Guards)

// A guard is frozen when it is added: it runs in every caller's fiber, so
// code that finds it (`Guard.current`) must not be able to swap its functions.
export const adding = (guard: Guard) => (guards: ReadonlyArray<Guard>): ReadonlyArray<Guard> =>
  guards.includes(guard) ? guards : Object.freeze([...guards, Object.freeze(guard)])

const empty: Screening = { left: new Map() }

// A guard's effects run as code graded calls (serviceCode.ts): the guards
// are a service, and one may have been put in a context by a tool's code. An
// effect that is done already or synchronous is rebuilt as graded's own (ownEffect).
const asGuardCode = <A>(guard: Guard, effect: Effect.Effect<A>): Effect.Effect<A> =>
  ownEffect(effect, asServiceCode(`guard ${guard.name}'s code`)) as Effect.Effect<A>

/** Every guard's screening, merged: the first reason given for a tool stands. */
export const screenAll = (
  guards: ReadonlyArray<Guard>,
  tools: ReadonlyArray<AnyTool>,
  context: InvocationContext,
  conversation: ReadonlyArray<Message> | undefined
): Effect.Effect<Screening> => {
  if (guards.length === 0) return Effect.succeed(empty)
  if (guards.length === 1) return asGuardCode(guards[0]!, guards[0]!.screen({ tools, context, conversation }))
  return Effect.map(
    Effect.forEach(guards, (guard) => asGuardCode(guard, guard.screen({ tools, context, conversation }))),
    (screenings) => {
      const left = new Map<string, Verdict>()
      const guidelines: Array<{ readonly id: string; readonly via: "data" | "model" }> = []
      for (const screening of screenings) {
        for (const [tool, verdict] of screening.left) if (!left.has(tool)) left.set(tool, verdict)
        if (screening.guidelines !== undefined) guidelines.push(...screening.guidelines)
      }
      return { left, guidelines }
    }
  )
}

/** The first guard's refusal of a call, or undefined when every guard admits it. */
export const admitAll = (
  guards: ReadonlyArray<Guard>,
  tool: AnyTool,
  input: unknown,
  context: InvocationContext
): Effect.Effect<Verdict | undefined> => {
  const next = (index: number): Effect.Effect<Verdict | undefined> =>
    index >= guards.length ? Effect.succeed(undefined) : Effect.flatMap(
      asGuardCode(guards[index]!, guards[index]!.admit({ tool, input, context })),
      (verdict) => verdict !== undefined ? Effect.succeed(verdict) : next(index + 1)
    )
  return next(0)
}
