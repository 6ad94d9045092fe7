/**
 * The model as a service: one turn, messages and function definitions in,
 * text and tool calls out. `ScriptedModel` is the deterministic
 * implementation; `@graded/openai` is the real one.
 *
 * @since 0.1.0
 */
import { Context, Schema } from "effect"
import type { Effect } from "effect/Effect"
import type { Stream } from "effect/Stream"
import { sealed } from "./internal/seal.js"

/**
 * A JSON Schema object, as sent to a model.
 *
 * @since 0.1.0
 * @category models
 */
export type JsonSchema = { readonly [key: string]: unknown }

/**
 * An OpenAI function definition. `name` is the wire name.
 *
 * @since 0.1.0
 * @category models
 */
export interface FunctionSchema {
  readonly type: "function"
  readonly name: string
  readonly description: string
  readonly parameters: JsonSchema
  readonly strict: boolean
}

/**
 * A tool call as the model returned it: a wire name and the raw JSON text of
 * its arguments, which may be malformed.
 *
 * @since 0.1.0
 * @category models
 */
export interface ToolCall {
  readonly id: string
  readonly name: string
  readonly arguments: string
}

/**
 * One message of a conversation in graded's own form: the agent loop builds
 * these, and a model adapter translates them for its API.
 *
 * @since 0.1.0
 * @category models
 */
export type Message =
  | { readonly role: "system"; readonly content: string }
  | { readonly role: "user"; readonly content: string }
  | { readonly role: "assistant"; readonly content: string | undefined; readonly toolCalls: ReadonlyArray<ToolCall> }
  | { readonly role: "tool"; readonly callId: string; readonly name: string; readonly content: string }

/**
 * Tokens one turn used, as the provider reported them; `Agent.run` adds them up
 * over its turns.
 *
 * @since 0.1.0
 * @category models
 */
export interface Usage {
  readonly inputTokens: number
  readonly outputTokens: number
  /** What the provider says the turn cost, in its own unit (OpenRouter: US dollars), where it says. */
  readonly cost?: number | undefined
}

/**
 * One model turn.
 *
 * @since 0.1.0
 * @category models
 */
export interface Response {
  readonly text: string | undefined
  readonly toolCalls: ReadonlyArray<ToolCall>
  readonly usage?: Usage | undefined
}

/**
 * What one model turn is given: the conversation so far and the function
 * definitions of the tools the model may call.
 *
 * @since 0.1.0
 * @category models
 */
export interface Request {
  readonly messages: ReadonlyArray<Message>
  readonly tools: ReadonlyArray<FunctionSchema>
}

/**
 * One piece of a streamed turn, in graded's own form: a stretch of text, the
 * start of a tool call (its id and wire name), a stretch of its arguments'
 * JSON text, its end, and the turn's end with the tokens it used. `key` tells
 * the calls of one turn apart while they stream (a provider's index or item
 * id). A call is complete at its `call-end`, or at `finish` for a provider
 * that ends all calls at once; a call still open when the stream stops is cut
 * and is refused, never run. Adapters keep to this list.
 *
 * @since 0.1.0
 * @category models
 */
export type StreamPart =
  | { readonly type: "text-delta"; readonly delta: string }
  | { readonly type: "call-start"; readonly key: string; readonly id: string; readonly name: string }
  | { readonly type: "call-delta"; readonly key: string; readonly delta: string }
  | { readonly type: "call-end"; readonly key: string }
  | { readonly type: "finish"; readonly usage?: Usage | undefined }

/**
 * What kind of failure a `ModelError` is: `bad-request` (400 or 422, say a
 * gateway rejecting a definition), `unauthorized` (401), `forbidden` (403),
 * `not-found` (404), `conflict` (409), `rate-limited` (429), `server` (5xx),
 * `http` (any other status), `timeout`, `connection`, `malformed-response`,
 * `configuration` (the adapter could not be set up) and `script-exhausted`
 * (the scripted model ran out of turns). Adapters keep to this list.
 *
 * @since 0.1.0
 * @category models
 */
export const ModelErrorReason = Schema.Literals([
  "bad-request",
  "unauthorized",
  "forbidden",
  "not-found",
  "conflict",
  "rate-limited",
  "server",
  "http",
  "timeout",
  "connection",
  "malformed-response",
  "configuration",
  "script-exhausted"
])

/**
 * @since 0.1.0
 * @category models
 */
export type ModelErrorReason = typeof ModelErrorReason.Type

/**
 * The reason an HTTP status means, for an adapter's `ModelError`: 400 and 422
 * `bad-request`, 401 `unauthorized`, 403 `forbidden`, 404 `not-found`, 408
 * `timeout`, 409 `conflict`, 429 `rate-limited`, 5xx `server`, any other
 * `http`. One rule for every adapter.
 *
 * @since 0.2.0
 * @category models
 */
export const reasonOfStatus = (status: number): ModelErrorReason =>
  status === 400 || status === 422 ? "bad-request"
    : status === 401 ? "unauthorized"
    : status === 403 ? "forbidden"
    : status === 404 ? "not-found"
    : status === 408 ? "timeout"
    : status === 409 ? "conflict"
    : status === 429 ? "rate-limited"
    : status >= 500 ? "server"
    : "http"

const header = (headers: unknown, name: string): string | undefined => {
  if (typeof headers !== "object" || headers === null) return undefined
  if ("get" in headers && typeof headers.get === "function") {
    const value: unknown = headers.get(name)
    return typeof value === "string" ? value : undefined
  }
  for (const [key, value] of Object.entries(headers)) {
    if (key.toLowerCase() === name) return typeof value === "string" ? value : undefined
  }
  return undefined
}

/**
 * How long a provider asked to wait, in milliseconds, from its reply's
 * headers (a `Headers` object or a plain record): `retry-after-ms` (OpenAI's),
 * else `retry-after` in seconds or as an HTTP date, read against `now`.
 * `undefined` when it asked nothing readable.
 *
 * @since 0.2.0
 * @category models
 */
export const retryAfterMillis = (headers: unknown, now: number): number | undefined => {
  const ms = header(headers, "retry-after-ms")
  if (ms !== undefined && ms.trim() !== "" && Number.isFinite(Number(ms)) && Number(ms) >= 0) return Number(ms)
  const after = header(headers, "retry-after")
  if (after === undefined || after.trim() === "") return undefined
  const seconds = Number(after)
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000
  const date = Date.parse(after)
  return Number.isNaN(date) ? undefined : Math.max(0, date - now)
}

/**
 * The model could not answer. `reason` says what kind of failure
 * (`ModelErrorReason`); `detail` is the provider's own message.
 *
 * @since 0.1.0
 * @category errors
 */
export class ModelError extends Schema.TaggedError<ModelError>()("@graded/core/LanguageModel/ModelError", {
  reason: ModelErrorReason,
  detail: Schema.String,
  status: Schema.optional(Schema.Number),
  /** How long the provider asked to wait before trying again. */
  retryAfterMillis: Schema.optional(Schema.Number)
}) {
  override get message(): string {
    return `The model failed (${this.reason}${
      this.status !== undefined ? `, HTTP ${this.status}` : ""
    }): ${this.detail}`
  }
}

/**
 * The model that `Agent.run` and a plan's `generate` step call: provide
 * `ScriptedModel.layer` in tests, `@graded/openai`'s `OpenAiModel.layer` for a
 * real one.
 *
 * @since 0.1.0
 * @category services
 */
export class LanguageModel
  extends Context.Service<LanguageModel, LanguageModel.Service>()("@graded/core/LanguageModel")
{}

/**
 * @since 0.1.0
 */
export declare namespace LanguageModel {
  /**
   * What a model adapter implements: `generate` takes one turn and fails only
   * with a `ModelError`; `stream`, where the provider streams, gives the same
   * turn as it arrives. A streaming loop (`Agent.stream`) uses `stream` when
   * there is one and `generate` otherwise.
   *
   * @since 0.1.0
   * @category models
   */
  export interface Service {
    readonly generate: (request: Request) => Effect<Response, ModelError>
    readonly stream?: ((request: Request) => Stream<StreamPart, ModelError>) | undefined
    /**
     * Who serves the turns, in the words of OpenTelemetry's GenAI conventions
     * (`gen_ai.provider.name`: "openai", "anthropic", ...): recorded with each
     * turn's usage, so a trace says which provider answered.
     *
     * @since 0.4.0
     */
    readonly provider?: string | undefined
    /**
     * The model asked for (`gen_ai.request.model`), recorded with each turn's usage.
     *
     * @since 0.4.0
     */
    readonly model?: string | undefined
  }
}

// Sealed where they are made (Invocation.seal): each is shared by every
// fiber, and a tool's code that finds one must not rewrite it in place.
sealed(LanguageModel)
