// graded's model over a hand-made effect/ai LanguageModel (LanguageModel.make)
// that speaks OpenAI's Responses API: what @effect/ai-openai 4.0.0-beta.106
// cannot do for graded's JSON-Schema tools (openai.test.ts), done the way
// effect/ai's contract asks: parts in, validation deferred. Calls come back
// through effect/ai's own decoding, including a call to a tool that was not
// offered (deferred validation hands it to graded, which refuses it).
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Stream } from "effect"
import { AiError, LanguageModel as AiLanguageModel, Tool } from "effect/ai"
import { Sse } from "effect/encoding"
import { FetchHttpClient, HttpClient, HttpClientRequest } from "effect/http"
import { Agent } from "@graded/core"
import { EffectAiModel } from "@graded/effect-ai"
import { assembled, desk, generate, request, streamed } from "./providers.js"
import * as Replay from "./ReplayServer.js"

const failedWith = (description: string) =>
  AiError.make({
    module: "Handmade",
    method: "responses",
    reason: new AiError.InvalidOutputError({ description })
  })

const usage = (json: any) => ({
  inputTokens: { total: json?.input_tokens },
  outputTokens: { total: json?.output_tokens }
})

const handmade = (url: string) =>
  Layer.effect(
    AiLanguageModel.LanguageModel,
    Effect.gen(function*() {
      const client = yield* HttpClient.HttpClient
      const post = (options: AiLanguageModel.ProviderOptions, stream: boolean) =>
        client.execute(
          HttpClientRequest.post(`${url}/v1/responses`).pipe(HttpClientRequest.bodyJsonUnsafe({
            model: "gpt-4.1",
            input: options.prompt.content.map((message) => ({ role: message.role })),
            tools: options.tools.map((tool) => ({
              type: "function",
              name: tool.name,
              description: Tool.getDescription(tool),
              parameters: Tool.getJsonSchema(tool),
              strict: Tool.getStrictMode(tool)
            })),
            stream
          }))
        ).pipe(Effect.mapError((error) => failedWith(error.message)))
      return yield* AiLanguageModel.make({
        generateText: (options) =>
          post(options, false).pipe(
            Effect.flatMap((response) => Effect.mapError(response.json, (error) => failedWith(error.message))),
            Effect.map((json: any): Array<any> => [
              ...json.output.flatMap((item: any) =>
                item.type === "message"
                  ? item.content.map((content: any) => ({ type: "text", text: content.text }))
                  : [{ type: "tool-call", id: item.call_id, name: item.name, params: JSON.parse(item.arguments) }]
              ),
              { type: "finish", reason: "stop", usage: usage(json.usage) }
            ])
          ),
        streamText: (options) => {
          const calls = new Map<number, { id: string; name: string }>()
          return post(options, true).pipe(
            Effect.map((response) => response.stream),
            Stream.unwrap,
            Stream.mapError((error) => failedWith(error.message)),
            Stream.decodeText,
            Stream.pipeThroughChannel(Sse.decode()),
            Stream.mapError((error) => failedWith(String(error))),
            Stream.flatMap((event): Stream.Stream<any> => {
              const data = JSON.parse(event.data)
              switch (data.type) {
                case "response.output_text.delta":
                  return Stream.make({ type: "text-delta", id: data.item_id, delta: data.delta })
                case "response.output_item.added": {
                  if (data.item.type !== "function_call") return Stream.empty
                  calls.set(data.output_index, { id: data.item.call_id, name: data.item.name })
                  return Stream.make({ type: "tool-params-start", id: data.item.call_id, name: data.item.name })
                }
                case "response.function_call_arguments.delta":
                  return Stream.make({
                    type: "tool-params-delta",
                    id: calls.get(data.output_index)?.id,
                    delta: data.delta
                  })
                case "response.function_call_arguments.done": {
                  const call = calls.get(data.output_index)!
                  return Stream.make(
                    { type: "tool-params-end", id: call.id },
                    { type: "tool-call", id: call.id, name: call.name, params: JSON.parse(data.arguments) }
                  )
                }
                case "response.completed":
                  return Stream.make({ type: "finish", reason: "stop", usage: usage(data.response.usage) })
                default:
                  return Stream.empty
              }
            })
          )
        }
      })
    })
  )

const model = (url: string) =>
  EffectAiModel.layer.pipe(Layer.provide(handmade(url)), Layer.provide(FetchHttpClient.layer))

const turn: Replay.Turn = {
  text: "Looking.",
  calls: [
    { id: "call_a", name: "kb__search", arguments: "{\"query\": \"vat\", \"limit\": null}" },
    { id: "call_x", name: "ticket__submit", arguments: "{\"subject\":\"VAT\"}" }
  ],
  usage: { input: 21, output: 8 }
}

describe("EffectAiModel over a hand-made effect/ai LanguageModel speaking the Responses API", () => {
  it.live("streamed and not: the same turn; an undeclared tool's call comes back as the model named it", () =>
    Effect.gen(function*() {
      const { definitions } = desk()
      const server = yield* Replay.make([Replay.openAiJson(turn), Replay.openAiSse(turn)])
      const whole = yield* generate(model(server.url), request(definitions))
      const { error, parts } = yield* streamed(model(server.url), request(definitions))
      expect(error).toBeUndefined()
      // Parsed and serialized again when not streamed; the provider's own text when streamed.
      expect(whole).toEqual({
        text: "Looking.",
        toolCalls: [
          { id: "call_a", name: "kb__search", arguments: "{\"query\":\"vat\",\"limit\":null}" },
          { id: "call_x", name: "ticket__submit", arguments: "{\"subject\":\"VAT\"}" }
        ],
        usage: { inputTokens: 21, outputTokens: 8 }
      })
      expect(assembled(parts)).toEqual({ ...whole, toolCalls: turn.calls })
      expect(server.requests[0]?.body.tools).toEqual(definitions.map((definition) => ({
        type: "function",
        name: definition.name,
        description: definition.description,
        parameters: definition.parameters,
        strict: true
      })))
    }))

  it.live("the loop refuses the undeclared call, runs the offered one and goes on", () =>
    Effect.gen(function*() {
      const { effects, readOnly } = desk()
      const server = yield* Replay.make([Replay.openAiJson(turn), Replay.openAiJson({ text: "Done." })])
      const result = yield* Agent.run({ toolkit: readOnly, prompt: "?" }).pipe(Effect.provide(model(server.url)))
      expect(result.answer).toBe("Done.")
      expect(result.calls.map((call) => call.ok ? call.tool : call.error.code)).toEqual(["kb.search", "unknown-tool"])
      expect(effects.searches).toEqual(["vat"])
      expect(effects.submitted).toEqual([])
    }))
})
