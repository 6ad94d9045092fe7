// From whatever the openai client throws to a typed ModelError, and the retry
// policy: 429, 5xx, timeouts and dropped connections are retried with
// exponential backoff, waiting at least as long as the server's retry-after.
// The client's own retries are off, so this is the only policy.
import { Duration, Effect, Schedule } from "effect"
import { LanguageModel } from "@graded/core"

type Fields = ConstructorParameters<typeof LanguageModel.ModelError>[0]

const messageOf = (error: unknown): string => {
  if (typeof error === "object" && error !== null) {
    const body = "error" in error ? (error as { error?: unknown }).error : undefined
    if (typeof body === "object" && body !== null && "message" in body && typeof body.message === "string") {
      return body.message
    }
    if ("message" in error && typeof error.message === "string") return error.message
  }
  return String(error)
}

// `now` (from the Clock) turns an HTTP-date Retry-After into a wait.
export const toModelError = (error: unknown, now: number): LanguageModel.ModelError => {
  if (error instanceof LanguageModel.ModelError) return error
  // By class name, not instanceof: a client the user made may come from
  // another copy of the openai package.
  const name = typeof error === "object" && error !== null ? error.constructor?.name ?? "" : ""
  const status = typeof error === "object" && error !== null && "status" in error && typeof error.status === "number"
    ? error.status
    : undefined
  if (name === "APIConnectionTimeoutError") {
    return new LanguageModel.ModelError({ reason: "timeout", detail: messageOf(error) })
  }
  if (name === "APIConnectionError") {
    return new LanguageModel.ModelError({ reason: "connection", detail: messageOf(error) })
  }
  if (status === undefined) {
    return new LanguageModel.ModelError({ reason: "malformed-response", detail: messageOf(error) })
  }
  const fields: Fields = { reason: LanguageModel.reasonOfStatus(status), detail: messageOf(error), status }
  const wait = LanguageModel.retryAfterMillis((error as { headers?: unknown }).headers, now)
  return new LanguageModel.ModelError(wait === undefined ? fields : { ...fields, retryAfterMillis: wait })
}

// What reading a streamed body throws, after its headers came with a 2xx:
// an event that is no JSON (the client's JSON.parse), an error the server
// sent as an event (the client's APIError, with no status), or the body cut
// short (fetch's own error, "terminated"). Anything else is not the openai
// client's and cannot be told from a dropped connection.
export const toStreamError = (error: unknown): LanguageModel.ModelError => {
  if (error instanceof LanguageModel.ModelError) return error
  const name = typeof error === "object" && error !== null ? error.constructor?.name ?? "" : ""
  if (error instanceof SyntaxError) {
    return new LanguageModel.ModelError({
      reason: "malformed-response",
      detail: `a streamed event is not JSON: ${messageOf(error)}`
    })
  }
  if (name === "APIError") {
    const body = (error as { error?: unknown }).error
    const code = typeof body === "object" && body !== null && "code" in body ? body.code : undefined
    return providerFailure(code, messageOf(error))
  }
  if (name === "OpenAIError") {
    return new LanguageModel.ModelError({ reason: "malformed-response", detail: messageOf(error) })
  }
  return new LanguageModel.ModelError({ reason: "connection", detail: `the stream was cut: ${messageOf(error)}` })
}

// A failure the provider reports inside a stream that began well (a chat
// error event, a Responses `error` or `response.failed`): it has a code, not
// a status. Its own fault unless the code says otherwise.
export const providerFailure = (code: unknown, message: unknown): LanguageModel.ModelError => {
  const detail = `${typeof code === "string" ? `${code}: ` : ""}${
    typeof message === "string" ? message : "the provider reported a failure"
  }`
  const reason: LanguageModel.ModelErrorReason = code === "rate_limit_exceeded" ? "rate-limited"
    : code === "invalid_prompt" ? "bad-request"
    : "server"
  return new LanguageModel.ModelError({ reason, detail })
}

const isRetryable = (error: LanguageModel.ModelError): boolean =>
  error.reason === "rate-limited" || error.reason === "server" || error.reason === "timeout" ||
  error.reason === "connection" || error.reason === "conflict"

export interface RetryOptions {
  readonly maxRetries: number
  readonly base: Duration.Input
  readonly cap: Duration.Input
}

// `attempt` is 1 on the first retry.
export const retryPolicy = (
  options: RetryOptions
): Schedule.Schedule<LanguageModel.ModelError, LanguageModel.ModelError> =>
  Schedule.identity<LanguageModel.ModelError>().pipe(
    Schedule.while(({ attempt, input }) => isRetryable(input) && attempt <= options.maxRetries),
    Schedule.modifyDelay(({ attempt, input }) => {
      const backoff = Duration.min(
        Duration.times(Duration.fromInputUnsafe(options.base), 2 ** (attempt - 1)),
        Duration.fromInputUnsafe(options.cap)
      )
      return Effect.succeed(
        input.retryAfterMillis !== undefined ? Duration.max(Duration.millis(input.retryAfterMillis), backoff) : backoff
      )
    })
  )
