/**
 * A deterministic `LanguageModel` for demos and tests: it plays a script of
 * turns in order, like a model that always answers the same way.
 *
 * @since 0.1.0
 */
import { Effect, Layer, Stream } from "effect"
import {
  LanguageModel,
  ModelError,
  type Request,
  type Response,
  type StreamPart,
  type ToolCall
} from "./LanguageModel.js"
import { toWire } from "./Wire.js"
import { assemble } from "./internal/assemble.js"
import { freshService } from "./internal/freshLayer.js"
import { sealed } from "./internal/seal.js"

/**
 * A turn given as the parts of a stream, exactly as a provider might send
 * them, and how the stream stops: `cut` makes it fail after the last part (a
 * dropped connection). Made by `streamed`.
 *
 * @since 0.1.0
 * @category models
 */
export interface Streamed {
  readonly _tag: "Streamed"
  readonly parts: ReadonlyArray<StreamPart>
  readonly cut?: ModelError | undefined
}

/**
 * A turn of the script: a fixed response, one computed from what the model is
 * shown (the messages so far and the offered tools), or the parts of a stream.
 *
 * @since 0.1.0
 * @category models
 */
export type Turn = Response | Streamed | ((request: Request) => Response | Streamed)

/**
 * How the scripted model streams a turn given as a response: its text and
 * each call's arguments in pieces of `chunk` characters (default 8).
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  readonly chunk?: number | undefined
}

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
 * A turn streamed as these parts. Where the loop does not stream, the parts
 * are put together as a streaming loop would, and a stream cut before the
 * turn's end fails the request, as a dropped connection does.
 *
 * @example
 * import { ScriptedModel } from "@graded/core"
 * // A send whose arguments never finish: refused, never run.
 * ScriptedModel.streamed([
 *   { type: "text-delta", delta: "Sending now" },
 *   { type: "call-start", key: "0", id: "c1", name: "chat__sendMessage" },
 *   { type: "call-delta", key: "0", delta: "{\"text\":\"hi" }
 * ], { cut: true })
 *
 * @since 0.1.0
 * @category constructors
 */
export const streamed = (
  parts: ReadonlyArray<StreamPart>,
  options: { readonly cut?: boolean | ModelError | undefined } = {}
): Streamed => ({
  _tag: "Streamed",
  parts,
  cut: options.cut === true
    ? new ModelError({ reason: "connection", detail: "the scripted stream was cut" })
    : options.cut === false ? undefined : options.cut
})

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
export const layer = (turns: ReadonlyArray<Turn>, options: Options = {}): Layer.Layer<LanguageModel> =>
  sealed(freshService(LanguageModel, () => Effect.sync(() => Object.freeze(scripted(turns, options.chunk ?? 8)))))

const isStreamed = (turn: unknown): turn is Streamed =>
  typeof turn === "object" && turn !== null && (turn as Streamed)._tag === "Streamed"

const pieces = (text: string, chunk: number): Array<string> => {
  const out: Array<string> = []
  for (let at = 0; at < text.length; at += chunk) out.push(text.slice(at, at + chunk))
  return out
}

// A response as a provider streams it: its text, then each call in turn.
// Arguments scripted as an object go as their JSON, as the loop reads them; a
// call scripted malformed on purpose streams as malformed parts (a start with
// no id or name, arguments that are no text), which the loop refuses.
const callParts = (call: ToolCall, key: string, chunk: number): Array<StreamPart> => {
  try {
    const args: unknown = typeof call.arguments === "object" && call.arguments !== null
      ? JSON.stringify(call.arguments)
      : call.arguments
    return [
      { type: "call-start", key, id: call.id, name: call.name },
      ...(typeof args === "string"
        ? pieces(args, chunk).map((delta): StreamPart => ({ type: "call-delta", key, delta }))
        : [{ type: "call-delta", key, delta: args } as unknown as StreamPart]),
      { type: "call-end", key }
    ]
  } catch {
    return [{ type: "call-start", key } as unknown as StreamPart, { type: "call-end", key }]
  }
}

const partsOf = (response: Response, chunk: number): ReadonlyArray<StreamPart> => [
  ...pieces(typeof response.text === "string" ? response.text : "", chunk).map((delta): StreamPart => ({
    type: "text-delta",
    delta
  })),
  ...response.toolCalls.flatMap((call, index) => callParts(call, String(index), chunk)),
  { type: "finish", usage: response.usage }
]

// A turn scripted malformed on purpose (no list of calls, a getter that
// throws) streams as a malformed turn.
const streamOfResponse = (response: Response, chunk: number): Stream.Stream<StreamPart, ModelError> => {
  try {
    return Stream.fromIterable(partsOf(response, chunk))
  } catch {
    return Stream.fail(
      new ModelError({ reason: "malformed-response", detail: "the model's turn is malformed: reading it threw" })
    )
  }
}

const streamOf = (turn: Streamed): Stream.Stream<StreamPart, ModelError> =>
  turn.cut === undefined
    ? Stream.fromIterable(turn.parts)
    : Stream.concat(Stream.fromIterable(turn.parts), Stream.fail(turn.cut))

const scripted = (turns: ReadonlyArray<Turn>, chunk: number): LanguageModel.Service => {
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
  const play = (request: Request): Effect.Effect<Response | Streamed, ModelError> =>
    Effect.suspend(() => {
      const turn = turns[next]
      if (turn === undefined) {
        return Effect.fail(
          new ModelError({ reason: "script-exhausted", detail: `the script has ${turns.length} turn(s)` })
        )
      }
      next++
      const played = typeof turn === "function" ? turn(request) : turn
      return Effect.succeed(isStreamed(played) ? played : numbered(played))
    })
  return {
    provider: "graded.scripted",
    generate: (request) =>
      Effect.flatMap(play(request), (turn) =>
        isStreamed(turn)
          ? Effect.flatMap(assemble(streamOf(turn), () => Effect.void), ({ issues, response }) =>
            issues.size === 0 ? Effect.succeed(response) : Effect.fail(
              turn.cut ?? new ModelError({ reason: "malformed-response", detail: [...issues.values()].join("; ") })
            ))
          : Effect.succeed(turn)),
    stream: (request) =>
      Stream.unwrap(
        Effect.map(play(request), (turn) =>
          isStreamed(turn) ? streamOf(turn) : streamOfResponse(turn, Math.max(1, chunk)))
      )
  }
}
