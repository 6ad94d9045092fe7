// graded's LanguageModel over an effect/ai one. Each turn is one generateText
// or streamText call with tool call resolution disabled and validation
// deferred: effect/ai hands back the calls the model made and runs none of
// them (its toolkit here has no handlers to run, and the prompt never holds an
// approval it would act on); graded checks and runs them.
import { Clock, Effect, Stream } from "effect"
import { LanguageModel } from "@graded/core"
import type { AiError, LanguageModel as AiLanguageModel, Response, Tool } from "effect/ai"
import { fromDefect, fromFailure } from "./errors.js"
import { prompt, toolkit } from "./request.js"
import { response, streamMapper } from "./response.js"

type Tools = Record<string, Tool.Any>

/** What every turn asks of effect/ai, beside its prompt and toolkit. */
export const turnOptions = { disableToolCallResolution: true, toolCallValidation: "deferred" } as const

const options = (request: LanguageModel.Request) => ({
  prompt: prompt(request.messages),
  toolkit: toolkit(request.tools),
  ...turnOptions
})

const failed = (streaming: boolean) => (error: unknown) =>
  Effect.flatMap(Clock.currentTimeMillis, (now) => Effect.fail(fromFailure(error, now, streaming)))

// effect/ai types a toolkit's requirements by its tools' parameter schemas; a
// dynamic tool of a JSON Schema has none to encode, so a turn needs nothing.
type Turn = ReturnType<typeof options>
type Generate = (
  turn: Turn
) => Effect.Effect<{ readonly content: ReadonlyArray<Response.Part<Tools>> }, AiError.AiError>
type Streamed = (turn: Turn) => Stream.Stream<Response.StreamPart<Tools>, AiError.AiError>

export const service = (model: AiLanguageModel.LanguageModel): LanguageModel.LanguageModel.Service => {
  const generateText: Generate = (turn) => (model.generateText as Generate).call(model, turn)
  const streamText: Streamed = (turn) => (model.streamText as Streamed).call(model, turn)
  return {
    generate: (request) =>
      Effect.suspend(() => generateText(options(request))).pipe(
        Effect.map((result) => response(result.content)),
        Effect.catch(failed(false)),
        Effect.catchDefect((defect) => Effect.fail(fromDefect(defect)))
      ),
    stream: (request) =>
      Stream.suspend(() => {
        const map = streamMapper()
        return streamText(options(request)).pipe(
          Stream.catch((error) => Stream.fromEffect(failed(true)(error))),
          Stream.mapEffect((part) => {
            const mapped = map(part)
            return mapped instanceof LanguageModel.ModelError ? Effect.fail(mapped) : Effect.succeed(mapped)
          }),
          Stream.flattenIterable,
          Stream.catchDefect((defect) => Stream.fail(fromDefect(defect)))
        )
      })
  }
}
