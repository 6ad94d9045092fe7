/**
 * graded's `LanguageModel` over any effect/ai `LanguageModel`, so that the
 * effect/ai providers (`@effect/ai-anthropic`, `@effect/ai-openai`, ...) run
 * graded's agents. Tool definitions reach the provider with their wire names
 * and the JSON Schemas the registry made, strict where graded says strict; the
 * calls come back with those names and their arguments as JSON text. effect/ai
 * never runs a tool: each turn asks it with tool call resolution disabled and
 * validation deferred, with a toolkit that has no handlers; graded checks,
 * confirms and runs every call itself.
 *
 * @since 0.1.0
 */
import { Effect, type Layer } from "effect"
import { LanguageModel as AiLanguageModel } from "effect/ai"
import { Invocation, LanguageModel } from "@graded/core"
import { service } from "./internal/model.js"

/**
 * Makes graded's `LanguageModel` service from the effect/ai `LanguageModel` in
 * context, for code that wraps it or provides it by hand; most apps want
 * `layer`. `generate` is one `generateText` call, `stream` one `streamText`
 * call; both fail only with a `ModelError`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make: Effect.Effect<LanguageModel.LanguageModel.Service, never, AiLanguageModel.LanguageModel> = Effect
  .map(Effect.service(AiLanguageModel.LanguageModel), (model) => Object.freeze(service(model)))

/**
 * Provides graded's `LanguageModel` from an effect/ai `LanguageModel`: what
 * `Agent.run`, `Agent.stream` and a plan's `generate` step call. Provide the
 * effect/ai provider's layer to it.
 *
 * @example
 * import { AnthropicClient, AnthropicLanguageModel } from "@effect/ai-anthropic"
 * import { Config, Layer } from "effect"
 * import { FetchHttpClient } from "effect/http"
 * import { EffectAiModel } from "@graded/effect-ai"
 *
 * const model = EffectAiModel.layer.pipe(
 *   Layer.provide(AnthropicLanguageModel.layer({ model: "claude-sonnet-4-5" })),
 *   Layer.provide(AnthropicClient.layerConfig({ apiKey: Config.Redacted("ANTHROPIC_API_KEY") })),
 *   Layer.provide(FetchHttpClient.layer)
 * )
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<LanguageModel.LanguageModel, never, AiLanguageModel.LanguageModel> = Invocation
  .freshLayer(LanguageModel.LanguageModel, () => make)
