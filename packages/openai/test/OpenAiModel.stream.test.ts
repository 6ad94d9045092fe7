import { describe, expect, it } from "@effect/vitest"
import { Cause, Effect, Exit, Fiber, Stream } from "effect"
import { LanguageModel, Registry, ScriptedModel, Toolkit } from "@graded/core"
import { OpenAiModel } from "@graded/openai"
import { makeDesk } from "../../core/test/supportDesk.js"
import * as Replay from "./ReplayServer.js"
import { chatEvents, chatStream, responsesEvents, responsesStream, type Step } from "./streamReplies.js"

type Part = LanguageModel.StreamPart

const { CustomerLookup, KbSearch } = makeDesk()
const definitions = Registry.make(Toolkit.make(KbSearch, CustomerLookup)).functionSchemas({ autonomous: true })

// A conversation with a turn of calls in it (one under a name no gateway takes) and definitions.
const request: LanguageModel.Request = {
  messages: [
    { role: "system", content: "Be brief." },
    { role: "user", content: "Asked before?" },
    { role: "assistant", content: "Checking.", toolCalls: [{ id: "call_0", name: "ticket.submit", arguments: "{}" }] },
    { role: "tool", callId: "call_0", name: "ticket.submit", content: "{\"ok\":false}" }
  ],
  tools: definitions
}

// Text interleaved with two parallel calls, their arguments split at odd places
// (inside a key, inside an escape, inside a literal).
const interleaved: ReadonlyArray<Step> = [
  { text: "Look" },
  { call: 0, id: "call_a", name: "kb__search" },
  { call: 0, args: "{\"qu" },
  { text: "ing" },
  { call: 1, id: "call_b", name: "customer__lookup" },
  { call: 1, args: "{\"id\":\"c-" },
  { call: 0, args: "ery\":\"vat \\" },
  { call: 0, args: "\"EU\\\"\",\"limit\":nu" },
  { call: 1, args: "42\"}" },
  { text: " up." },
  { call: 0, args: "ll}" },
  { call: 1, done: true },
  { call: 0, done: true }
]

// What the steps say, as a non-streamed reply would carry it.
const turnOf = (steps: ReadonlyArray<Step>) => {
  const calls: Array<{ id: string; name: string; arguments: string }> = []
  let text = ""
  for (const step of steps) {
    if ("text" in step) text += step.text
    else if ("name" in step) calls[step.call] = { id: step.id, name: step.name, arguments: "" }
    else if ("args" in step) calls[step.call]!.arguments += step.args
  }
  return { text, calls }
}

const model = (baseURL: string, options: Partial<OpenAiModel.Options> = {}) =>
  OpenAiModel.make({ apiKey: "test-key", baseURL, model: "test-model", retryBase: "5 millis", ...options })

const streamOf = (lm: LanguageModel.LanguageModel.Service, req: LanguageModel.Request = request) => {
  expect(lm.stream).toBeDefined()
  return lm.stream!(req)
}

// Every part, and how the stream ended.
const collect = (stream: Stream.Stream<Part, LanguageModel.ModelError>) =>
  Effect.gen(function*() {
    const parts: Array<Part> = []
    const exit = yield* Effect.exit(Stream.runForEach(stream, (part) => Effect.sync(() => parts.push(part))))
    return { parts, exit }
  })

// The parts put together by StreamPart's rules: a call is complete at its
// call-end, or at the finish; one still open when the stream stops is cut.
const fold = (parts: ReadonlyArray<Part>) => {
  const texts: Array<string> = []
  const calls = new Map<string, { id: string; name: string; arguments: string; ended: boolean }>()
  let finish: { usage?: LanguageModel.Usage | undefined } | undefined
  for (const part of parts) {
    if (part.type === "text-delta") texts.push(part.delta)
    else if (part.type === "call-start") {
      calls.set(part.key, { id: part.id, name: part.name, arguments: "", ended: false })
    } else if (part.type === "call-delta") calls.get(part.key)!.arguments += part.delta
    else if (part.type === "call-end") calls.get(part.key)!.ended = true
    else finish = part
  }
  const whole = (call: { ended: boolean }) => call.ended || finish !== undefined
  return {
    text: texts.length > 0 ? texts.join("") : undefined,
    toolCalls: [...calls.values()].filter(whole).map(({ arguments: args, id, name }) => ({
      id,
      name,
      arguments: args
    })),
    cut: [...calls.values()].filter((call) => !whole(call)).map((call) => call.id),
    usage: finish?.usage,
    finished: finish !== undefined
  }
}

// What core makes of the parts (ScriptedModel's generate puts a streamed turn
// together as a streaming loop does): the turn, or why it is refused.
const throughCore = (parts: ReadonlyArray<Part>, cut?: LanguageModel.ModelError) =>
  Effect.exit(
    Effect.flatMap(LanguageModel.LanguageModel, (lm) => lm.generate(request)).pipe(
      Effect.provide(ScriptedModel.layer([ScriptedModel.streamed(parts, { cut })]))
    )
  )

const failureOf = (exit: Exit.Exit<unknown, LanguageModel.ModelError>) => {
  // A typed failure, never a defect or a throw.
  expect(Exit.isFailure(exit) && Cause.hasFails(exit.cause) && !Cause.hasDies(exit.cause)).toBe(true)
  return Exit.isFailure(exit) ? Cause.squash(exit.cause) as LanguageModel.ModelError : undefined
}

const fixtures = [
  {
    api: "chat" as const,
    streamed: chatStream,
    events: chatEvents,
    reply: (steps: ReadonlyArray<Step>) => {
      const turn = turnOf(steps)
      return Replay.chatReply({ content: turn.text, toolCalls: turn.calls })
    },
    added: { stream: true, stream_options: { include_usage: true } },
    usage: { inputTokens: 11, outputTokens: 7 },
    // A chunk that is JSON of the wrong shape.
    wrongShape: { id: "x", object: "chat.completion.chunk", created: 0, model: "m", choices: "none" },
    // A call's start without its id, then a well-formed call.
    noId: [
      {
        data: {
          ...chatEvents([])[0]!.data as object,
          choices: [{
            index: 0,
            delta: { tool_calls: [{ index: 0, type: "function", function: { name: "kb__search", arguments: "{}" } }] },
            finish_reason: null
          }]
        }
      },
      ...chatEvents([{ call: 1, id: "call_b", name: "customer__lookup" }, { call: 1, args: "{\"id\":\"c-1\"}" }])
    ]
  },
  {
    api: "responses" as const,
    streamed: responsesStream,
    events: responsesEvents,
    reply: (steps: ReadonlyArray<Step>) => {
      const turn = turnOf(steps)
      return Replay.responsesReply({
        text: turn.text,
        calls: turn.calls.map((call) => ({ callId: call.id, name: call.name, arguments: call.arguments }))
      })
    },
    added: { stream: true },
    usage: { inputTokens: 13, outputTokens: 5 },
    wrongShape: { type: "response.output_text.delta", item_id: "msg-1", output_index: 0, delta: 42 },
    noId: [
      {
        event: "response.output_item.added",
        data: {
          type: "response.output_item.added",
          output_index: 0,
          item: { type: "function_call", id: "fc-x", name: "kb__search", arguments: "{}", status: "in_progress" },
          sequence_number: 0
        }
      },
      ...responsesEvents([{ call: 1, id: "call_b", name: "customer__lookup" }, { call: 1, args: "{\"id\":\"c-1\"}" }])
    ]
  }
]

for (const fx of fixtures) {
  const options = { api: fx.api }

  describe(`OpenAiModel.stream over ${fx.api}`, () => {
    it.live("gives the turn generate gives for the same content: text, calls (ids, wire names, arguments), usage", () =>
      Effect.gen(function*() {
        const server = yield* Replay.make([fx.reply(interleaved), fx.streamed(interleaved)])
        const lm = model(server.baseURL, options)
        const generated = yield* lm.generate(request)
        const { exit, parts } = yield* collect(streamOf(lm))
        expect(Exit.isSuccess(exit)).toBe(true)
        const { cut, finished, ...turn } = fold(parts)
        expect({ cut, finished }).toEqual({ cut: [], finished: true })
        expect(turn).toEqual(generated)
        expect(yield* throughCore(parts)).toEqual(Exit.succeed(generated))
        expect(generated).toEqual({
          text: "Looking up.",
          toolCalls: [
            { id: "call_a", name: "kb__search", arguments: "{\"query\":\"vat \\\"EU\\\"\",\"limit\":null}" },
            { id: "call_b", name: "customer__lookup", arguments: "{\"id\":\"c-42\"}" }
          ],
          usage: fx.usage
        })
        // It came in the pieces the server sent.
        expect(parts.filter((part) => part.type === "text-delta").map((part) => part.delta)).toEqual([
          "Look",
          "ing",
          " up."
        ])
        expect(parts.filter((part) => part.type === "call-delta")).toHaveLength(6)
      }))

    it.live("sends the body generate sends, with stream: true added", () =>
      Effect.gen(function*() {
        const server = yield* Replay.make([fx.reply([{ text: "ok" }]), fx.streamed([{ text: "ok" }])])
        const lm = model(server.baseURL, options)
        yield* lm.generate(request)
        yield* Stream.runDrain(streamOf(lm))
        const [generated, streamed] = server.requests
        expect(streamed?.path).toBe(generated?.path)
        expect(streamed?.body).toEqual({ ...generated?.body, ...fx.added })
        expect(generated?.body.stream).toBeUndefined()
      }))

    it.live("hands on each part as it arrives, before the server has sent the rest", () =>
      Effect.gen(function*() {
        const server = yield* Replay.make([fx.streamed(interleaved, { eventDelay: 80 })])
        const sentBefore: Array<number> = []
        yield* Stream.runForEach(streamOf(model(server.baseURL, options)), (part) =>
          Effect.sync(() => {
            if (part.type === "text-delta") sentBefore.push(server.streamed())
          }))
        expect(sentBefore).toEqual([0, 0, 0])
      }))

    it.live("a connection cut mid-call fails with connection after the parts it gave, is not retried; core refuses the call", () =>
      Effect.gen(function*() {
        const steps: ReadonlyArray<Step> = [
          { text: "Look" },
          { call: 0, id: "call_a", name: "kb__search" },
          { call: 0, args: "{\"query\":\"va" }
        ]
        const cut = fx.streamed(steps, { end: "none", cut: true })
        const server = yield* Replay.make([cut, cut, fx.reply(steps)])
        const { exit, parts } = yield* collect(streamOf(model(server.baseURL, options)))
        expect(parts).toEqual([
          { type: "text-delta", delta: "Look" },
          { type: "call-start", key: expect.any(String), id: "call_a", name: "kb__search" },
          { type: "call-delta", key: expect.any(String), delta: "{\"query\":\"va" }
        ])
        const failure = failureOf(exit)
        expect(failure).toMatchObject({ reason: "connection" })
        expect(server.requests).toHaveLength(1)
        expect(fold(parts)).toMatchObject({ toolCalls: [], cut: ["call_a"], finished: false })
        expect(yield* throughCore(parts, failure)).toEqual(Exit.fail(failure))
      }))

    it.live("a server that stops sending mid-stream is cut after the timeout: timeout, not retried, its call cut", () =>
      Effect.gen(function*() {
        const steps: ReadonlyArray<Step> = [
          { text: "Look" },
          { call: 0, id: "call_a", name: "kb__search" },
          { call: 0, args: "{\"query\":\"va" },
          { call: 0, args: "t\"}" }
        ]
        // The server stalls after the text: a second and a half before the next event.
        const events = fx.events(steps)
        const after = events.findIndex((event) => JSON.stringify(event).includes("\"Look\"")) + 1
        const slow = { events: events.map((event, i) => i === after ? { ...event, delay: 1_500 } : event) }
        const server = yield* Replay.make([slow, slow])
        const { exit, parts } = yield* collect(streamOf(model(server.baseURL, { ...options, timeout: "300 millis" })))
        expect(failureOf(exit)).toMatchObject({ reason: "timeout", detail: expect.stringMatching(/stalled/) })
        expect(parts.length).toBeGreaterThan(0)
        expect(parts.some((part) => part.type === "finish")).toBe(false)
        expect(server.requests).toHaveLength(1)
      }))

    it.live("a consumer slower than the timeout is not cut: only the wait for the server counts", () =>
      Effect.gen(function*() {
        // Each event a little late, well within the timeout; the consumer then takes longer than it over each part.
        const events = fx.events([{ text: "One" }, { text: " two" }, { text: " three" }])
        const server = yield* Replay.make([{ events: events.map((event) => ({ ...event, delay: 20 })) }])
        const slowly = streamOf(model(server.baseURL, { ...options, timeout: "150 millis" })).pipe(
          Stream.tap(() => Effect.sleep("250 millis"))
        )
        const { exit, parts } = yield* collect(slowly)
        expect(exit).toEqual(Exit.void)
        expect(parts.filter((part) => part.type === "text-delta").map((part) => part.delta).join("")).toBe(
          "One two three"
        )
        expect(parts.at(-1)?.type).toBe("finish")
      }))

    it.live("a failure before the first part is retried: a 429, then a cut before any part, then the stream", () =>
      Effect.gen(function*() {
        const server = yield* Replay.make([
          Replay.errorReply(429, "Rate limit reached.", { "retry-after-ms": "10" }),
          // Events that make no part (the role chunk; response.created and in_progress), then the cut.
          { events: fx.events([]).slice(0, fx.api === "chat" ? 1 : 2), cut: true },
          fx.streamed([{ text: "fine" }])
        ])
        const { exit, parts } = yield* collect(streamOf(model(server.baseURL, options)))
        expect(Exit.isSuccess(exit)).toBe(true)
        expect(parts).toEqual([{ type: "text-delta", delta: "fine" }, { type: "finish", usage: fx.usage }])
        expect(server.requests).toHaveLength(3)
      }))

    it.live("interrupting the consumer mid-stream aborts the HTTP request", () =>
      Effect.gen(function*() {
        // The server holds the event after "one" for 10 seconds.
        const events = fx.events([{ text: "one" }, { text: "never" }])
        const held = events.findIndex((event) => JSON.stringify(event.data).includes("never"))
        events[held] = { ...events[held]!, delay: 10_000 }
        const server = yield* Replay.make([{ events }])
        const parts: Array<Part> = []
        const fiber = yield* Effect.forkChild(
          Stream.runForEach(streamOf(model(server.baseURL, options)), (part) => Effect.sync(() => parts.push(part)))
        )
        while (parts.length === 0) yield* Effect.sleep("10 millis")
        yield* Fiber.interrupt(fiber)
        const exit = yield* Fiber.await(fiber)
        expect(Exit.isFailure(exit) && Cause.hasInterruptsOnly(exit.cause)).toBe(true)
        expect(parts).toEqual([{ type: "text-delta", delta: "one" }])
        // Until the server sees the connection go (the test timeout bounds it).
        while (server.abandoned() === 0) yield* Effect.sleep("10 millis")
        expect(server.abandoned()).toBe(1)
        expect(server.streamed()).toBe(0)
      }))

    it.live("interrupting it before the headers came aborts the HTTP request too", () =>
      Effect.gen(function*() {
        const server = yield* Replay.make([{ ...fx.streamed([{ text: "late" }]), delay: 10_000 }])
        const fiber = yield* Effect.forkChild(Stream.runDrain(streamOf(model(server.baseURL, options))))
        while (server.requests.length === 0) yield* Effect.sleep("10 millis")
        yield* Fiber.interrupt(fiber)
        while (server.abandoned() === 0) yield* Effect.sleep("10 millis")
        expect(server.abandoned()).toBe(1)
      }))

    it.live("an HTTP error status is typed as generate's, and retried as generate's is", () =>
      Effect.gen(function*() {
        for (const [status, reason, maxRetries] of [[400, "bad-request", 3], [503, "server", 1]] as const) {
          const error = Replay.errorReply(status, `Refused with ${status}.`)
          const server = yield* Replay.make([error, error, error, error])
          const lm = model(server.baseURL, { ...options, maxRetries })
          const generated = yield* Effect.flip(lm.generate(request))
          const requests = server.requests.length
          const { exit, parts } = yield* collect(streamOf(lm))
          expect(parts).toEqual([])
          expect(failureOf(exit)).toEqual(generated)
          expect(generated).toMatchObject({ reason, status, detail: `Refused with ${status}.` })
          expect(server.requests.length - requests).toBe(requests)
        }
      }))

    it.live("a chunk that is not JSON, or JSON of the wrong shape, is a typed malformed-response, not retried", () =>
      Effect.gen(function*() {
        // First, and after a part.
        const text = fx.events([{ text: "Hel" }]).slice(0, -3)
        for (const bad of ["{\"choices\": [", fx.wrongShape]) {
          for (const before of [[], text]) {
            const server = yield* Replay.make([{ events: [...before, { data: bad }] }, fx.streamed([{ text: "ok" }])])
            const { exit, parts } = yield* collect(streamOf(model(server.baseURL, options)))
            expect(failureOf(exit)).toMatchObject({ reason: "malformed-response" })
            expect(parts).toEqual(before.length > 0 ? [{ type: "text-delta", delta: "Hel" }] : [])
            expect(server.requests).toHaveLength(1)
          }
        }
      }))

    it.live("a 200 that is no event stream (a proxy's page) is malformed-response, as generate has it", () =>
      Effect.gen(function*() {
        const page = { text: "<html>proxy error</html>", headers: { "content-type": "text/html" } }
        const server = yield* Replay.make([page, page])
        const lm = model(server.baseURL, options)
        const generated = yield* Effect.flip(lm.generate(request))
        const { exit, parts } = yield* collect(streamOf(lm))
        expect(parts).toEqual([])
        expect(failureOf(exit)).toMatchObject({ reason: generated.reason })
        expect(generated.reason).toBe("malformed-response")
        expect(server.requests).toHaveLength(2)
      }))

    it.live("a call's start without its id goes on as a part core refuses; the other call is whole", () =>
      Effect.gen(function*() {
        const server = yield* Replay.make([{ events: fx.noId }])
        const { exit, parts } = yield* collect(streamOf(model(server.baseURL, options)))
        expect(Exit.isSuccess(exit)).toBe(true)
        expect(parts[0]).toEqual({ type: "call-start", key: expect.any(String), id: undefined, name: "kb__search" })
        expect(fold(parts)).toMatchObject({
          toolCalls: [
            { id: undefined, name: "kb__search" },
            { id: "call_b", name: "customer__lookup", arguments: "{\"id\":\"c-1\"}" }
          ],
          finished: true
        })
        const core = yield* throughCore(parts)
        expect(failureOf(core)).toMatchObject({
          reason: "malformed-response",
          detail: "the call's start has no id or no name"
        })
      }))
  })
}

describe("OpenAiModel.stream over chat: the turn ends at its finish_reason", () => {
  const calls: ReadonlyArray<Step> = [
    { call: 0, id: "call_a", name: "kb__search" },
    { call: 0, args: "{\"query\":\"vat\",\"limit\":null}" }
  ]
  const whole = [{ id: "call_a", name: "kb__search", arguments: "{\"query\":\"vat\",\"limit\":null}" }]

  it.live("with no usage chunk, the finish comes when the body ends, with no usage", () =>
    Effect.gen(function*() {
      const server = yield* Replay.make([chatStream(calls, { usage: false })])
      const { exit, parts } = yield* collect(streamOf(model(server.baseURL)))
      expect(Exit.isSuccess(exit)).toBe(true)
      expect(parts.at(-1)).toEqual({ type: "finish", usage: undefined })
      expect(fold(parts)).toMatchObject({ toolCalls: whole, cut: [] })
    }))

  it.live("a cut after the finish_reason, before the usage chunk, still finishes: the calls are whole", () =>
    Effect.gen(function*() {
      const server = yield* Replay.make([{ events: chatEvents(calls, { usage: false }).slice(0, -1), cut: true }])
      const { exit, parts } = yield* collect(streamOf(model(server.baseURL)))
      expect(Exit.isSuccess(exit)).toBe(true)
      expect(fold(parts)).toMatchObject({ toolCalls: whole, cut: [], finished: true })
    }))

  it.live("an error the server sends as an event fails the stream with its message, after the parts before it", () =>
    Effect.gen(function*() {
      const error = { error: { message: "The server had an error.", type: "server_error", param: null, code: null } }
      const server = yield* Replay.make([{ events: [...chatEvents([{ text: "Hm" }]).slice(0, 2), { data: error }] }])
      const { exit, parts } = yield* collect(streamOf(model(server.baseURL)))
      expect(parts).toEqual([{ type: "text-delta", delta: "Hm" }])
      expect(failureOf(exit)).toMatchObject({ reason: "server", detail: "The server had an error." })
    }))

  it.live("a body that ends ([DONE]) with no finish_reason has no finish: its calls are cut", () =>
    Effect.gen(function*() {
      const server = yield* Replay.make([{ events: [...chatEvents(calls, { end: "none" }), { data: "[DONE]" }] }])
      const { exit, parts } = yield* collect(streamOf(model(server.baseURL)))
      expect(Exit.isSuccess(exit)).toBe(true)
      expect(fold(parts)).toMatchObject({ toolCalls: [], cut: ["call_a"], finished: false })
      expect(failureOf(yield* throughCore(parts))).toMatchObject({ detail: expect.stringContaining("not run") })
    }))
})

describe("OpenAiModel.stream over responses: calls end where the provider marks them done", () => {
  const responses = { api: "responses" as const, maxRetries: 0 }
  const steps: ReadonlyArray<Step> = [
    { call: 0, id: "call_a", name: "kb__search" },
    { call: 0, args: "{\"query\":\"vat\",\"limit\":null}" },
    { call: 0, done: true },
    { call: 1, id: "call_b", name: "customer__lookup" },
    { call: 1, args: "{\"id\":\"c-" }
  ]
  const done = { id: "call_a", name: "kb__search", arguments: "{\"query\":\"vat\",\"limit\":null}" }

  it.live("a cut keeps the call marked done and cuts the one still open", () =>
    Effect.gen(function*() {
      const server = yield* Replay.make([responsesStream(steps, { end: "none", cut: true })])
      const { exit, parts } = yield* collect(streamOf(model(server.baseURL, responses)))
      expect(failureOf(exit)).toMatchObject({ reason: "connection" })
      expect(parts.filter((part) => part.type === "call-end")).toHaveLength(1)
      expect(fold(parts)).toMatchObject({ toolCalls: [done], cut: ["call_b"], finished: false })
    }))

  it.live("response.incomplete: a turn of text finishes as generate keeps it; a call still open is cut", () =>
    Effect.gen(function*() {
      const text = yield* Replay.make([responsesStream([{ text: "Partly" }], { end: "incomplete" })])
      const { parts } = yield* collect(streamOf(model(text.baseURL, responses)))
      expect(parts).toEqual([
        { type: "text-delta", delta: "Partly" },
        { type: "finish", usage: { inputTokens: 13, outputTokens: 5 } }
      ])
      const call = yield* Replay.make([responsesStream(steps, { end: "incomplete" })])
      const { exit, parts: callParts } = yield* collect(streamOf(model(call.baseURL, responses)))
      expect(Exit.isSuccess(exit)).toBe(true)
      expect(fold(callParts)).toMatchObject({ toolCalls: [done], cut: ["call_b"], finished: false })
    }))

  it.live("response.failed and an error event fail the stream with the provider's message, after its parts", () =>
    Effect.gen(function*() {
      const failed = yield* Replay.make([responsesStream([{ text: "Hm" }], { end: "failed" })])
      const first = yield* collect(streamOf(model(failed.baseURL, responses)))
      expect(first.parts).toEqual([{ type: "text-delta", delta: "Hm" }])
      expect(failureOf(first.exit)).toMatchObject({ reason: "server", detail: "server_error: The model crashed." })
      const errorEvent = {
        event: "error",
        data: { type: "error", code: "rate_limit_exceeded", message: "Slow down.", param: null, sequence_number: 9 }
      }
      const errored = yield* Replay.make([{
        events: [...responsesEvents([{ text: "Hm" }], { end: "none" }), errorEvent]
      }])
      const second = yield* collect(streamOf(model(errored.baseURL, responses)))
      expect(second.parts).toEqual([{ type: "text-delta", delta: "Hm" }])
      expect(failureOf(second.exit)).toMatchObject({
        reason: "rate-limited",
        detail: "rate_limit_exceeded: Slow down."
      })
    }))
})
