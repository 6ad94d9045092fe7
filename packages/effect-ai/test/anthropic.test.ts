// graded's model over @effect/ai-anthropic (patched for effect 4.1: see the
// README), against a loopback server speaking Anthropic's Messages API: JSON
// replies and server-sent events, as the real API sends them.
import { describe, expect, it } from "@effect/vitest"
import { AnthropicClient, AnthropicLanguageModel } from "@effect/ai-anthropic"
import { Cause, Config, ConfigProvider, Effect, Layer } from "effect"
import { FetchHttpClient } from "effect/http"
import { Agent, LanguageModel } from "@graded/core"
import { EffectAiModel } from "@graded/effect-ai"
import { anthropic, assembled, desk, generate, request, streamed } from "./providers.js"
import * as Replay from "./ReplayServer.js"

const turn: Replay.Turn = {
  text: "Looking.",
  calls: [
    { id: "toolu_a", name: "kb__search", arguments: "{\"query\":\"vat\",\"limit\":null}" },
    { id: "toolu_b", name: "customer__lookup", arguments: "{\"id\":\"c-42\"}" }
  ],
  usage: { input: 31, output: 9 }
}

const expected: LanguageModel.Response = {
  text: "Looking.",
  toolCalls: [
    { id: "toolu_a", name: "kb__search", arguments: "{\"query\":\"vat\",\"limit\":null}" },
    { id: "toolu_b", name: "customer__lookup", arguments: "{\"id\":\"c-42\"}" }
  ],
  usage: { inputTokens: 31, outputTokens: 9 }
}

const failure = (cause: Cause.Cause<unknown> | undefined) =>
  cause === undefined ? undefined : Cause.findErrorOption(cause).pipe((found) =>
    found._tag === "Some" ? found.value : cause
  )

describe("EffectAiModel over @effect/ai-anthropic", () => {
  it.live("sends graded's wire names and schemas, strict; the conversation goes back with call ids and results", () =>
    Effect.gen(function*() {
      const { definitions, effects, readOnly } = desk()
      const server = yield* Replay.make([Replay.anthropicJson(turn), Replay.anthropicJson({ text: "Mei Lin asked." })])
      const result = yield* Agent.run({ toolkit: readOnly, system: "Be brief.", prompt: "Asked before?" }).pipe(
        Effect.provide(anthropic(server.url))
      )
      expect(result.answer).toBe("Mei Lin asked.")
      expect(result.calls.map((call) => call.ok && call.tool)).toEqual(["kb.search", "customer.lookup"])
      // graded ran the search, once; effect/ai ran nothing.
      expect(effects.searches).toEqual(["vat"])

      const [first, second] = server.requests
      expect(first?.path).toBe("/v1/messages?beta=true")
      expect(first?.headers["x-api-key"]).toBe("test-key")
      expect(first?.body.system).toEqual([{ type: "text", text: "Be brief.", cache_control: null }])
      expect(first?.body.messages).toEqual([
        { role: "user", content: [{ type: "text", text: "Asked before?", cache_control: null }] }
      ])
      expect(first?.body.tools).toEqual(definitions.map((definition) => ({
        name: definition.name,
        description: definition.description,
        input_schema: definition.parameters,
        strict: true
      })))
      expect(first?.body.tools[0].input_schema).toEqual({
        type: "object",
        properties: { query: { type: "string" }, limit: { type: ["number", "null"] } },
        required: ["query", "limit"],
        additionalProperties: false
      })
      expect(second?.body.messages.slice(1)).toEqual([
        {
          role: "assistant",
          content: [
            { type: "text", text: "Looking." },
            { type: "tool_use", id: "toolu_a", name: "kb__search", input: { query: "vat", limit: null } },
            { type: "tool_use", id: "toolu_b", name: "customer__lookup", input: { id: "c-42" } }
          ]
        },
        {
          role: "user",
          content: [
            {
              type: "tool_result",
              tool_use_id: "toolu_a",
              content: "{\"ok\":true,\"data\":[{\"id\":\"kb-1\",\"title\":\"About vat\"}]}",
              is_error: false,
              cache_control: null
            },
            {
              type: "tool_result",
              tool_use_id: "toolu_b",
              content: "{\"ok\":true,\"data\":{\"name\":\"Mei Lin\"}}",
              is_error: false,
              cache_control: null
            }
          ]
        }
      ])
    }))

  it.live("a tool graded does not mark strict goes out with strict: false", () =>
    Effect.gen(function*() {
      const { definitions } = desk()
      const loose = definitions.map((definition) => ({ ...definition, strict: false }))
      const server = yield* Replay.make([Replay.anthropicJson({ text: "ok" })])
      yield* generate(anthropic(server.url), request(loose))
      expect(server.requests[0]?.body.tools.map((tool: any) => tool.strict)).toEqual([false, false])
    }))

  it.live("streamed and not streamed, the same turn: text, call ids, wire names, arguments, usage", () =>
    Effect.gen(function*() {
      const { definitions } = desk()
      const server = yield* Replay.make([Replay.anthropicJson(turn), Replay.anthropicSse(turn)])
      const whole = yield* generate(anthropic(server.url), request(definitions))
      const { error, parts } = yield* streamed(anthropic(server.url), request(definitions))
      expect(error).toBeUndefined()
      expect(whole).toEqual(expected)
      expect(assembled(parts)).toEqual(expected)
      expect(server.requests[1]?.body.stream).toBe(true)
      expect(server.requests[1]?.body.tools).toEqual(server.requests[0]?.body.tools)
      // Each call starts, streams its JSON text as it came and ends; one finish.
      expect(parts).toEqual([
        { type: "text-delta", delta: "Look" },
        { type: "text-delta", delta: "ing." },
        { type: "call-start", key: "toolu_a", id: "toolu_a", name: "kb__search" },
        { type: "call-delta", key: "toolu_a", delta: "{\"query\":\"" },
        { type: "call-delta", key: "toolu_a", delta: "vat\",\"limi" },
        { type: "call-delta", key: "toolu_a", delta: "t\":null}" },
        { type: "call-end", key: "toolu_a" },
        { type: "call-start", key: "toolu_b", id: "toolu_b", name: "customer__lookup" },
        { type: "call-delta", key: "toolu_b", delta: "{\"id\"" },
        { type: "call-delta", key: "toolu_b", delta: ":\"c-4" },
        { type: "call-delta", key: "toolu_b", delta: "2\"}" },
        { type: "call-end", key: "toolu_b" },
        { type: "finish", usage: { inputTokens: 31, outputTokens: 9 } }
      ])
    }))

  it.live("streamed arguments are the provider's own text, spaces and all", () =>
    Effect.gen(function*() {
      const { definitions } = desk()
      const spaced = { calls: [{ id: "toolu_s", name: "kb__search", arguments: "{\"query\": \"vat\", \"limit\": 2}" }] }
      const server = yield* Replay.make([Replay.anthropicSse(spaced)])
      const { parts } = yield* streamed(anthropic(server.url), request(definitions))
      expect(assembled(parts).toolCalls).toEqual(spaced.calls)
    }))

  it.live("a connection cut mid-call: the parts so far, then ModelError connection; the call never ends", () =>
    Effect.gen(function*() {
      const { definitions } = desk()
      const events = Replay.anthropicEvents(turn)
      // Up to the first call's second piece of arguments, then the socket drops.
      const upTo = events.findIndex((event: any) => event.data.delta?.partial_json === "vat\",\"limi")
      expect(upTo).toBeGreaterThan(0)
      const server = yield* Replay.make([{ sse: events.slice(0, upTo + 1), cut: true }])
      const { error, parts } = yield* streamed(anthropic(server.url), request(definitions))
      expect(parts).toEqual([
        { type: "text-delta", delta: "Look" },
        { type: "text-delta", delta: "ing." },
        { type: "call-start", key: "toolu_a", id: "toolu_a", name: "kb__search" },
        { type: "call-delta", key: "toolu_a", delta: "{\"query\":\"" },
        { type: "call-delta", key: "toolu_a", delta: "vat\",\"limi" }
      ])
      expect(failure(error)).toBeInstanceOf(LanguageModel.ModelError)
      expect(failure(error)).toMatchObject({ reason: "connection" })
    }))

  it.live("an error event mid-stream (overloaded): the parts so far, then ModelError server", () =>
    Effect.gen(function*() {
      const { definitions } = desk()
      const events = Replay.anthropicEvents({ text: "Looking." }).slice(0, 3)
      const server = yield* Replay.make([{
        sse: [...events, {
          event: "error",
          data: { type: "error", error: { type: "overloaded_error", message: "Overloaded" }, request_id: "req_9" }
        }]
      }])
      const { error, parts } = yield* streamed(anthropic(server.url), request(definitions))
      expect(parts).toEqual([{ type: "text-delta", delta: "Look" }])
      expect(failure(error)).toMatchObject({ reason: "server" })
      expect((failure(error) as LanguageModel.ModelError).detail).toContain("Overloaded")
    }))

  it.live("arguments that are not JSON, streamed: the parts so far, then ModelError malformed-response", () =>
    Effect.gen(function*() {
      const { definitions } = desk()
      const server = yield* Replay.make([
        Replay.anthropicSse({ calls: [{ id: "toolu_m", name: "kb__search", arguments: "{\"query\": \"vat" }] })
      ])
      const { error, parts } = yield* streamed(anthropic(server.url), request(definitions))
      expect(parts.map((part) => part.type)).toEqual(["call-start", "call-delta", "call-delta", "call-delta"])
      expect(failure(error)).toMatchObject({ reason: "malformed-response" })
    }))

  it.live("a body that is not the Messages API's: ModelError malformed-response", () =>
    Effect.gen(function*() {
      const { definitions } = desk()
      const server = yield* Replay.make([{ json: { hello: "world" } }, {
        text: "<html>",
        headers: { "content-type": "text/html" }
      }])
      for (let i = 0; i < 2; i++) {
        const exit = yield* Effect.exit(generate(anthropic(server.url), request(definitions)))
        expect(exit._tag === "Failure" && failure(exit.cause)).toMatchObject({ reason: "malformed-response" })
      }
    }))

  for (
    const [status, type, reason] of [
      [401, "authentication_error", "unauthorized"],
      [429, "rate_limit_error", "rate-limited"],
      [500, "api_error", "server"]
    ] as const
  ) {
    it.live(`HTTP ${status}: ModelError ${reason}, with the status and the retry-after, generated and streamed`, () =>
      Effect.gen(function*() {
        const { definitions } = desk()
        const reply = Replay.anthropicError(status, type, "no", { "retry-after": "7" })
        const server = yield* Replay.make([reply, reply])
        const exit = yield* Effect.exit(generate(anthropic(server.url), request(definitions)))
        const { error, parts } = yield* streamed(anthropic(server.url), request(definitions))
        for (const found of [exit._tag === "Failure" ? failure(exit.cause) : undefined, failure(error)]) {
          expect(found).toBeInstanceOf(LanguageModel.ModelError)
          expect(found).toMatchObject({ reason, status, retryAfterMillis: 7000 })
        }
        expect(parts).toEqual([])
      }))
  }

  it.live("a server that drops the connection before replying: ModelError connection", () =>
    Effect.gen(function*() {
      const { definitions } = desk()
      const server = yield* Replay.make([{ drop: true }, { drop: true }])
      const exit = yield* Effect.exit(generate(anthropic(server.url), request(definitions)))
      const { error } = yield* streamed(anthropic(server.url), request(definitions))
      expect(exit._tag === "Failure" && failure(exit.cause)).toMatchObject({ reason: "connection" })
      expect(failure(error)).toMatchObject({ reason: "connection" })
    }))

  it.live("a call to a tool that was not offered fails the turn as malformed (the provider refuses it)", () =>
    Effect.gen(function*() {
      const { definitions } = desk()
      const server = yield* Replay.make([
        Replay.anthropicJson({ calls: [{ id: "toolu_x", name: "chat__sendMessage", arguments: "{\"text\":\"hi\"}" }] })
      ])
      const exit = yield* Effect.exit(generate(anthropic(server.url), request(definitions)))
      expect(exit._tag === "Failure" && failure(exit.cause)).toMatchObject({ reason: "malformed-response" })
    }))

  it.live("the layer as EffectAiModel.layer's example makes it, the key from Config", () =>
    Effect.gen(function*() {
      const { definitions } = desk()
      const server = yield* Replay.make([Replay.anthropicJson({ text: "ok" })])
      const model = EffectAiModel.layer.pipe(
        Layer.provide(AnthropicLanguageModel.layer({ model: "claude-sonnet-4-5" })),
        Layer.provide(AnthropicClient.layerConfig({
          apiKey: Config.Redacted("ANTHROPIC_API_KEY"),
          apiUrl: Config.succeed(server.url)
        })),
        Layer.provide(FetchHttpClient.layer),
        Layer.provide(ConfigProvider.layer(ConfigProvider.fromEnvRecord({ ANTHROPIC_API_KEY: "sk-from-config" })))
      )
      expect(yield* generate(model, request(definitions))).toMatchObject({ text: "ok" })
      expect(server.requests[0]?.headers["x-api-key"]).toBe("sk-from-config")
    }))
})
