// One call of a sub-agent holding writes or sends, as its calling run records
// it: the input decoded (a bad one refused), then the sub-agent's answer made
// the call's outcome (a failure told to the model with the tool's fixed text).
// One home for Agent.supervised's child run and a durable run's nested one.
import { Effect, Result, Schema } from "effect"
import * as Audit from "../Audit.js"
import type { ToolCall } from "../LanguageModel.js"
import type { Any as AnyTool } from "../Tool.js"
import { invalidInputMessage, issueOf, parseOptions } from "../ToolError.js"
import { denied, type Outcome } from "./agent.js"
import { failureOf } from "./registry.js"

/** The call's input decoded with the sub-agent's input schema, or the refusal the model is told. */
export const childInput = (tool: AnyTool, call: ToolCall, input: unknown) =>
  Effect.gen(function*() {
    const decoded = Schema.decodeUnknownResult(tool.input, parseOptions)(input)
    if (Result.isSuccess(decoded)) return Result.succeed(decoded.success as unknown)
    const issue = issueOf(decoded.failure)
    yield* Audit.record({ type: "refused", tool: tool.name, gate: "input", reason: issue })
    return Result.fail(denied(call.id, tool.name, "invalid-input", invalidInputMessage(tool.name, issue)))
  })

/** The call's outcome once the sub-agent answered (or failed to): audited as any call's. */
export const childOutcome = <E, R>(
  tool: AnyTool,
  call: ToolCall,
  input: unknown,
  answer: Effect.Effect<unknown, E, R>
): Effect.Effect<Outcome, never, R> =>
  Effect.gen(function*() {
    const answered = yield* Effect.result(answer)
    // What the model is told of a failure: the tool's fixed text for it, as for any call.
    const failed = (error: unknown) =>
      Effect.gen(function*() {
        const { code, message } = failureOf(tool, error)
        yield* Audit.record({ type: "failed", tool: tool.name, error: message })
        return denied(call.id, tool.name, code, message)
      })
    if (Result.isFailure(answered)) return yield* failed(answered.failure)
    const encoded = Schema.encodeUnknownResult(tool.output)(answered.success)
    if (Result.isFailure(encoded)) return yield* failed(encoded.failure)
    const content = JSON.stringify({ ok: true, data: encoded.success })
    yield* Audit.record({ type: "completed", tool: tool.name, chars: content.length })
    return {
      call: { ok: true as const, id: call.id, tool: tool.name, input, output: answered.success },
      content
    }
  })
