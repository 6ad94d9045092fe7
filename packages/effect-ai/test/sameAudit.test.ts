// One scripted conversation on every provider graded speaks to, each over its
// real wire format on a loopback server, streamed and not: OpenAI's Chat
// Completions and Responses (the official client, @graded/openai), and
// OpenAI's Responses and Anthropic's Messages through @graded/effect-ai
// (@effect/ai-openai, @effect/ai-anthropic). The
// grade rules never depend on a provider: every run's audit is the scripted
// model's, and so is its result.
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Stream } from "effect"
import { Agent, Audit, type LanguageModel, ScriptedModel } from "@graded/core"
import { OpenAiModel } from "@graded/openai"
import * as OpenAiReplay from "../../openai/test/ReplayServer.js"
import { chatStream, responsesStream } from "../../openai/test/streamReplies.js"
import { anthropic, desk, openAi as effectAiOpenAi } from "./providers.js"
import * as Replay from "./ReplayServer.js"

const search = { id: "call_1", name: "kb__search", arguments: "{\"query\":\"vat\"}" }
const answer = "You asked about VAT before."

interface Provider {
  readonly name: string
  readonly serve: (streamed: boolean) => Effect.Effect<Layer.Layer<LanguageModel.LanguageModel, unknown>, unknown, any>
}

const openAi = (api: "chat" | "responses") => (baseURL: string) =>
  OpenAiModel.layer({ apiKey: "test-key", baseURL, model: "test-model", api, retryBase: "5 millis" })

const providers: ReadonlyArray<Provider> = [
  {
    name: "OpenAI Chat Completions",
    serve: (streamed) =>
      Effect.map(
        OpenAiReplay.make(
          streamed
            ? [
              chatStream([{ call: 0, id: search.id, name: search.name }, { call: 0, args: search.arguments }]),
              chatStream([{ text: answer }])
            ]
            : [OpenAiReplay.chatReply({ toolCalls: [search] }), OpenAiReplay.chatReply({ content: answer })]
        ),
        (server) => openAi("chat")(server.baseURL)
      )
  },
  {
    name: "OpenAI Responses",
    serve: (streamed) =>
      Effect.map(
        OpenAiReplay.make(
          streamed
            ? [
              responsesStream([{ call: 0, id: search.id, name: search.name }, { call: 0, args: search.arguments }, {
                call: 0,
                done: true
              }]),
              responsesStream([{ text: answer }])
            ]
            : [
              OpenAiReplay.responsesReply({ calls: [{ callId: search.id, ...search }] }),
              OpenAiReplay.responsesReply({ text: answer })
            ]
        ),
        (server) => openAi("responses")(server.baseURL)
      )
  },
  {
    name: "OpenAI Responses (effect/ai)",
    serve: (streamed) =>
      Effect.map(
        Replay.make(
          streamed
            ? [Replay.openAiSse({ calls: [search] }), Replay.openAiSse({ text: answer })]
            : [Replay.openAiJson({ calls: [search] }), Replay.openAiJson({ text: answer })]
        ),
        (server) => effectAiOpenAi(server.url)
      )
  },
  {
    name: "Anthropic Messages (effect/ai)",
    serve: (streamed) =>
      Effect.map(
        Replay.make(
          streamed
            ? [Replay.anthropicSse({ calls: [search] }), Replay.anthropicSse({ text: answer })]
            : [Replay.anthropicJson({ calls: [search] }), Replay.anthropicJson({ text: answer })]
        ),
        (server) => anthropic(server.url)
      )
  }
]

// The audit a reviewer reads, without what differs from run to run (time,
// trace) or from provider to provider (the tokens each reports).
const shape = (entries: ReadonlyArray<Audit.Entry>) =>
  entries.filter((entry) => entry.type !== "usage").map(({ at: _at, traceId: _trace, ...entry }) => entry)

const run = (layer: Layer.Layer<LanguageModel.LanguageModel, unknown>, streamed: boolean) =>
  Effect.gen(function*() {
    const { effects, readOnly } = desk()
    const audit = Audit.memory()
    const options = { toolkit: readOnly, system: "Be brief.", prompt: "Asked before?" }
    const provided = Layer.merge(layer, audit.layer)
    const result = streamed
      ? yield* Stream.runCollect(Agent.runStream(options).pipe(Stream.provide(provided))).pipe(
        Effect.map((events) => {
          const end = events.at(-1)
          if (end?.type !== "end") throw new Error("the stream did not end with the result")
          return end.result
        })
      )
      : yield* Agent.run(options).pipe(Effect.provide(provided))
    return { result, audit: shape(audit.entries), searches: effects.searches }
  })

describe("the same conversation on every provider", () => {
  for (const streamed of [false, true]) {
    it.live(`gives the scripted model's audit and result, ${streamed ? "streamed" : "not streamed"}`, () =>
      Effect.gen(function*() {
        const scripted = yield* run(
          ScriptedModel.layer([ScriptedModel.calls(search), ScriptedModel.text(answer)]),
          streamed
        )
        expect(scripted.audit.map((entry) => entry.type)).toEqual(["offered", "called", "completed", "answered"])
        for (const provider of providers) {
          const layer = yield* provider.serve(streamed)
          const got = yield* run(layer, streamed)
          expect({ provider: provider.name, audit: got.audit }).toEqual({
            provider: provider.name,
            audit: scripted.audit
          })
          expect(got.searches).toEqual(["vat"])
          expect(got.result.answer).toBe(answer)
          expect(got.result.calls).toEqual(scripted.result.calls)
          // Each provider reported its tokens, turn by turn.
          expect(got.result.turns.map((turn) => turn.round)).toEqual([1, 2])
        }
      }))
  }
})
