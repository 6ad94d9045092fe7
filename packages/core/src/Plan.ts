/**
 * Fixed flows: an order of steps written in code, started by a human. The
 * flow decides every call; a model inside it only writes text and never
 * chooses a tool. That predictability is why a plan may write where an
 * agent may not: `Plan.run` requires `HumanTrigger`, provides
 * `WriteCapability` for exactly the write tools the plan declares, and never
 * provides `SendCapability`, so a send step still needs a human's confirmation.
 *
 * @since 0.1.0
 */
import { Cause, Effect, Option, Schema } from "effect"
import type { Pipeable } from "effect/Pipeable"
import * as Audit from "./Audit.js"
import type { HumanTrigger, WriteCapability } from "./Capability.js"
import type { Grade } from "./Grade.js"
import { HumanTriggerTag, isGranted, taintOf, WriteCapabilityTag } from "./internal/capability.js"
import { jsonError } from "./internal/jsonData.js"
import { mayCause } from "./internal/authority.js"
import * as internal from "./internal/plan.js"
import * as Invocation from "./Invocation.js"
import { LanguageModel } from "./LanguageModel.js"
import type * as Tool from "./Tool.js"
import { issueOf, parseOptions } from "./ToolError.js"
import { asServiceCode } from "./internal/authority.js"
import { modelHere } from "./internal/services.js"

/**
 * A step of a running plan failed: names the plan, the step and its index
 * (counted from 1), and why.
 *
 * @since 0.1.0
 * @category errors
 */
export class StepFailed extends Schema.TaggedError<StepFailed>()("@graded/core/Plan/StepFailed", {
  plan: Schema.String,
  step: Schema.String,
  index: Schema.Number,
  reason: Schema.String
}) {
  override get message(): string {
    return `Plan ${this.plan} failed at step ${this.index} (${this.step}): ${this.reason}`
  }
}

/**
 * The plan did not start, and ran no step: no granted `HumanTrigger`, a
 * model's fiber or a tool's own code asked, the plan was not made by
 * `Plan.make`, or its input did not decode.
 *
 * @since 0.1.0
 * @category errors
 */
export class NotStarted extends Schema.TaggedError<NotStarted>()("@graded/core/Plan/NotStarted", {
  plan: Schema.String,
  reason: Schema.String
}) {
  override get message(): string {
    return `Plan ${this.plan} did not start: ${this.reason}`
  }
}

/**
 * Every way a plan fails, as a schema, so a failure that crossed a wire (a
 * store, a web page, the CLI's JSON) decodes back into its class.
 *
 * @since 0.1.0
 * @category errors
 */
export const PlanError = Schema.Union([StepFailed, NotStarted])

/**
 * Every way a plan fails: a step failed, or it did not start.
 *
 * @since 0.1.0
 * @category errors
 */
export type PlanError = StepFailed | NotStarted

/**
 * Whether a value is one of a plan's failures.
 *
 * @since 0.1.0
 * @category guards
 */
export const isPlanError = (u: unknown): u is PlanError => u instanceof StepFailed || u instanceof NotStarted

/**
 * The steps a plan's body can take. Each is audited with its index and name.
 *
 * @since 0.1.0
 * @category models
 */
export interface Steps {
  /** Calls a read tool. */
  readonly read: <N extends string, I, O, E, R>(
    name: string,
    tool: Tool.Tool<N, "read", I, O, E, R>,
    input: I
  ) => Effect.Effect<O, PlanError, R>
  /** Calls a write tool the plan declared; the plan authorizes it. */
  readonly write: <N extends string, I, O, E, R>(
    name: string,
    tool: Tool.Tool<N, "write", I, O, E, R>,
    input: I
  ) => Effect.Effect<O, PlanError, R | WriteCapability>
  /** Calls a send tool: a human must still confirm it. */
  readonly send: <N extends string, I, O, E, R>(
    name: string,
    tool: Tool.Tool<N, "send", I, O, E, R>,
    input: I
  ) => Effect.Effect<O, PlanError, R | Tool.Requirements<Tool.Tool<N, "send", I, O, E, R>>>
  /** Lets the model write text; it is offered no tools. */
  readonly generate: (
    name: string,
    prompt: string,
    options?: { readonly system?: string }
  ) => Effect.Effect<string, PlanError, LanguageModel>
  /** Fails the plan, naming this step, unless `check` is true. */
  readonly validate: (name: string, check: boolean, reason: string) => Effect.Effect<void, PlanError>
}

/**
 * The key that marks a value as a plan; `Plan.isPlan` checks for it.
 *
 * @since 0.1.0
 * @category symbols
 */
export const TypeId: typeof internal.TypeId = internal.TypeId

/**
 * @since 0.1.0
 * @category symbols
 */
export type TypeId = typeof TypeId

/**
 * A fixed flow: its name, its input schema, the write tools it declares, and
 * its steps.
 *
 * @since 0.1.0
 * @category models
 */
export interface Plan<Name extends string, In, Out, R> extends Pipeable {
  readonly [TypeId]: TypeId
  readonly name: Name
  readonly input: Schema.Codec<In, unknown>
  /** The write tools this plan may call. */
  readonly writes: ReadonlyArray<string>
  readonly steps: (input: In, step: Steps) => Effect.Effect<Out, PlanError, R>
}

/**
 * Any plan, for constraints.
 *
 * @since 0.1.0
 * @category models
 */
export interface Any extends Plan<string, any, any, any> {}

/**
 * Whether a value is a plan made by `Plan.make`.
 *
 * @since 0.1.0
 * @category guards
 */
export const isPlan = (u: unknown): u is Any => typeof u === "object" && u !== null && TypeId in u

/**
 * Defines a fixed flow.
 *
 * @example
 * import { Effect, Schema } from "effect"
 * import { Plan, Tool } from "@graded/core"
 *
 * declare const CurrentConversation: Tool.Tool<"conversation.current", "read", {}, { text: string }, never, never>
 * declare const SubmitTicket: Tool.Tool<"ticket.submit", "write", { subject: string }, { id: string }, never, never>
 *
 * const QuickTicket = Plan.make("quick-ticket", {
 *   input: Schema.Struct({}),
 *   writes: [SubmitTicket],
 *   steps: (_, step) =>
 *     Effect.gen(function*() {
 *       const conversation = yield* step.read("read the conversation", CurrentConversation, {})
 *       const subject = yield* step.generate("write the subject", `One line for: ${conversation.text}`)
 *       yield* step.validate("check the subject", subject.length > 0, "the subject is empty")
 *       return yield* step.write("submit", SubmitTicket, { subject })
 *     })
 * })
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = <const Name extends string, In, IE, Out, R>(
  name: Name,
  definition: {
    readonly input: Schema.Codec<In, IE>
    readonly writes: ReadonlyArray<Tool.Tool<string, "write", any, any, any, any>>
    readonly steps: (input: In, step: Steps) => Effect.Effect<Out, PlanError, R>
  }
): Plan<Name, In, Out, R> => internal.make(name, definition)

/**
 * Runs a plan a human started. Requires `HumanTrigger`; the plan's own
 * `WriteCapability` authorizes its declared write tools and refuses any other;
 * `SendCapability` is left to the caller's `HumanConfirm`. Each step is
 * audited when it starts, completes or fails.
 *
 * @since 0.1.0
 * @category constructors
 */
export const run = <Name extends string, In, Out, R>(
  plan: Plan<Name, In, Out, R>,
  input: unknown
): Effect.Effect<Out, PlanError, Exclude<R, WriteCapability> | HumanTrigger> =>
  Effect.gen(function*() {
    const notStarted = (reason: string) => new NotStarted({ plan: plan.name, reason })
    const trigger = yield* HumanTriggerTag
    // Cast past the compiler, a forged trigger, a model's fiber or a read
    // tool's own code still cannot start a plan.
    if (!isGranted(trigger)) return yield* notStarted("the HumanTrigger was not granted by graded")
    const refusal = yield* mayCause(plan.name, "write", "HumanTrigger")
    if (refusal !== undefined) {
      const reason = refusal.gate === "autonomous" ? "a model cannot start a plan; a human must" : refusal.reason
      yield* Audit.record({ type: "refused", tool: plan.name, gate: refusal.gate, reason })
      return yield* notStarted(reason)
    }
    // A trigger made inside a tool's own code or a model's run, and carried here.
    const tainted = taintOf(trigger)
    if (tainted !== undefined) {
      const reason = `the HumanTrigger was made ${tainted.where}: it starts nothing`
      yield* Audit.record({ type: "refused", tool: plan.name, gate: tainted.gate, reason })
      return yield* notStarted(reason)
    }
    const authorization = internal.authorize(plan, trigger.by)
    if (authorization === undefined) return yield* notStarted("this plan was not made by Plan.make")
    const context = yield* Invocation.current
    const notJson = jsonError(input)
    // The schema may be a tool's: its effects run as code that may cause nothing.
    const decoded = yield* (notJson !== undefined
      ? Effect.fail(notJson)
      : asServiceCode(`plan ${plan.name}'s input schema`)(
        Schema.decodeUnknownEffect(plan.input, parseOptions)(input)
      )).pipe(
        Effect.mapError((error) => notStarted(`its input is invalid: ${issueOf(error)}`))
      )
    return yield* plan.steps(decoded, stepsOf(plan.name)).pipe(
      Effect.provideService(WriteCapabilityTag, authorization.capability),
      Effect.ensuring(Effect.sync(authorization.end)),
      Invocation.within({ actor: context.actor ?? trigger.by, traceId: context.traceId ?? crypto.randomUUID() })
    )
  })

const messageOf = (error: unknown): string =>
  typeof error === "object" && error !== null && "message" in error && typeof error.message === "string" &&
    error.message !== ""
    ? error.message
    : "the step failed"

const generateSystem = "You write text for one step of a fixed procedure. Answer with the text only."

// The steps of one run of `plan`, numbered as they are taken.
const stepsOf = (plan: string): Steps => {
  let index = 0
  const step = <A, E, R>(
    name: string,
    kind: Grade | "generate" | "validate",
    effect: Effect.Effect<A, E, R>
  ): Effect.Effect<A, PlanError, R> =>
    Effect.suspend(() => {
      const at = ++index
      const record = (status: "started" | "completed" | "failed", reason?: string) =>
        Audit.record({ type: "step", plan, index: at, step: name, kind, status, reason })
      return record("started").pipe(
        Effect.andThen(effect),
        Effect.catchCause((cause) => {
          if (Cause.hasInterruptsOnly(cause)) return Effect.failCause(cause as Cause.Cause<never>)
          const failure = Cause.findErrorOption(cause)
          // A nested plan's failure is kept as it is.
          const error = Option.isSome(failure) && isPlanError(failure.value)
            ? failure.value
            : new StepFailed({
              plan,
              step: name,
              index: at,
              reason: Option.isSome(failure) ? messageOf(failure.value) : "it failed unexpectedly"
            })
          return Effect.andThen(record("failed", error.reason), Effect.fail(error))
        }),
        Effect.tap(() => record("completed"))
      )
    })
  return {
    read: (name, tool, input) => step(name, "read", tool.invoke(input)),
    write: (name, tool, input) => step(name, "write", tool.invoke(input)),
    send: (name, tool, input) => step(name, "send", tool.invoke(input)),
    generate: (name, prompt, options) =>
      step(
        name,
        "generate",
        Effect.gen(function*() {
          const model = yield* modelHere
          // No tools are offered: in a plan the model only writes text.
          const response = yield* model.generate({
            messages: [{ role: "system", content: options?.system ?? generateSystem }, {
              role: "user",
              content: prompt
            }],
            tools: []
          })
          const text = response.text?.trim() ?? ""
          if (text === "") return yield* Effect.fail({ message: "the model wrote nothing" })
          return text
        })
      ),
    validate: (name, check, reason) => step(name, "validate", check ? Effect.void : Effect.fail({ message: reason }))
  }
}
