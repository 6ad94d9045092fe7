// graded's model over @effect/ai-openai (patched for effect 4.1: see the
// README), which speaks OpenAI's Responses API (POST /v1/responses, JSON or
// server-sent events), against a loopback server speaking it.
//
// Calls: @effect/ai-openai 4.0.0-beta.106 decodes every call's parameters
// through the tool's Effect Schema made OpenAI-strict, and a JSON-Schema tool's
// (Tool.dynamic, the only kind graded can give it) is Schema.Unknown, which
// toCodecOpenAI refuses ("Root JSON Schema must have type object"). Our patch
// (patches/, see the README) hands such a tool's parameters on as the model
// sent them, as effect/ai's Toolkit does; graded decodes them itself.
import { describe, expect, it } from "@effect/vitest"
import { Cause, Effect } from "effect"
import { LanguageModel } from "@graded/core"
import { assembled, desk, generate, openAi, request, streamed } from "./providers.js"
import * as Replay from "./ReplayServer.js"

const failure = (cause: Cause.Cause<unknown> | undefined) =>
  cause === undefined ? undefined : Cause.findErrorOption(cause).pipe((found) =>
    found._tag === "Some" ? found.value : cause
  )

// A turn graded already had: two calls and their results.
const history: ReadonlyArray<LanguageModel.Message> = [
  {
    role: "assistant",
    content: "Looking.",
    toolCalls: [
      { id: "call_a", name: "kb__search", arguments: "{\"query\":\"vat\",\"limit\":null}" },
      { id: "call_b", name: "customer__lookup", arguments: "{\"id\":\"c-42\"}" }
    ]
  },
  { role: "tool", callId: "call_a", name: "kb__search", content: "{\"ok\":true,\"data\":[]}" },
  { role: "tool", callId: "call_b", name: "customer__lookup", content: "{\"ok\":true,\"data\":{\"name\":\"Mei Lin\"}}" }
]

const answer: Replay.Turn = { text: "Mei Lin asked before.", usage: { input: 40, output: 6 } }

describe("EffectAiModel over @effect/ai-openai (Responses API)", () => {
  it.live("sends graded's wire names and schemas, strict, and the conversation with call ids and results", () =>
    Effect.gen(function*() {
      const { definitions } = desk()
      const server = yield* Replay.make([Replay.openAiJson(answer)])
      const response = yield* generate(openAi(server.url), request(definitions, history))
      expect(response).toEqual({
        text: "Mei Lin asked before.",
        toolCalls: [],
        usage: { inputTokens: 40, outputTokens: 6 }
      })
      const [first] = server.requests
      expect(first?.path).toBe("/v1/responses")
      expect(first?.headers.authorization).toBe("Bearer test-key")
      expect(first?.body.tools).toEqual(definitions.map((definition) => ({
        type: "function",
        name: definition.name,
        description: definition.description,
        parameters: definition.parameters,
        strict: true
      })))
      expect(first?.body.input).toEqual([
        { role: "system", content: [{ type: "input_text", text: "Be brief." }] },
        { role: "user", content: [{ type: "input_text", text: "Asked before?" }] },
        {
          type: "message",
          role: "assistant",
          id: null,
          status: "completed",
          content: [{ type: "output_text", text: "Looking.", annotations: [], logprobs: [] }]
        },
        {
          type: "function_call",
          name: "kb__search",
          call_id: "call_a",
          arguments: "{\"query\":\"vat\",\"limit\":null}"
        },
        { type: "function_call", name: "customer__lookup", call_id: "call_b", arguments: "{\"id\":\"c-42\"}" },
        { type: "function_call_output", call_id: "call_a", output: "{\"ok\":true,\"data\":[]}" },
        { type: "function_call_output", call_id: "call_b", output: "{\"ok\":true,\"data\":{\"name\":\"Mei Lin\"}}" }
      ])
    }))

  it.live("a tool graded does not mark strict goes out with strict: false", () =>
    Effect.gen(function*() {
      const { definitions } = desk()
      const server = yield* Replay.make([Replay.openAiJson(answer)])
      yield* generate(openAi(server.url), request(definitions.map((definition) => ({ ...definition, strict: false }))))
      expect(server.requests[0]?.body.tools.map((tool: any) => tool.strict)).toEqual([false, false])
    }))

  it.live("a text turn, streamed and not streamed: the same text and usage", () =>
    Effect.gen(function*() {
      const { definitions } = desk()
      const server = yield* Replay.make([Replay.openAiJson(answer), Replay.openAiSse(answer)])
      const whole = yield* generate(openAi(server.url), request(definitions))
      const { error, parts } = yield* streamed(openAi(server.url), request(definitions))
      expect(error).toBeUndefined()
      expect(whole).toEqual({
        text: "Mei Lin asked before.",
        toolCalls: [],
        usage: { inputTokens: 40, outputTokens: 6 }
      })
      expect(assembled(parts)).toEqual(whole)
      expect(server.requests[1]?.body.stream).toBe(true)
    }))

  it.live("a connection cut mid-stream: the text so far, then ModelError connection", () =>
    Effect.gen(function*() {
      const { definitions } = desk()
      const events = Replay.openAiEvents(answer)
      const upTo = events.findIndex((event) => event.event === "response.output_text.delta")
      const server = yield* Replay.make([{ sse: events.slice(0, upTo + 1), cut: true }])
      const { error, parts } = yield* streamed(openAi(server.url), request(definitions))
      expect(parts).toEqual([{ type: "text-delta", delta: "Mei Lin ask" }])
      expect(failure(error)).toMatchObject({ reason: "connection" })
    }))

  for (const [status, reason] of [[401, "unauthorized"], [429, "rate-limited"], [500, "server"]] as const) {
    it.live(`HTTP ${status}: ModelError ${reason}, with the status and the retry-after, generated and streamed`, () =>
      Effect.gen(function*() {
        const { definitions } = desk()
        const reply = Replay.openAiError(status, "no", { "retry-after-ms": "1500" })
        const server = yield* Replay.make([reply, reply])
        const exit = yield* Effect.exit(generate(openAi(server.url), request(definitions)))
        const { error, parts } = yield* streamed(openAi(server.url), request(definitions))
        for (const found of [exit._tag === "Failure" ? failure(exit.cause) : undefined, failure(error)]) {
          expect(found).toBeInstanceOf(LanguageModel.ModelError)
          expect(found).toMatchObject({ reason, status, retryAfterMillis: 1500 })
        }
        expect(parts).toEqual([])
      }))
  }

  it.live("a turn with function calls, streamed and not: each call with its id, wire name and arguments as sent", () =>
    Effect.gen(function*() {
      const { definitions } = desk()
      const calls = [
        { id: "call_a", name: "kb__search", arguments: "{\"query\":\"vat\",\"limit\":null}" },
        { id: "call_b", name: "customer__lookup", arguments: "{\"id\":\"c-42\"}" }
      ]
      const turn = { calls }
      const server = yield* Replay.make([Replay.openAiJson(turn), Replay.openAiSse(turn)])
      const whole = yield* generate(openAi(server.url), request(definitions))
      const { error, parts } = yield* streamed(openAi(server.url), request(definitions))
      expect(error).toBeUndefined()
      expect(whole.toolCalls).toEqual(calls)
      expect(assembled(parts).toolCalls).toEqual(calls)
    }))
})
