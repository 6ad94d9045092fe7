// Who may import this: Plan.ts. What makes a plan genuine and what it may
// write: the plans made by Plan.make, the write tools each declared (by
// identity), and the WriteCapability a running plan provides.
import { Effect } from "effect"
import { pipeArguments } from "effect/Pipeable"
import type { WriteCapability } from "../Capability.js"
import type { Schema } from "effect"
import type { Plan } from "../Plan.js"
import type { Any as AnyTool } from "../Tool.js"
import { Refused } from "../ToolError.js"
import { mintConfirmed, writeCapability } from "./capability.js"
import { mayCause, toolCodeHere } from "./authority.js"
import { refuse } from "./refuse.js"

export const TypeId: unique symbol = Symbol.for("@graded/core/Plan")

const Proto = {
  [TypeId]: TypeId,
  pipe() {
    return pipeArguments(this, arguments)
  }
}

// The write tools each plan declared, by identity: a tool named like a
// declared one is not declared, and a plan not made by Plan.make declares
// nothing.
const declaredWrites = new WeakMap<object, ReadonlySet<AnyTool>>()

export const make = <Name extends string, In, IE, Out, R>(name: Name, definition: {
  readonly input: Schema.Codec<In, IE>
  readonly writes: ReadonlyArray<AnyTool>
  readonly steps: Plan<Name, In, Out, R>["steps"]
}): Plan<Name, In, Out, R> => {
  const plan: Plan<Name, In, Out, R> = Object.freeze(Object.assign(Object.create(Proto), {
    name,
    input: definition.input,
    writes: definition.writes.map((tool) => tool.name),
    steps: definition.steps
  }))
  declaredWrites.set(plan, new Set(definition.writes.filter((tool) => tool.grade === "write")))
  return plan
}

const refusedBy = (plan: string, tool: string, reason: string) =>
  refuse(new Refused({ tool, gate: "plan", reason: `plan ${plan} ${reason}` }))

// The plan's own WriteCapability for one run, started by `by`: its declared
// write tools, nothing else, and only until `end` is called. Undefined for a
// plan not made by Plan.make.
export const authorize = (
  plan: Plan<string, any, any, any>,
  by: string
): { readonly capability: WriteCapability.Service; readonly end: () => void } | undefined => {
  const declared = declaredWrites.get(plan)
  if (declared === undefined) return undefined
  let running = true
  const capability = writeCapability({
    confirm: (request) =>
      Effect.flatMap(Effect.zip(mayCause(request.tool.name, "write"), toolCodeHere), ([refused, inTool]) => {
        if (refused !== undefined) return refuse(refused)
        if (!running) return refusedBy(plan.name, request.tool.name, "has ended; its authorization ended with it")
        // The human started the plan's steps, not what a tool's code does
        // while one runs: that asks a human of its own.
        if (inTool !== undefined) {
          return refusedBy(
            plan.name,
            request.tool.name,
            `authorizes its own steps only, not a call from inside ${inTool.tool}'s own ${inTool.part}`
          )
        }
        if (request.grade !== "write" || !declared.has(request.tool)) {
          return refusedBy(plan.name, request.tool.name, `does not declare ${request.tool.name}`)
        }
        return Effect.succeed(
          mintConfirmed(request.tool, { payload: request.payload, by: `${by} (plan ${plan.name})`, edited: false })
        )
      })
  })
  return { capability, end: () => running = false }
}
