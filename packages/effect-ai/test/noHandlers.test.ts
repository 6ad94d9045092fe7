// effect/ai never runs a tool: every turn asks it with tool call resolution
// disabled and validation deferred, with a toolkit of handler-less dynamic
// tools and a prompt that holds no approval for it to act on. Even an effect/ai
// handler the app has in context for a tool of the same name never runs; the
// tool graded offers runs once per call, in graded.
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Stream } from "effect"
import { LanguageModel as AiLanguageModel, Tool as AiTool, Toolkit as AiToolkit } from "effect/ai"
import { AnthropicClient, AnthropicLanguageModel } from "@effect/ai-anthropic"
import { Redacted } from "effect"
import { FetchHttpClient } from "effect/http"
import { Agent } from "@graded/core"
import { EffectAiModel } from "@graded/effect-ai"
import { assembled, desk, request, streamed } from "./providers.js"
import * as Replay from "./ReplayServer.js"

interface Seen {
  readonly method: "generateText" | "streamText"
  readonly options: any
  readonly content: Array<any>
}

// The real provider, with each call to it and what it answered recorded.
const spied = (url: string, seen: Array<Seen>) =>
  EffectAiModel.layer.pipe(
    Layer.provide(Layer.effect(
      AiLanguageModel.LanguageModel,
      Effect.map(Effect.service(AiLanguageModel.LanguageModel), (inner): AiLanguageModel.LanguageModel => ({
        ...inner,
        generateText: ((options: any) =>
          Effect.tap(inner.generateText(options), (response: any) =>
            Effect.sync(() => seen.push({ method: "generateText", options, content: [...response.content] })))) as any,
        streamText: ((options: any) => {
          const record: Seen = { method: "streamText", options, content: [] }
          seen.push(record)
          return Stream.tap(inner.streamText(options), (part: any) =>
            Effect.sync(() =>
              record.content.push(part)
            ))
        }) as any
      }))
    )),
    Layer.provide(AnthropicLanguageModel.layer({ model: "claude-sonnet-4-5" })),
    Layer.provide(AnthropicClient.layer({ apiKey: Redacted.make("test-key"), apiUrl: url })),
    Layer.provide(FetchHttpClient.layer)
  )

// An app's own effect/ai handler for a tool of the same wire name, in context.
const appHandler = (runs: { count: number }) =>
  AiToolkit.make(AiTool.dynamic("kb__search", { parameters: { type: "object" } })).toLayer({
    kb__search: () => Effect.sync(() => void runs.count++)
  })

const call = { id: "toolu_a", name: "kb__search", arguments: "{\"query\":\"vat\",\"limit\":null}" }

const expectAskedWithoutResolution = (seen: ReadonlyArray<Seen>, definitions: ReadonlyArray<any>) => {
  for (const { content, options } of seen) {
    expect(options.disableToolCallResolution).toBe(true)
    expect(options.toolCallValidation).toBe("deferred")
    // A toolkit, not a toolkit with handlers; its tools are graded's definitions.
    expect("handle" in options.toolkit).toBe(false)
    expect(Object.values(options.toolkit.tools).map((tool: any) => [tool.name, tool.jsonSchema])).toEqual(
      definitions.map((definition) => [definition.name, definition.parameters])
    )
    for (const message of options.prompt.content) {
      for (const part of typeof message.content === "string" ? [] : message.content) {
        expect(part.type).not.toMatch(/^tool-approval/)
      }
    }
    // effect/ai resolved nothing: no result of its own came back.
    expect(content.filter((part) => part.type === "tool-result" || part.type === "tool-approval-request")).toEqual([])
  }
}

describe("no tool handler runs inside effect/ai", () => {
  it.live("generated: effect/ai is asked without resolution; the app's handler never runs; graded's tool runs once", () =>
    Effect.gen(function*() {
      const { definitions, effects, readOnly } = desk()
      const seen: Array<Seen> = []
      const runs = { count: 0 }
      const server = yield* Replay.make([
        Replay.anthropicJson({ calls: [call] }),
        Replay.anthropicJson({ text: "Found it." })
      ])
      const result = yield* Agent.run({ toolkit: readOnly, prompt: "Asked before?" }).pipe(
        Effect.provide(spied(server.url, seen)),
        Effect.provide(appHandler(runs))
      )
      expect(result.answer).toBe("Found it.")
      expect(effects.searches).toEqual(["vat"])
      expect(runs.count).toBe(0)
      expect(seen.map((entry) => entry.method)).toEqual(["generateText", "generateText"])
      expect(seen[0]?.content.filter((part) => part.type === "tool-call")).toMatchObject([
        { id: "toolu_a", name: "kb__search", params: { query: "vat", limit: null } }
      ])
      expectAskedWithoutResolution(seen, definitions)
    }))

  it.live("streamed: the same", () =>
    Effect.gen(function*() {
      const { definitions } = desk()
      const seen: Array<Seen> = []
      const runs = { count: 0 }
      const server = yield* Replay.make([Replay.anthropicSse({ calls: [call] })])
      const { error, parts } = yield* streamed(spied(server.url, seen), request(definitions)).pipe(
        Effect.provide(appHandler(runs))
      )
      expect(error).toBeUndefined()
      expect(assembled(parts).toolCalls).toEqual([call])
      expect(runs.count).toBe(0)
      expect(seen.map((entry) => entry.method)).toEqual(["streamText"])
      expect(seen[0]?.content.some((part) => part.type === "tool-call")).toBe(true)
      expectAskedWithoutResolution(seen, definitions)
    }))
})
