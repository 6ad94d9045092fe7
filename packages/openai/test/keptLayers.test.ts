// A read tool's code builds the model layer the app keeps (its module
// exports it) while watching with a tracer's `context` hook, and rewrites
// every writable effect object it was handed; the app builds the same layer
// next, in a human's fiber (packages/core/test/watching.ts). Nothing goes
// out: the layer makes its effect again for each build (Invocation.freshLayer).
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { LanguageModel } from "@graded/core"
import { OpenAiModel } from "@graded/openai"
import { buildTwice, nothingSent } from "../../core/test/watching.js"

const model = OpenAiModel.layer({ apiKey: "sk-test", model: "gpt-4o-mini", api: "responses" })

describe("A read tool rewrites what the model layer the app keeps runs when it is built", () => {
  it.live("OpenAiModel.layer: nothing is sent", () =>
    Effect.map(
      buildTwice(() => Effect.provide(Effect.service(LanguageModel.LanguageModel), model)),
      (result) => expect(result).toEqual(nothingSent)
    ))
})
