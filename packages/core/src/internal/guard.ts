// The guards in force for a fiber: only ever added to. A child fiber starts
// with its parent's; joining keeps both sides', so a guard a layer adds while
// it is built reaches the effect it is provided to. Not exported from the
// package: code can add a guard only through `Guard.layer`/`Guard.within`.
import { Effect, FiberRef } from "effect"
import type { Guard, Screening, Verdict } from "../Guard.js"
import type { Context } from "../Invocation.js"
import type { Message } from "../LanguageModel.js"
import type { Any as AnyTool } from "../Tool.js"

const none: ReadonlyArray<Guard> = Object.freeze([])

const union = (a: ReadonlyArray<Guard>, b: ReadonlyArray<Guard>): ReadonlyArray<Guard> => {
  if (a === b || b.length === 0) return a
  if (a.length === 0) return b
  const added = b.filter((guard) => !a.includes(guard))
  return added.length === 0 ? a : Object.freeze([...a, ...added])
}

export const guardsRef: FiberRef.FiberRef<ReadonlyArray<Guard>> = FiberRef.unsafeMake(none, {
  join: (parent, child) => union(parent, child)
})

export const adding = (guard: Guard) => (guards: ReadonlyArray<Guard>): ReadonlyArray<Guard> =>
  guards.includes(guard) ? guards : Object.freeze([...guards, guard])

const empty: Screening = { left: new Map() }

/** Every guard's screening, merged: the first reason given for a tool stands. */
export const screenAll = (
  guards: ReadonlyArray<Guard>,
  tools: ReadonlyArray<AnyTool>,
  context: Context,
  conversation: ReadonlyArray<Message> | undefined
): Effect.Effect<Screening> => {
  if (guards.length === 0) return Effect.succeed(empty)
  if (guards.length === 1) return guards[0]!.screen({ tools, context, conversation })
  return Effect.map(
    Effect.forEach(guards, (guard) => guard.screen({ tools, context, conversation })),
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
  context: Context
): Effect.Effect<Verdict | undefined> => {
  const next = (index: number): Effect.Effect<Verdict | undefined> =>
    index >= guards.length ? Effect.succeed(undefined) : Effect.flatMap(
      guards[index]!.admit({ tool, input, context }),
      (verdict) => verdict !== undefined ? Effect.succeed(verdict) : next(index + 1)
    )
  return next(0)
}
