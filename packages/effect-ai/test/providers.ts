// The effect/ai providers under test, each pointed at a loopback server, and
// what the tests do with graded's model: one turn, generated or streamed.
import { AnthropicClient, AnthropicLanguageModel } from "@effect/ai-anthropic"
import { OpenAiClient, OpenAiLanguageModel } from "@effect/ai-openai"
import { Effect, Layer, Redacted, Stream } from "effect"
import { FetchHttpClient } from "effect/http"
import { LanguageModel, Registry, Toolkit } from "@graded/core"
import { EffectAiModel } from "@graded/effect-ai"
import { makeDesk } from "../../core/test/supportDesk.js"

export const anthropic = (url: string) =>
  EffectAiModel.layer.pipe(
    Layer.provide(AnthropicLanguageModel.layer({ model: "claude-sonnet-4-5" })),
    Layer.provide(AnthropicClient.layer({ apiKey: Redacted.make("test-key"), apiUrl: url })),
    Layer.provide(FetchHttpClient.layer)
  )

export const openAi = (url: string) =>
  EffectAiModel.layer.pipe(
    Layer.provide(OpenAiLanguageModel.layer({ model: "gpt-4.1" })),
    Layer.provide(OpenAiClient.layer({ apiKey: Redacted.make("test-key"), apiUrl: `${url}/v1` })),
    Layer.provide(FetchHttpClient.layer)
  )

// Two read tools, so one turn can carry two calls; the send tool is never offered.
export const desk = () => {
  const made = makeDesk()
  const readOnly = Toolkit.readOnly(Toolkit.make(made.KbSearch, made.CustomerLookup, made.SendReply))
  return { ...made, readOnly, definitions: Registry.make(readOnly).functionSchemas({ autonomous: true }) }
}

export const request = (
  tools: ReadonlyArray<LanguageModel.FunctionSchema>,
  history: ReadonlyArray<LanguageModel.Message> = []
): LanguageModel.Request => ({
  messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "Asked before?" }, ...history],
  tools
})

type Layered = Layer.Layer<LanguageModel.LanguageModel, unknown>

export const generate = (layer: Layered, request: LanguageModel.Request) =>
  Effect.flatMap(Effect.service(LanguageModel.LanguageModel), (model) => model.generate(request)).pipe(
    Effect.provide(layer)
  )

/** The parts a streamed turn gave, and how the stream ended (undefined: it completed). */
export const streamed = (layer: Layered, request: LanguageModel.Request) =>
  Effect.gen(function*() {
    const model = yield* Effect.service(LanguageModel.LanguageModel)
    const parts: Array<LanguageModel.StreamPart> = []
    const stream = model.stream
    if (stream === undefined) return yield* Effect.die("the model does not stream")
    const exit = yield* Effect.exit(Stream.runForEach(stream(request), (part) => Effect.sync(() => parts.push(part))))
    return { parts, error: exit._tag === "Failure" ? exit.cause : undefined }
  }).pipe(Effect.provide(layer))

/** A completed stream's parts as one turn, the way graded puts one together. */
export const assembled = (parts: ReadonlyArray<LanguageModel.StreamPart>): LanguageModel.Response => {
  const text: Array<string> = []
  const calls = new Map<string, { id: string; name: string; args: Array<string> }>()
  let usage: LanguageModel.Usage | undefined
  for (const part of parts) {
    if (part.type === "text-delta") text.push(part.delta)
    if (part.type === "call-start") calls.set(part.key, { id: part.id, name: part.name, args: [] })
    if (part.type === "call-delta") calls.get(part.key)?.args.push(part.delta)
    if (part.type === "finish") usage = part.usage
  }
  return {
    text: text.length > 0 ? text.join("") : undefined,
    toolCalls: [...calls.values()].map((call) => ({ id: call.id, name: call.name, arguments: call.args.join("") })),
    usage
  }
}
