import { Cause, Effect, Either, Exit, Option, Schema } from "effect"
import * as Audit from "../Audit.js"
import { type Request, SendCapability, WriteCapability } from "../Capability.js"
import * as Invocation from "../Invocation.js"
import { LanguageModel, type Message, type ToolCall, type Usage } from "../LanguageModel.js"
import type { Any as AnyTool } from "../Tool.js"
import type { Any as AnyToolkit } from "../Toolkit.js"
import { InvalidEdit, InvalidInput, InvalidOutput, Refused, Rejected } from "../ToolError.js"
import { fromWire } from "../Wire.js"
import { grant, OnlyGradedLayersGrantThis } from "./capability.js"
import { compile, type Compiled } from "./functionSchema.js"
import { issueText, strict } from "./tool.js"

export const autonomousViolation = <const Offenses extends string>(offenses: Offenses) =>
  `Agent.run takes read tools only: ${offenses}. Pass Toolkit.readOnly(toolkit), or let a human confirm these tools through HumanConfirm` as const

// The part of the message about one tool. At run time only the grade is
// visible; a read tool's requirements were checked by the compiler.
const offense = (tool: AnyTool): string | undefined =>
  tool.grade === "read"
    ? undefined
    : `${tool.name} (${tool.grade}) needs ${tool.grade === "write" ? "WriteCapability" : "SendCapability"}`

export interface RunOptions {
  readonly toolkit: AnyToolkit
  readonly prompt?: string | undefined
  readonly messages?: ReadonlyArray<Message> | undefined
  readonly maxRounds?: number | undefined
  readonly system?: string | undefined
  readonly context?: Partial<Invocation.Context> | undefined
}

type Code = "unknown-tool" | "not-offered" | "invalid-arguments" | "refused" | "rejected" | "failed" | "round-limit"

interface Outcome {
  readonly call:
    | { readonly ok: true; readonly id: string; readonly tool: string; readonly input: unknown; readonly output: unknown }
    | {
      readonly ok: false
      readonly id: string
      readonly tool: string
      readonly error: { readonly code: Code; readonly message: string }
    }
  readonly content: string
}

// Inside the loop every write or send is refused, even when an outer layer
// provided a real HumanConfirm: the loop's own services shadow it.
const refuse = <P>(request: Request<P>) =>
  Effect.fail(
    new Refused({ tool: request.tool, gate: "autonomous", reason: "a model chose this call; it needs a human" })
  )
const refusingWrite = grant({ [OnlyGradedLayersGrantThis]: "WriteCapability" as const, authorize: refuse })
const refusingSend = grant({ [OnlyGradedLayersGrantThis]: "SendCapability" as const, confirm: refuse })

const denied = (id: string, tool: string, code: Code, message: string): Outcome => ({
  call: { ok: false, id, tool, error: { code, message } },
  content: JSON.stringify({ ok: false, error: { code, message } })
})

const codeOf = (error: unknown): Code =>
  error instanceof Refused ? "refused"
  : error instanceof Rejected || error instanceof InvalidEdit ? "rejected"
  : error instanceof InvalidInput ? "invalid-arguments"
  : "failed"

// What the model sees of a failure: graded's own messages, or the tool's
// fixed text for its error tag; raw exception text never reaches it.
const failureText = (tool: AnyTool, error: unknown): string => {
  if (
    error instanceof Refused || error instanceof Rejected || error instanceof InvalidEdit ||
    error instanceof InvalidInput
  ) return error.message
  if (error instanceof InvalidOutput) return `${tool.name} produced a result it may not return.`
  const tag = typeof error === "object" && error !== null && "_tag" in error ? String(error._tag) : undefined
  return (tag !== undefined ? tool.failureMessages?.[tag] : undefined) ?? `${tool.name} failed.`
}

interface Offered {
  readonly tool: AnyTool
  readonly compiled: Compiled
}

const parse = (text: string): Either.Either<unknown, string> => {
  try {
    return Either.right(JSON.parse(text))
  } catch {
    return Either.left("the arguments are not valid JSON")
  }
}

const dispatch = (
  toolkit: AnyToolkit,
  offered: ReadonlyMap<string, Offered>,
  refusedBefore: Set<string>,
  call: ToolCall
) =>
  Effect.gen(function*() {
    const name = fromWire(call.name)
    const entry = offered.get(call.name)
    if (entry === undefined) {
      const known = toolkit.get(name) ?? toolkit.get(call.name)
      const reason = known !== undefined
        ? `${known.name} is not offered to the model here`
        : `there is no tool named ${name}`
      yield* Audit.record({ type: "refused", tool: name, gate: "offered", reason })
      return denied(call.id, name, known !== undefined ? "not-offered" : "unknown-tool", reason)
    }
    const { compiled, tool } = entry
    const key = `${call.name}\u0000${call.arguments}`
    if (refusedBefore.has(key)) {
      const reason = "this exact call was already refused in this run; it is not asked again"
      yield* Audit.record({ type: "refused", tool: tool.name, gate: "repeat", reason })
      return denied(call.id, tool.name, "refused", reason)
    }
    const parsed = parse(call.arguments)
    if (Either.isLeft(parsed)) {
      yield* Audit.record({ type: "refused", tool: tool.name, gate: "input", reason: parsed.left })
      return denied(call.id, tool.name, "invalid-arguments", `Invalid input for ${tool.name}: ${parsed.left}`)
    }
    const decoded = Schema.decodeUnknownEither(tool.input, strict)(compiled.normalize(parsed.right))
    if (Either.isLeft(decoded)) {
      const issue = issueText(decoded.left)
      yield* Audit.record({ type: "refused", tool: tool.name, gate: "input", reason: issue })
      return denied(call.id, tool.name, "invalid-arguments", `Invalid input for ${tool.name}: ${issue}`)
    }
    yield* Audit.record({ type: "called", tool: tool.name, input: parsed.right })
    const exit = yield* tool.invoke(decoded.right).pipe(
      Effect.flatMap((output) =>
        Schema.encode(tool.output)(output).pipe(
          Effect.map((encoded) => ({ output, encoded })),
          Effect.mapError((error) => new InvalidOutput({ tool: tool.name, issue: issueText(error) }))
        )
      ),
      Effect.provideService(WriteCapability, refusingWrite),
      Effect.provideService(SendCapability, refusingSend),
      Effect.exit
    )
    if (Exit.isSuccess(exit)) {
      const content = JSON.stringify({ ok: true, data: exit.value.encoded ?? null })
      yield* Audit.record({ type: "completed", tool: tool.name, chars: content.length })
      const outcome: Outcome = {
        call: { ok: true, id: call.id, tool: tool.name, input: decoded.right, output: exit.value.output },
        content
      }
      return outcome
    }
    const failure = Cause.failureOption(exit.cause)
    if (Option.isSome(failure)) {
      const error = failure.value
      const code = codeOf(error)
      const message = failureText(tool, error)
      if (code === "refused" || code === "rejected") refusedBefore.add(key)
      if (error instanceof Refused) {
        yield* Audit.record({ type: "refused", tool: tool.name, gate: error.gate, reason: error.reason })
      } else {
        yield* Audit.record({ type: "failed", tool: tool.name, error: message })
      }
      return denied(call.id, tool.name, code, message)
    }
    const message = `${tool.name} failed unexpectedly.`
    yield* Audit.record({ type: "failed", tool: tool.name, error: message, cause: Cause.pretty(exit.cause) })
    return denied(call.id, tool.name, "failed", message)
  })

const initialMessages = (options: RunOptions): Array<Message> => {
  const messages: Array<Message> = []
  if (options.system !== undefined) messages.push({ role: "system", content: options.system })
  if (options.messages !== undefined) messages.push(...options.messages)
  if (options.prompt !== undefined) messages.push({ role: "user", content: options.prompt })
  return messages
}

const loop = (options: RunOptions, maxRounds: number) =>
  Effect.gen(function*() {
    const model = yield* LanguageModel
    const offered = new Map<string, Offered>()
    const suppressed: Array<{ tool: string; reason: string }> = []
    for (const tool of options.toolkit.tools) {
      const reason = offense(tool)
      if (reason !== undefined) suppressed.push({ tool: tool.name, reason })
      else {
        const compiled = compile(tool)
        offered.set(compiled.definition.name, { tool, compiled })
      }
    }
    yield* Audit.record({
      type: "offered",
      tools: [...offered.values()].map((entry) => entry.tool.name),
      suppressed
    })
    const tools = [...offered.values()].map((entry) => entry.compiled.definition)
    const messages = initialMessages(options)
    const calls: Array<Outcome["call"]> = []
    const refusedBefore = new Set<string>()
    const usage = { inputTokens: 0, outputTokens: 0 }
    const result = (stopped: "answer" | "round-limit", rounds: number, answer: string | undefined) => ({
      stopped,
      answer,
      rounds,
      calls,
      messages,
      usage: usage as Usage
    })
    for (let round = 1;; round++) {
      const response = yield* model.generate({ messages: [...messages], tools })
      usage.inputTokens += response.usage?.inputTokens ?? 0
      usage.outputTokens += response.usage?.outputTokens ?? 0
      messages.push({ role: "assistant", content: response.text, toolCalls: response.toolCalls })
      if (response.toolCalls.length === 0) {
        yield* Audit.record({ type: "answered", rounds: round })
        return result("answer", round, response.text)
      }
      if (round >= maxRounds) {
        // The budget is spent: nothing more runs, and the caller sees what was asked.
        for (const call of response.toolCalls) {
          const outcome = denied(call.id, fromWire(call.name), "round-limit", `the limit of ${maxRounds} rounds is reached`)
          calls.push(outcome.call)
          messages.push({ role: "tool", callId: call.id, name: call.name, content: outcome.content })
        }
        yield* Audit.record({ type: "round-limit", rounds: round, pending: response.toolCalls.map((c) => fromWire(c.name)) })
        return result("round-limit", round, response.text)
      }
      for (const call of response.toolCalls) {
        const outcome = yield* dispatch(options.toolkit, offered, refusedBefore, call)
        calls.push(outcome.call)
        messages.push({ role: "tool", callId: call.id, name: call.name, content: outcome.content })
      }
    }
  })

export class InvalidOptions extends Schema.TaggedError<InvalidOptions>()("@graded/core/Agent/InvalidOptions", {
  option: Schema.String,
  issue: Schema.String
}) {
  override get message(): string {
    return `Agent.run: ${this.option} ${this.issue}`
  }
}

export const run = (options: RunOptions) =>
  Effect.gen(function*() {
    const maxRounds = options.maxRounds ?? 4
    if (!Number.isInteger(maxRounds) || maxRounds < 1) {
      return yield* new InvalidOptions({ option: "maxRounds", issue: `must be a positive whole number, got ${maxRounds}` })
    }
    if (options.prompt === undefined && (options.messages === undefined || options.messages.length === 0)) {
      return yield* new InvalidOptions({ option: "prompt", issue: "is missing: give a prompt or messages" })
    }
    const outer = yield* Invocation.current
    const context: Partial<Invocation.Context> = {
      ...options.context,
      autonomous: true,
      traceId: options.context?.traceId ?? outer.traceId ?? crypto.randomUUID()
    }
    return yield* Invocation.within(context)(loop(options, maxRounds))
  })
