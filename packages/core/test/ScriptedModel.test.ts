import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { LanguageModel, ScriptedModel } from "@graded/core"

describe("ScriptedModel", () => {
  it.effect("plays its turns in order, sends wire names, then fails with a typed error", () =>
    Effect.gen(function*() {
      const model = yield* LanguageModel.LanguageModel
      const request = { messages: [], tools: [] }
      const first = yield* model.generate(request)
      expect(first.toolCalls.map((c) => [c.name, c.arguments])).toEqual([["kb__search", "{\"query\":\"a\"}"]])
      const second = yield* model.generate(request)
      expect(second.text).toBe("done")
      const error = yield* Effect.flip(model.generate(request))
      expect(error.reason).toBe("script-exhausted")
    }).pipe(
      Effect.provide(ScriptedModel.layer([
        ScriptedModel.calls(ScriptedModel.call("kb.search", { query: "a" })),
        ScriptedModel.text("done")
      ]))
    ))
})
