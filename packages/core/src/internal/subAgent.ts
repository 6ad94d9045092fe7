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
import { run } from "./agent.js"
import { issueOf } from "../ToolError.js"
import { makeRead, makeSend, makeWrite } from "./tool.js"
import { pathRef, registerInner, reportRef } from "./tree.js"

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

const answerOf = (name: string, options: ToolOptions, input: unknown) =>
  Effect.gen(function*() {
    const prompt = yield* Effect.try({
      try: () => options.prompt === undefined ? JSON.stringify(input) : String(options.prompt(input)),
      catch: () => new SubAgentNoAnswer({ agent: name, reason: "its prompt could not be made from the input" })
    })
    const outer = yield* Invocation.current
    const path = [...(yield* pathRef), name]
    const inner = run({
      toolkit: options.toolkit,
      prompt,
      system: options.instructions,
      maxRounds: options.maxRounds,
      maxCallsPerRound: options.maxCallsPerRound,
      // What the calling run's model read taints this one too: open-world
      // tools stay closed to it.
      context: { untrusted: outer.untrusted ?? [] }
    }).pipe(
      Effect.provideService(pathRef, Object.freeze(path)),
      options.model === undefined ? (self) => self : Effect.provide(options.model)
    )
    const result = yield* Effect.mapError(
      inner,
      (error) => new SubAgentNoAnswer({ agent: name, reason: error.message })
    )
    // Its marks and limits reach the calling run whatever the answer is.
    const report = yield* reportRef
    report?.add(result.untrusted, result.limits)
    if (result.stopped !== "answer" || result.answer === undefined) {
      return yield* new SubAgentNoAnswer({
        agent: name,
        reason: result.stopped === "answer" ? "its model answered with no text" : "it was stopped by a limit"
      })
    }
    if (options.output === undefined) return result.answer
    const text = result.answer
    const json = yield* Effect.try({
      try: () => JSON.parse(text) as unknown,
      catch: () => new SubAgentBadAnswer({ agent: name, issue: "the answer is not JSON" })
    })
    const decoded = Schema.decodeUnknownResult(options.output as Schema.Codec<unknown, unknown>)(json)
    return Result.isSuccess(decoded)
      ? decoded.success
      : yield* new SubAgentBadAnswer({ agent: name, issue: issueOf(decoded.failure) })
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
      run: (value: unknown) => answerOf(name, options, value),
      failureMessages: {
        "@graded/core/Agent/SubAgentNoAnswer": `${name} gave no answer.`,
        "@graded/core/Agent/SubAgentBadAnswer": `${name} gave an answer that is not of the form it promises.`
      }
    } as never, { subAgent })
    : grade === "write"
    ? makeWrite(name, { ...common, run: () => refusedHere(name) } as never, { subAgent })
    : makeSend(name, {
      ...common,
      payload: input,
      prepare: () => refusedHere(name),
      deliver: () => refusedHere(name)
    } as never, { subAgent })
  registerInner(tool, toolkit)
  return tool
}
