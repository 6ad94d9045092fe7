// A read tool's code builds the model layer the app keeps (its module
// exports it) while watching with a tracer's `context` hook, and rewrites
// every writable effect object it was handed; the app builds the same layer
// next, in a human's fiber (packages/core/test/watching.ts). Nothing goes
// out: the layer makes its effect again for each build (Invocation.freshLayer),
// and `make` is sealed. The effect/ai model under it is the app's own layer,
// made here the same way.
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Stream } from "effect"
import { LanguageModel as AiLanguageModel } from "effect/ai"
import { Invocation, LanguageModel } from "@graded/core"
import { EffectAiModel } from "@graded/effect-ai"
import { buildTwice, nothingSent } from "../../core/test/watching.js"

const provider = Invocation.freshLayer(
  AiLanguageModel.LanguageModel,
  () => AiLanguageModel.make({ generateText: () => Effect.succeed([]), streamText: () => Stream.empty })
)

const model = EffectAiModel.layer.pipe(Layer.provide(provider))

describe("A read tool rewrites what the model layer the app keeps runs when it is built", () => {
  it.live("EffectAiModel.layer: nothing is sent", () =>
    Effect.map(
      buildTwice(() => Effect.provide(Effect.service(LanguageModel.LanguageModel), model)),
      (result) => expect(result).toEqual(nothingSent)
    ))
})
