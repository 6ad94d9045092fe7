import { describe, expect, it } from "@effect/vitest"
import { Cause, Effect, Exit, Fiber } from "effect"
import { TestClock } from "effect/testing"
import { Agent, LanguageModel, Registry, Toolkit } from "@graded/core"
import { OpenAiModel } from "@graded/openai"
import { LanguageModel as LM } from "@graded/core"
import { retryPolicy } from "../src/internal/errors.js"
import { makeDesk } from "../../core/test/supportDesk.js"
import * as Replay from "./ReplayServer.js"

// Two read tools, so that one turn carries two parallel calls; the send tool is never offered.
const { CustomerLookup, KbSearch, SendReply } = makeDesk()
const desk = Toolkit.make(KbSearch, CustomerLookup, SendReply)
const readOnly = Toolkit.readOnly(desk)
const definitions = Registry.make(readOnly).functionSchemas({ autonomous: true })

const wirePattern = /^[a-zA-Z0-9_-]{1,64}$/

// Every function name in a request body, wherever it appears.
const namesIn = (body: any): Array<string> => [
  ...(body.tools ?? []).map((tool: any) => tool.function?.name ?? tool.name),
  ...(body.messages ?? []).flatMap((m: any) => (m.tool_calls ?? []).map((c: any) => c.function.name)),
  ...(body.input ?? []).filter((item: any) => item.type === "function_call").map((item: any) => item.name)
]

const model = (baseURL: string, options: Partial<OpenAiModel.Options> = {}) =>
  OpenAiModel.layer({ apiKey: "test-key", baseURL, model: "test-model", retryBase: "5 millis", ...options })

describe("OpenAiModel over Chat Completions", () => {
  it.live("sends wire names, strict schemas and the conversation; reads text, parallel calls and usage", () =>
    Effect.gen(function*() {
      const server = yield* Replay.make([
        Replay.chatReply({
          content: "Looking.",
          toolCalls: [
            { id: "call_a", name: "kb__search", arguments: "{\"query\":\"vat\",\"limit\":null}" },
            { id: "call_b", name: "customer__lookup", arguments: "{\"id\":\"c-42\"}" }
          ]
        }),
        Replay.chatReply({ content: "Mei Lin asked before." })
      ])
      const result = yield* Agent.run({ toolkit: readOnly, system: "Be brief.", prompt: "Asked before?" }).pipe(
        Effect.provide(model(server.baseURL))
      )
      expect(result.answer).toBe("Mei Lin asked before.")
      expect(result.calls.map((c) => c.ok && c.tool)).toEqual(["kb.search", "customer.lookup"])
      expect(result.usage).toEqual({ inputTokens: 22, outputTokens: 14 })

      const [first, second] = server.requests
      expect(first?.path).toBe("/v1/chat/completions")
      expect(first?.headers.authorization).toBe("Bearer test-key")
      expect(first?.body).toEqual({
        model: "test-model",
        messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "Asked before?" }],
        tools: definitions.map((d) => ({
          type: "function",
          function: { name: d.name, description: d.description, parameters: d.parameters, strict: true }
        })),
        parallel_tool_calls: true
      })
      expect(first?.body.tools[0].function.parameters).toEqual({
        type: "object",
        properties: { query: { type: "string" }, limit: { type: ["number", "null"] } },
        required: ["query", "limit"],
        additionalProperties: false
      })
      expect(second?.body.messages.slice(2)).toEqual([
        {
          role: "assistant",
          content: "Looking.",
          tool_calls: [
            {
              id: "call_a",
              type: "function",
              function: { name: "kb__search", arguments: "{\"query\":\"vat\",\"limit\":null}" }
            },
            { id: "call_b", type: "function", function: { name: "customer__lookup", arguments: "{\"id\":\"c-42\"}" } }
          ]
        },
        {
          role: "tool",
          tool_call_id: "call_a",
          content: "{\"ok\":true,\"data\":[{\"id\":\"kb-1\",\"title\":\"About vat\"}]}"
        },
        { role: "tool", tool_call_id: "call_b", content: "{\"ok\":true,\"data\":{\"name\":\"Mei Lin\"}}" }
      ])
    }))

  it.live("never sends a name outside the wire pattern, even echoing a model's bad one", () =>
    Effect.gen(function*() {
      const server = yield* Replay.make([
        Replay.chatReply({ toolCalls: [{ id: "c1", name: "chat.sendMessage", arguments: "{}" }] }),
        Replay.chatReply({ toolCalls: [{ id: "c2", name: "a".repeat(100), arguments: "{}" }] }),
        Replay.chatReply({ content: "ok" })
      ])
      const result = yield* Agent.run({ toolkit: readOnly, prompt: "?" }).pipe(Effect.provide(model(server.baseURL)))
      expect(result.calls.map((c) => c.ok ? "ok" : c.error.code)).toEqual(["unknown-tool", "unknown-tool"])
      for (const request of server.requests) {
        for (const name of namesIn(request.body)) expect(name).toMatch(wirePattern)
        for (const tool of request.body.tools) {
          expect(tool.function.strict).toBe(true)
          expect(Registry.strictViolations(tool.function.parameters)).toEqual([])
        }
      }
    }))

  it.live("malformed tool-call JSON from the model goes back to it; the loop goes on", () =>
    Effect.gen(function*() {
      const server = yield* Replay.make([
        Replay.chatReply({ toolCalls: [{ id: "c1", name: "kb__search", arguments: "{\"query\": \"vat" }] }),
        Replay.chatReply({ content: "Sorry, I could not search." })
      ])
      const result = yield* Agent.run({ toolkit: readOnly, prompt: "?" }).pipe(Effect.provide(model(server.baseURL)))
      expect(result.stopped).toBe("answer")
      const toolMessage = server.requests[1]?.body.messages.find((m: any) => m.role === "tool")
      expect(JSON.parse(toolMessage.content)).toMatchObject({ ok: false, code: "invalid-input" })
    }))
})

describe("OpenAiModel over the Responses API", () => {
  it.live("sends input items and function definitions; returns calls with their call ids", () =>
    Effect.gen(function*() {
      const server = yield* Replay.make([
        Replay.responsesReply({
          text: "Looking.",
          calls: [
            { callId: "call_a", name: "kb__search", arguments: "{\"query\":\"vat\",\"limit\":null}" },
            { callId: "call_b", name: "customer__lookup", arguments: "{\"id\":\"c-42\"}" }
          ]
        }),
        Replay.responsesReply({ text: "Mei Lin asked before." })
      ])
      const result = yield* Agent.run({ toolkit: readOnly, system: "Be brief.", prompt: "Asked before?" }).pipe(
        Effect.provide(model(server.baseURL, { api: "responses" }))
      )
      expect(result.answer).toBe("Mei Lin asked before.")
      expect(result.usage).toEqual({ inputTokens: 26, outputTokens: 10 })
      const [first, second] = server.requests
      expect(first?.path).toBe("/v1/responses")
      expect(first?.body).toEqual({
        model: "test-model",
        input: [{ role: "system", content: "Be brief." }, { role: "user", content: "Asked before?" }],
        tools: definitions.map((d) => ({
          type: "function",
          name: d.name,
          description: d.description,
          parameters: d.parameters,
          strict: true
        })),
        parallel_tool_calls: true
      })
      expect(second?.body.input.slice(2)).toEqual([
        { role: "assistant", content: "Looking." },
        {
          type: "function_call",
          call_id: "call_a",
          name: "kb__search",
          arguments: "{\"query\":\"vat\",\"limit\":null}"
        },
        { type: "function_call", call_id: "call_b", name: "customer__lookup", arguments: "{\"id\":\"c-42\"}" },
        {
          type: "function_call_output",
          call_id: "call_a",
          output: "{\"ok\":true,\"data\":[{\"id\":\"kb-1\",\"title\":\"About vat\"}]}"
        },
        { type: "function_call_output", call_id: "call_b", output: "{\"ok\":true,\"data\":{\"name\":\"Mei Lin\"}}" }
      ])
      for (const request of server.requests) for (const name of namesIn(request.body)) expect(name).toMatch(wirePattern)
    }))

  it.live("a model's bad name is never echoed back as it was", () =>
    Effect.gen(function*() {
      const server = yield* Replay.make([
        Replay.responsesReply({ calls: [{ callId: "c1", name: "ticket.submit", arguments: "{}" }] }),
        Replay.responsesReply({ text: "ok" })
      ])
      yield* Agent.run({ toolkit: readOnly, prompt: "?" }).pipe(
        Effect.provide(model(server.baseURL, { api: "responses" }))
      )
      for (const request of server.requests) for (const name of namesIn(request.body)) expect(name).toMatch(wirePattern)
    }))
})

describe("OpenAiModel errors", () => {
  const generate = (baseURL: string, options: Partial<OpenAiModel.Options> = {}) =>
    Effect.flatMap(
      LanguageModel.LanguageModel,
      (lm) => lm.generate({ messages: [{ role: "user", content: "?" }], tools: definitions })
    ).pipe(
      Effect.provide(model(baseURL, options))
    )

  it.live("400 from a gateway rejecting a definition: typed, not retried, and the loop reports it", () =>
    Effect.gen(function*() {
      const server = yield* Replay.make([
        Replay.errorReply(400, "Invalid 'tools[0].function.name': string does not match pattern.")
      ])
      const error = yield* Effect.flip(
        Agent.run({ toolkit: readOnly, prompt: "?" }).pipe(Effect.provide(model(server.baseURL)))
      )
      expect(error).toMatchObject({ _tag: "@graded/core/LanguageModel/ModelError", reason: "bad-request", status: 400 })
      expect(error.message).toContain("tools[0].function.name")
      expect(server.requests).toHaveLength(1)
    }))

  it.live("401 is unauthorized and not retried", () =>
    Effect.gen(function*() {
      const server = yield* Replay.make([Replay.errorReply(401, "Incorrect API key provided.")])
      const error = yield* Effect.flip(generate(server.baseURL))
      expect(error).toMatchObject({ reason: "unauthorized", status: 401 })
      expect(server.requests).toHaveLength(1)
    }))

  it.live("429 is retried after retry-after, then succeeds", () =>
    Effect.gen(function*() {
      const server = yield* Replay.make([
        Replay.errorReply(429, "Rate limit reached.", { "retry-after-ms": "20" }),
        Replay.chatReply({ content: "fine" })
      ])
      const response = yield* generate(server.baseURL)
      expect(response.text).toBe("fine")
      expect(server.requests).toHaveLength(2)
    }))

  it.live("429 that persists ends in rate-limited after maxRetries, carrying retry-after", () =>
    Effect.gen(function*() {
      const limited = Replay.errorReply(429, "Rate limit reached.", { "retry-after": "0" })
      const server = yield* Replay.make([limited, limited, limited, limited])
      const error = yield* Effect.flip(generate(server.baseURL, { maxRetries: 2 }))
      expect(error).toMatchObject({ reason: "rate-limited", status: 429, retryAfterMillis: 0 })
      expect(server.requests).toHaveLength(3)
    }))

  it.effect("a Retry-After date is read against the Effect Clock (TestClock here)", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(Date.parse("2026-11-30T12:00:00Z"))
      const server = yield* Replay.make([
        Replay.errorReply(429, "Rate limit reached.", { "retry-after": "Mon, 30 Nov 2026 12:00:07 GMT" })
      ])
      const error = yield* Effect.flip(generate(server.baseURL, { maxRetries: 0 }))
      expect(error).toMatchObject({ reason: "rate-limited", retryAfterMillis: 7000 })
    }))

  it.live("5xx is retried; one that persists is a server error", () =>
    Effect.gen(function*() {
      const recovering = yield* Replay.make([
        Replay.errorReply(502, "Bad gateway"),
        Replay.chatReply({ content: "ok" })
      ])
      expect((yield* generate(recovering.baseURL)).text).toBe("ok")
      const down = yield* Replay.make([Replay.errorReply(503, "down"), Replay.errorReply(503, "down")])
      const error = yield* Effect.flip(generate(down.baseURL, { maxRetries: 1 }))
      expect(error).toMatchObject({ reason: "server", status: 503 })
      expect(down.requests).toHaveLength(2)
    }))

  it.live("a timeout is typed, and retried", () =>
    Effect.gen(function*() {
      // Real time (a real socket's timeout): a second for each request to reach the server however busy the machine.
      const slow = { ...Replay.chatReply({ content: "late" }), delay: 60_000 }
      const server = yield* Replay.make([slow, slow])
      const error = yield* Effect.flip(generate(server.baseURL, { timeout: "1 second", maxRetries: 1 }))
      expect(error.reason).toBe("timeout")
      expect(server.requests).toHaveLength(2)
    }))

  it.live("interrupting a turn aborts the HTTP request", () =>
    Effect.gen(function*() {
      const server = yield* Replay.make([{ ...Replay.chatReply({ content: "never" }), delay: 10_000 }])
      const fiber = yield* Effect.forkChild(generate(server.baseURL))
      while (server.requests.length === 0) yield* Effect.sleep("10 millis")
      yield* Fiber.interrupt(fiber)
      const exit = yield* Fiber.await(fiber)
      expect(Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause)).toBe(true)
      // Until the server sees the connection go (the test timeout bounds it, not a count a busy machine stretches).
      while (server.abandoned() === 0) yield* Effect.sleep("10 millis")
      expect(server.abandoned()).toBe(1)
    }))

  it.live("a response that is not a completion is malformed-response", () =>
    Effect.gen(function*() {
      const server = yield* Replay.make([{ text: "<html>proxy error</html>" }])
      const error = yield* Effect.flip(generate(server.baseURL, { maxRetries: 0 }))
      expect(error.reason).toBe("malformed-response")
    }))

  it.live("no API key is a typed error on the first turn, not a throw", () =>
    Effect.gen(function*() {
      const saved = process.env.OPENAI_API_KEY
      delete process.env.OPENAI_API_KEY
      const error = yield* Effect.flip(generate("http://127.0.0.1:9/v1", { apiKey: undefined }))
      if (saved !== undefined) process.env.OPENAI_API_KEY = saved
      expect(error.reason).toBe("configuration")
    }))
})

describe("the retry policy", () => {
  it.effect("waits at least the server's retry-after before trying again", () =>
    Effect.gen(function*() {
      let attempts = 0
      const failing = Effect.suspend(() => {
        attempts++
        return Effect.fail(
          new LM.ModelError({ reason: "rate-limited", detail: "slow down", status: 429, retryAfterMillis: 5000 })
        )
      })
      const fiber = yield* Effect.forkChild(
        Effect.retry(failing, retryPolicy({ maxRetries: 2, base: "10 millis", cap: "1 minute" }))
      )
      yield* TestClock.adjust("4999 millis")
      expect(attempts).toBe(1)
      yield* TestClock.adjust("1 millis")
      expect(attempts).toBe(2)
      yield* TestClock.adjust("5 seconds")
      expect(attempts).toBe(3)
      const exit = yield* Fiber.await(fiber)
      expect(Exit.isFailure(exit)).toBe(true)
    }))

  it.effect("does not retry what retrying cannot fix", () =>
    Effect.gen(function*() {
      let attempts = 0
      const failing = Effect.suspend(() => {
        attempts++
        return Effect.fail(new LM.ModelError({ reason: "bad-request", detail: "no", status: 400 }))
      })
      yield* Effect.flip(Effect.retry(failing, retryPolicy({ maxRetries: 5, base: "10 millis", cap: "1 second" })))
      expect(attempts).toBe(1)
    }))
})

describe("retry-after", () => {
  it("reads retry-after-ms, retry-after in seconds, and retry-after as an HTTP date", () => {
    const now = Date.parse("2026-11-30T12:00:00Z")
    expect(LM.retryAfterMillis(new Headers({ "retry-after-ms": "250" }), now)).toBe(250)
    expect(LM.retryAfterMillis(new Headers({ "retry-after": "2" }), now)).toBe(2000)
    expect(LM.retryAfterMillis(new Headers({ "retry-after": "Mon, 30 Nov 2026 12:00:03 GMT" }), now)).toBe(3000)
    expect(LM.retryAfterMillis(new Headers({ "retry-after": "soon" }), now)).toBeUndefined()
    expect(LM.retryAfterMillis(new Headers({}), now)).toBeUndefined()
  })
})
