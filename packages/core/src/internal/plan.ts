import { Cause, Effect, Option, Schema } from "effect"
import { pipeArguments } from "effect/Pipeable"
import * as Audit from "../Audit.js"
import type { Grade } from "../Grade.js"
import * as Invocation from "../Invocation.js"
import { LanguageModel } from "../LanguageModel.js"
import type { Plan, Steps } from "../Plan.js"
import type { Any as AnyTool } from "../Tool.js"
import { Refused } from "../ToolError.js"
import { HumanTriggerTag, isGranted, mintConfirmed, writeCapability, WriteCapabilityTag } from "./capability.js"
import { refusalHere } from "./invocation.js"
import { issueText, refuse, strict } from "./tool.js"

export class PlanError extends Schema.TaggedError<PlanError>()("@graded/core/Plan/PlanError", {
  plan: Schema.String,
  step: Schema.String,
  index: Schema.Number,
  reason: Schema.String
}) {
  override get message(): string {
    return `Plan ${this.plan} failed at step ${this.index} (${this.step}): ${this.reason}`
  }
}

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

export const make = (name: string, definition: {
  readonly input: Schema.Schema<any, any>
  readonly writes: ReadonlyArray<AnyTool>
  readonly steps: (input: any, step: Steps) => Effect.Effect<any, PlanError, any>
}): any => {
  const plan = Object.freeze(Object.assign(Object.create(Proto), {
    name,
    input: definition.input,
    writes: definition.writes.map((tool) => tool.name),
    steps: definition.steps
  }))
  declaredWrites.set(plan, new Set(definition.writes.filter((tool) => tool.grade === "write")))
  return plan
}

const messageOf = (error: unknown): string =>
  typeof error === "object" && error !== null && "message" in error && typeof error.message === "string" &&
    error.message !== ""
    ? error.message
    : "the step failed"

const generateSystem = "You write text for one step of a fixed procedure. Answer with the text only."

export const run = (plan: Plan<string, any, any, any>, input: unknown): Effect.Effect<any, PlanError, any> =>
  Effect.gen(function*() {
    const fail = (index: number, step: string, reason: string) =>
      new PlanError({ plan: plan.name, step, index, reason })
    const trigger = yield* HumanTriggerTag
    // Cast past the compiler, a forged trigger, a model's fiber or a read
    // tool's own code still cannot start a plan.
    if (!isGranted(trigger)) return yield* fail(0, "start", "the HumanTrigger was not granted by graded")
    const refusal = yield* refusalHere(plan.name, "write")
    if (refusal !== undefined) {
      const reason = refusal.gate === "autonomous" ? "a model cannot start a plan; a human must" : refusal.reason
      yield* Audit.record({ type: "refused", tool: plan.name, gate: refusal.gate, reason })
      return yield* fail(0, "start", reason)
    }
    const declared = declaredWrites.get(plan)
    if (declared === undefined) return yield* fail(0, "start", "this plan was not made by Plan.make")
    const context = yield* Invocation.current
    const decoded = yield* Schema.decodeUnknown(plan.input, strict)(input).pipe(
      Effect.mapError((error) => fail(0, "input", issueText(error)))
    )
    // The plan's own WriteCapability: its declared write tools, nothing else,
    // and only while the plan runs.
    let running = true
    const writes = writeCapability({
      confirm: (request) =>
        Effect.flatMap(refusalHere(request.tool.name, "write"), (refused) => {
          if (refused !== undefined) return refuse(refused)
          if (!running) {
            return refuse(
              new Refused({ tool: request.tool.name, gate: "plan", reason: `plan ${plan.name} has ended; its authorization ended with it` })
            )
          }
          if (request.grade !== "write" || !declared.has(request.tool)) {
            return refuse(
              new Refused({ tool: request.tool.name, gate: "plan", reason: `plan ${plan.name} does not declare ${request.tool.name}` })
            )
          }
          return Effect.succeed(mintConfirmed(request.tool, {
            payload: request.payload,
            by: `${trigger.by} (plan ${plan.name})`,
            edited: false
          }))
        })
    })

    let index = 0
    const step = <A, E, R>(
      name: string,
      kind: Grade | "generate" | "validate",
      effect: Effect.Effect<A, E, R>
    ): Effect.Effect<A, PlanError, R> =>
      Effect.suspend(() => {
        const at = ++index
        const record = (status: "started" | "completed" | "failed", reason?: string) =>
          Audit.record({ type: "step", plan: plan.name, index: at, step: name, kind, status, reason })
        return record("started").pipe(
          Effect.zipRight(effect),
          Effect.catchAllCause((cause) => {
            if (Cause.isInterruptedOnly(cause)) return Effect.failCause(cause as Cause.Cause<never>)
            const failure = Cause.failureOption(cause)
            const reason = Option.isSome(failure) ? messageOf(failure.value) : "it failed unexpectedly"
            const error = Option.isSome(failure) && failure.value instanceof PlanError
              ? failure.value
              : fail(at, name, reason)
            return Effect.zipRight(record("failed", error.reason), Effect.fail(error))
          }),
          Effect.tap(() => record("completed"))
        )
      })

    const steps: Steps = {
      read: (name, tool, input) => step(name, "read", tool.invoke(input)),
      write: (name, tool, input) => step(name, "write", tool.invoke(input)),
      send: (name, tool, input) => step(name, "send", tool.invoke(input)),
      generate: (name, prompt, options) =>
        step(
          name,
          "generate",
          Effect.gen(function*() {
            const model = yield* LanguageModel
            // No tools are offered: in a plan the model only writes text.
            const response = yield* model.generate({
              messages: [{ role: "system", content: options?.system ?? generateSystem }, { role: "user", content: prompt }],
              tools: []
            })
            const text = response.text?.trim() ?? ""
            if (text === "") return yield* Effect.fail({ message: "the model wrote nothing" })
            return text
          })
        ),
      validate: (name, check, reason) => step(name, "validate", check ? Effect.void : Effect.fail({ message: reason }))
    }
    return yield* plan.steps(decoded, steps).pipe(
      Effect.provideService(WriteCapabilityTag, writes),
      Effect.ensuring(Effect.sync(() => running = false)),
      Invocation.within({ actor: context.actor ?? trigger.by, traceId: context.traceId ?? crypto.randomUUID() })
    )
  })
