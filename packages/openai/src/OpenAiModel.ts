/**
 * graded's `LanguageModel` over the official `openai` client, for OpenAI and
 * any OpenAI-compatible server (Azure, vLLM, Ollama, LiteLLM). Both the Chat
 * Completions and the Responses API, each turn whole or streamed; tool
 * definitions go out with their wire names and strict schemas, exactly as the
 * registry made them.
 *
 * @since 0.1.0
 */
import { Clock, Duration, Effect, type Layer, Stream } from "effect"
import { Invocation, LanguageModel } from "@graded/core"
import OpenAI from "openai"
import * as chat from "./internal/chat.js"
import * as chatStream from "./internal/chatStream.js"
import { retryPolicy, toModelError } from "./internal/errors.js"
import * as responses from "./internal/responses.js"
import * as responsesStream from "./internal/responsesStream.js"
import * as streamed from "./internal/stream.js"

/**
 * What `make` and `layer` take: the model, a client or the key and server to
 * make one, which API to call, and the timeout and retry settings.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** A client you made; otherwise one is made from `apiKey` and `baseURL`. */
  readonly client?: OpenAI | undefined
  readonly apiKey?: string | undefined
  /** An OpenAI-compatible server, e.g. `http://127.0.0.1:8000/v1` for vLLM. */
  readonly baseURL?: string | undefined
  readonly model: string
  /** Which API to call (default `"chat"`). */
  readonly api?: "chat" | "responses" | undefined
  /** Per request (default 60 seconds); streamed, also the longest wait between two events. */
  readonly timeout?: Duration.Input | undefined
  /** Retries of 409, 429, 5xx, timeouts and dropped connections (default 3). */
  readonly maxRetries?: number | undefined
  /** The first backoff delay, doubled each retry (default 500 ms); a longer retry-after wins. */
  readonly retryBase?: Duration.Input | undefined
  /** Let the model call several tools in one turn (default true). */
  readonly parallelToolCalls?: boolean | undefined
  /** Responses API only: whether the server keeps the response. */
  readonly store?: boolean | undefined
}

const client = (options: Options): OpenAI | LanguageModel.ModelError => {
  try {
    return options.client ?? new OpenAI({ apiKey: options.apiKey, baseURL: options.baseURL, maxRetries: 0 })
  } catch (error) {
    return new LanguageModel.ModelError({ reason: "configuration", detail: String(error) })
  }
}

/**
 * Makes the `LanguageModel` service itself, for code that wraps it or provides
 * it by hand; most apps want `layer`. It offers `stream` beside `generate`
 * (the loop decides which to call): the same request with `stream: true`,
 * retried only until its first part, since after it the human has seen tokens.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: Options): LanguageModel.LanguageModel.Service => {
  // The client refuses to be made without an API key; that becomes a typed
  // error on every turn rather than a throw where the layer is built.
  const made = client(options)
  const timeout = Duration.toMillis(Duration.fromInputUnsafe(options.timeout ?? "60 seconds"))
  const policy = retryPolicy({
    maxRetries: options.maxRetries ?? 3,
    base: options.retryBase ?? "500 millis",
    cap: "30 seconds"
  })
  const parallelToolCalls = options.parallelToolCalls ?? true
  // The client's own retries are off: the schedule above is the only policy.
  const requestOptions = (signal: AbortSignal) => ({ signal, timeout, maxRetries: 0 })

  const once = (client: OpenAI, request: LanguageModel.Request) =>
    Effect.tryPromise({
      try: (signal) =>
        options.api === "responses"
          ? client.responses.create(
            responses.body(options.model, request, { parallelToolCalls, store: options.store }),
            requestOptions(signal)
          ).then(responses.response)
          : client.chat.completions.create(
            chat.body(options.model, request, { parallelToolCalls }),
            requestOptions(signal)
          )
            .then(chat.response),
      catch: (error) => error
    }).pipe(
      Effect.catch((error) => Effect.flatMap(Clock.currentTimeMillis, (now) => Effect.fail(toModelError(error, now)))),
      Effect.flatMap((response) =>
        typeof response === "string"
          ? Effect.fail(new LanguageModel.ModelError({ reason: "malformed-response", detail: response }))
          : Effect.succeed(response)
      )
    )

  // The same bodies with `stream: true`; a stream is retried only until its first part (internal/stream.ts).
  const open = (client: OpenAI, request: LanguageModel.Request) => (signal: AbortSignal) =>
    options.api === "responses"
      ? client.responses.create(
        responsesStream.body(options.model, request, { parallelToolCalls, store: options.store }),
        requestOptions(signal)
      )
      : client.chat.completions.create(
        chatStream.body(options.model, request, { parallelToolCalls }),
        requestOptions(signal)
      )

  return {
    provider: "openai",
    model: options.model,
    generate: (request) =>
      made instanceof LanguageModel.ModelError ? Effect.fail(made) : Effect.retry(once(made, request), policy),
    stream: (request) =>
      made instanceof LanguageModel.ModelError
        ? Stream.fail(made)
        : streamed.turn(
          open(made, request),
          options.api === "responses" ? responsesStream.decoder : chatStream.decoder,
          policy,
          timeout
        )
  }
}

/**
 * Provides `LanguageModel` from OpenAI or a compatible server: what `Agent.run`
 * and a plan's `generate` step call, where tests provide `ScriptedModel.layer`.
 *
 * @example
 * import { OpenAiModel } from "@graded/openai"
 * const model = OpenAiModel.layer({ apiKey: process.env.OPENAI_API_KEY, model: "gpt-4o-mini", api: "responses" })
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: Options): Layer.Layer<LanguageModel.LanguageModel> =>
  Invocation.freshLayer(LanguageModel.LanguageModel, () => Effect.sync(() => Object.freeze(make(options))))
