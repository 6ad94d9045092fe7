/**
 * A deterministic `LanguageModel` for demos and tests: it plays a script of
 * turns in order, like a model that always answers the same way.
 *
 * @since 0.1.0
 */
import { Effect, Layer } from "effect"
import { type Request, type Response, type ToolCall, LanguageModel, ModelError } from "./LanguageModel.js"
import { toWire } from "./Wire.js"
import { freshService } from "./internal/freshLayer.js"
import { sealed } from "./internal/seal.js"

/**
 * A turn of the script: a fixed response, or one computed from what the
 * model is shown (the messages so far and the offered tools).
 *
 * @since 0.1.0
 * @category models
 */
export type Turn = Response | ((request: Request) => Response)

/**
 * A final answer.
 *
 * @since 0.1.0
 * @category constructors
 */
export const text = (text: string): Response => ({ text, toolCalls: [] })

/**
 * A well-formed call: `name` is a tool name, sent as its wire form, and
 * `args` is serialized as JSON. Without an `id`, the layer numbers the call
 * when it plays the turn (`call_1`, `call_2`, ... for each layer built).
 *
 * @since 0.1.0
 * @category constructors
 */
export const call = (name: string, args: unknown, id?: string): ToolCall => ({
  id: id ?? "",
  name: toWire(name),
  arguments: JSON.stringify(args)
})

/**
 * A call exactly as a misbehaving model might send it: any name, any
 * argument text.
 *
 * @since 0.1.0
 * @category constructors
 */
export const raw = (name: string, argumentsText: string, id?: string): ToolCall => ({
  id: id ?? "",
  name,
  arguments: argumentsText
})

/**
 * A turn that calls tools, optionally with some text beside them.
 *
 * @since 0.1.0
 * @category constructors
 */
export const calls = (...toolCalls: ReadonlyArray<ToolCall>): Response => ({ text: undefined, toolCalls })

/**
 * The scripted model. Each time the layer is built it starts from the first
 * turn; asking for a turn past the end fails with a `ModelError`.
 *
 * @example
 * import { ScriptedModel } from "@graded/core"
 * const model = ScriptedModel.layer([
 *   ScriptedModel.calls(ScriptedModel.call("kb.search", { query: "invoice" })),
 *   ScriptedModel.text("Yes, twice this year.")
 * ])
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (turns: ReadonlyArray<Turn>): Layer.Layer<LanguageModel> =>
  sealed(freshService(LanguageModel, () => Effect.sync(() => Object.freeze(scripted(turns)))))

const scripted = (turns: ReadonlyArray<Turn>): LanguageModel.Service => {
  let next = 0
  let callIds = 0
  // Calls written without an id get one here, so two runs of one script
  // (or two tests) number their calls alike. A turn scripted malformed on
  // purpose goes to the loop as it is.
  const unnumbered = (call: unknown) => typeof call === "object" && call !== null && (call as ToolCall).id === ""
  const numbering = (response: Response): Response =>
    Array.isArray(response?.toolCalls) && response.toolCalls.some(unnumbered)
      ? {
        ...response,
        toolCalls: response.toolCalls.map((call) => unnumbered(call) ? { ...call, id: `call_${++callIds}` } : call)
      }
      : response
  // One that cannot be read (a getter that throws) too.
  const numbered = (response: Response): Response => {
    try {
      return numbering(response)
    } catch {
      return response
    }
  }
  return {
    generate: (request) =>
      Effect.suspend(() => {
        const turn = turns[next]
        if (turn === undefined) {
          return Effect.fail(
            new ModelError({ reason: "script-exhausted", detail: `the script has ${turns.length} turn(s)` })
          )
        }
        next++
        return Effect.succeed(numbered(typeof turn === "function" ? turn(request) : turn))
      })
  }
}
