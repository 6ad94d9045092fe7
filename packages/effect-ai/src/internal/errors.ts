// From whatever effect/ai fails or dies with to a typed ModelError. An HTTP
// status, where the provider kept one, decides the reason (LanguageModel.reasonOfStatus, as for
// every adapter); otherwise the AiError's reason does. A defect (a provider that threw
// on output it could not read) is a malformed response, never a throw.
import { Duration } from "effect"
import { LanguageModel } from "@graded/core"
import { AiError } from "effect/ai"

type Fields = ConstructorParameters<typeof LanguageModel.ModelError>[0]

// When the provider gives no status: what the AiError's reason says.
const reasonOfTag = (reason: AiError.AiErrorReason): LanguageModel.ModelErrorReason => {
  switch (reason._tag) {
    case "RateLimitError":
    case "QuotaExhaustedError":
      return "rate-limited"
    case "AuthenticationError":
      return reason.kind === "InsufficientPermissions" ? "forbidden" : "unauthorized"
    case "ContentPolicyError":
    case "InvalidRequestError":
    case "InvalidUserInputError":
    case "UnsupportedSchemaError":
      return "bad-request"
    case "InternalProviderError":
      return "server"
    case "NetworkError":
      return reason.reason === "TransportError" ? "connection"
        : reason.reason === "InvalidUrlError" ? "configuration"
        : "bad-request"
    case "ToolkitRequiredError":
    case "ToolConfigurationError":
      return "configuration"
    // What the provider sent could not be read, or named a call it could not
    // make out (an undeclared tool, parameters that are not JSON).
    case "InvalidResponseError":
    case "InvalidOutputError":
    case "StructuredOutputError":
    case "ToolNotFoundError":
    case "ToolParameterValidationError":
    case "InvalidToolResultError":
    case "ToolResultEncodingError":
    case "UnknownError":
      return "malformed-response"
  }
}

const httpOf = (reason: AiError.AiErrorReason): { readonly status?: number; readonly headers?: unknown } => {
  const http = "http" in reason ? reason.http : undefined
  const response = http?.response
  return response === undefined ? {} : { status: response.status, headers: response.headers }
}

const textOf = (value: unknown): string => {
  if (value instanceof Error) return value.message
  if (typeof value === "string") return value
  try {
    return JSON.stringify(value) ?? String(value)
  } catch {
    return String(value)
  }
}

// What the providers say when effect/http could not read a response's body:
// its DecodeError, which they pass on without its cause. A stream's events
// are decoded from text afterwards (their errors say what was wrong), so in a
// stream this is the body itself failing: the connection dropped.
const unreadableBody = "Failed to decode response"

const cut = (reason: AiError.AiErrorReason): boolean =>
  reason._tag === "InvalidOutputError" && reason.description === unreadableBody

/**
 * `now` (from the Clock) turns an HTTP-date Retry-After into a wait;
 * `streaming` says the failure ended a stream (where an unreadable body is a
 * dropped connection).
 */
export const fromFailure = (error: unknown, now: number, streaming: boolean): LanguageModel.ModelError => {
  if (error instanceof LanguageModel.ModelError) return error
  if (!AiError.isAiError(error)) {
    return new LanguageModel.ModelError({ reason: "malformed-response", detail: textOf(error) })
  }
  if (streaming && cut(error.reason)) {
    return new LanguageModel.ModelError({
      reason: "connection",
      detail: `${error.message}: the connection dropped before the stream was complete`
    })
  }
  const { headers, status } = httpOf(error.reason)
  const fields: Fields = {
    reason: status !== undefined ? LanguageModel.reasonOfStatus(status) : reasonOfTag(error.reason),
    detail: error.message,
    ...(status !== undefined ? { status } : {})
  }
  const retryAfter = error.retryAfter
  const wait = retryAfter !== undefined ? Duration.toMillis(retryAfter) : LanguageModel.retryAfterMillis(headers, now)
  return new LanguageModel.ModelError(wait === undefined ? fields : { ...fields, retryAfterMillis: wait })
}

export const fromDefect = (defect: unknown): LanguageModel.ModelError =>
  new LanguageModel.ModelError({
    reason: "malformed-response",
    detail: `the effect/ai provider failed on what it was sent: ${textOf(defect)}`
  })

// An `error` part in a stream: the provider's error event (Anthropic's
// `{ type, message }`, OpenAI's `{ code, message }`).
const eventReasons = new Map<unknown, LanguageModel.ModelErrorReason>([
  ["invalid_request_error", "bad-request"],
  ["authentication_error", "unauthorized"],
  ["permission_error", "forbidden"],
  ["not_found_error", "not-found"],
  ["rate_limit_error", "rate-limited"],
  ["rate_limit_exceeded", "rate-limited"],
  ["api_error", "server"],
  ["overloaded_error", "server"],
  ["server_error", "server"]
])

export const fromErrorPart = (error: unknown): LanguageModel.ModelError => {
  const field = (key: string): unknown =>
    typeof error === "object" && error !== null ? (error as Record<string, unknown>)[key] : undefined
  const type = field("type") ?? field("code")
  const message = field("message")
  return new LanguageModel.ModelError({
    reason: eventReasons.get(type) ?? "server",
    detail: `the provider's stream reported an error: ${typeof message === "string" ? message : textOf(error)}`
  })
}
