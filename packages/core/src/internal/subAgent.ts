// Agent.tool: an agent another agent calls as a tool. Its inner run is the
// one loop (agent.ts), autonomous, on the run's model: the sub-agent's tool
// is a read tool only when every tool it holds reads. One that holds a write
// or send has the highest grade it holds, so an autonomous loop never offers
// it and a supervised one refuses it as one opaque proposal (agent.ts): a
// human approving "billing(input)" would not see the payloads it makes.
import { Effect, Layer, Result, Schema } from "effect"
import type { Grade } from "../Grade.js"
import type { LanguageModel } from "../LanguageModel.js"
import type { Any as AnyTool } from "../Tool.js"
import type { Any as AnyToolkit } from "../Toolkit.js"
import { Refused } from "../ToolError.js"
import * as Invocation from "../Invocation.js"
import { finish, run, type RunOptions } from "./agent.js"
import { issueOf } from "../ToolError.js"
import { makeRead, makeSend, makeWrite } from "./tool.js"
import { pathRef, registerInner, type Report, reportRef, type Spec } from "./tree.js"

export class SubAgentNoAnswer extends Schema.TaggedError<SubAgentNoAnswer>()("@graded/core/Agent/SubAgentNoAnswer", {
  agent: Schema.String,
  reason: Schema.String
}) {
  override get message(): string {
    return `the sub-agent ${this.agent} gave no answer: ${this.reason}`
  }
}

export class SubAgentBadAnswer extends Schema.TaggedError<SubAgentBadAnswer>()(
  "@graded/core/Agent/SubAgentBadAnswer",
  { agent: Schema.String, issue: Schema.String }
) {
  override get message(): string {
    return `the sub-agent ${this.agent} answered, but not as its output schema says: ${this.issue}`
  }
}

export interface ToolOptions {
  readonly title: string
  readonly description: string
  readonly toolkit: AnyToolkit
  readonly instructions: string
  readonly input: Schema.Codec<any, any>
  readonly output?: Schema.Codec<any, any> | undefined
  readonly prompt?: ((input: any) => string) | undefined
  readonly maxRounds?: number | undefined
  readonly maxCallsPerRound?: number | undefined
  readonly model?: Layer.Layer<LanguageModel> | undefined
  readonly [option: string]: unknown
}

/** The highest grade among the tools: what a sub-agent holding them is. */
export const topGrade = (tools: ReadonlyArray<AnyTool>): Grade =>
  tools.some((tool) => tool.grade === "send") ? "send" : tools.some((tool) => tool.grade === "write") ? "write" : "read"

/** What a sub-agent's inner run gives back, as every loop finishes. */
type Finished = ReturnType<typeof finish>

/**
 * What a sub-agent's inner run is started with, for one call: the options
 * (its prompt made from `input`) and its path. What the calling run's model
 * read taints the inner run too: open-world tools stay closed to it.
 */
export const innerStart = (name: string, spec: Spec, input: unknown) =>
  Effect.gen(function*() {
    const prompt = yield* Effect.try({
      try: () => spec.prompt === undefined ? JSON.stringify(input) : String(spec.prompt(input)),
      catch: () => new SubAgentNoAnswer({ agent: name, reason: "its prompt could not be made from the input" })
    })
    const outer = yield* Invocation.current
    const path: ReadonlyArray<string> = Object.freeze([...(yield* pathRef), name])
    const options: RunOptions = {
      toolkit: spec.toolkit as AnyToolkit,
      prompt,
      system: spec.instructions,
      maxRounds: spec.maxRounds,
      maxCallsPerRound: spec.maxCallsPerRound,
      context: { untrusted: outer.untrusted ?? [] }
    }
    return { options, path }
  })

/** Runs `self` as the sub-agent at `path`: its path stamped, on its own model if it has one. */
export const asSubAgent = (spec: Spec, path: ReadonlyArray<string>) => <A, E, R>(self: Effect.Effect<A, E, R>) =>
  self.pipe(
    Effect.provideService(pathRef, Object.freeze([...path])),
    spec.model === undefined ? (self) => self : Effect.provide(spec.model as Layer.Layer<LanguageModel>)
  )

/**
 * A sub-agent's answer, from its inner run's result: its untrusted marks and
 * limits go to the calling run (through `report`) whatever the answer, and
 * the answer is read as `output`.
 */
export const answerOf = (
  name: string,
  spec: Spec,
  result: Finished,
  report: Report | undefined
) =>
  Effect.gen(function*() {
    report?.add(result.untrusted, result.limits)
    if (result.stopped !== "answer" || result.answer === undefined) {
      return yield* new SubAgentNoAnswer({
        agent: name,
        reason: result.stopped === "answer" ? "its model answered with no text" : "it was stopped by a limit"
      })
    }
    if (spec.output === undefined) return result.answer as unknown
    const text = result.answer
    const json = yield* Effect.try({
      try: () => JSON.parse(text) as unknown,
      catch: () => new SubAgentBadAnswer({ agent: name, issue: "the answer is not JSON" })
    })
    const decoded = Schema.decodeUnknownResult(spec.output as Schema.Codec<unknown, unknown>)(json)
    return Result.isSuccess(decoded)
      ? decoded.success
      : yield* new SubAgentBadAnswer({ agent: name, issue: issueOf(decoded.failure) })
  })

/**
 * One call of a sub-agent: its inner run, made by `runner` (the autonomous
 * loop for a read sub-agent, a supervised child run for one holding writes
 * or sends), on the prompt made from `input`; its answer read as `output`.
 */
export const ask = <R>(
  name: string,
  spec: Spec,
  input: unknown,
  runner: (options: RunOptions) => Effect.Effect<Finished, { readonly message: string }, R>
) =>
  Effect.gen(function*() {
    const { options, path } = yield* innerStart(name, spec, input)
    const result = yield* Effect.mapError(
      asSubAgent(spec, path)(runner(options)),
      (error) => new SubAgentNoAnswer({ agent: name, reason: error.message })
    )
    return yield* answerOf(name, spec, result, yield* reportRef)
  })

/** The fixed text the calling model is told for each failure of a sub-agent. */
export const failureMessages = (name: string) => ({
  "@graded/core/Agent/SubAgentNoAnswer": `${name} gave no answer.`,
  "@graded/core/Agent/SubAgentBadAnswer": `${name} gave an answer that is not of the form it promises.`
})

const refusedHere = (name: string) =>
  Effect.fail(
    new Refused({
      tool: name,
      gate: "sub-agent",
      reason: `${name} is a sub-agent holding writes or sends; it does not run as one call`
    })
  )

export const makeSubAgent = (name: string, options: ToolOptions): AnyTool => {
  const {
    input,
    instructions: _instructions,
    maxCallsPerRound: _maxCallsPerRound,
    maxRounds: _maxRounds,
    model: _model,
    output,
    prompt: _prompt,
    toolkit,
    ...rest
  } = options
  const subAgent = Object.freeze({ toolkit, instructions: options.instructions })
  const grade = topGrade(toolkit.tools)
  const common = {
    ...rest,
    title: options.title,
    description: options.description,
    input,
    output: output ?? Schema.String
  }
  const tool: AnyTool = grade === "read"
    ? makeRead(name, {
      ...common,
      run: (value: unknown) => ask(name, options, value, (inner) => run(inner)),
      failureMessages: failureMessages(name)
    } as never, { subAgent })
    : grade === "write"
    ? makeWrite(name, { ...common, run: () => refusedHere(name) } as never, { subAgent })
    : makeSend(name, {
      ...common,
      payload: input,
      prepare: () => refusedHere(name),
      deliver: () => refusedHere(name)
    } as never, { subAgent })
  registerInner(tool, options)
  return tool
}
