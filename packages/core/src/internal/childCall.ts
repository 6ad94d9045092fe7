// One call of a sub-agent holding writes or sends, as its calling durable run
// records it (runs.ts): the input decoded (a bad one refused), then the
// sub-agent's answer made the call's outcome (a failure told to the model
// with the tool's fixed text).
import { Effect, Result, Schema } from "effect"
import * as Audit from "../Audit.js"
import type { ToolCall } from "../LanguageModel.js"
import type { Any as AnyTool } from "../Tool.js"
import { invalidInputMessage, issueOf, parseOptions } from "../ToolError.js"
import { denied, type Outcome } from "./agent.js"
import { failureOf } from "./registry.js"

/** The call's input decoded with the sub-agent's input schema, or the refusal the model is told. */
export const childInput = (
  tool: AnyTool,
  call: ToolCall,
  input: unknown,
  note: (event: Audit.Event) => Effect.Effect<void> = Audit.record
) =>
  Effect.gen(function*() {
    const decoded = Schema.decodeUnknownResult(tool.input, parseOptions)(input)
    if (Result.isSuccess(decoded)) return Result.succeed(decoded.success as unknown)
    const issue = issueOf(decoded.failure)
    yield* note({ type: "refused", tool: tool.name, gate: "input", reason: issue })
    return Result.fail(denied(call.id, tool.name, "invalid-input", invalidInputMessage(tool.name, issue)))
  })

/**
 * The call's outcome once the sub-agent answered (or failed to): audited as
 * any call's, through `note` (a durable run's: written with its next commit,
 * so a restart that reads the answer again does not audit it twice).
 */
export const childOutcome = <E, R>(
  tool: AnyTool,
  call: ToolCall,
  input: unknown,
  answer: Effect.Effect<unknown, E, R>,
  note: (event: Audit.Event) => Effect.Effect<void> = Audit.record
): Effect.Effect<Outcome, never, R> =>
  Effect.gen(function*() {
    const answered = yield* Effect.result(answer)
    // What the model is told of a failure: the tool's fixed text for it, as for any call.
    const failed = (error: unknown) =>
      Effect.gen(function*() {
        const { code, message } = failureOf(tool, error)
        yield* note({ type: "failed", tool: tool.name, error: message })
        return denied(call.id, tool.name, code, message)
      })
    if (Result.isFailure(answered)) return yield* failed(answered.failure)
    const encoded = Schema.encodeUnknownResult(tool.output)(answered.success)
    if (Result.isFailure(encoded)) return yield* failed(encoded.failure)
    const content = JSON.stringify({ ok: true, data: encoded.success })
    yield* note({ type: "completed", tool: tool.name, chars: content.length })
    return {
      call: { ok: true as const, id: call.id, tool: tool.name, input, output: answered.success },
      content
    }
  })
