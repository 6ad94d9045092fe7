// The Responses API, streamed: `responses.body` with `stream: true`, and its
// events read into parts. A function_call item starts a call at
// `response.output_item.added` (its call_id and name), its key the item's
// output_index, which every event of the item carries; the call ends where
// the provider marks it done (`response.function_call_arguments.done` or
// `response.output_item.done`, whichever comes first).
//
// How the turn ends:
// - `response.completed`: `finish`, with its usage.
// - `response.incomplete` (the output limit, a content filter): the turn as
//   `generate` keeps it, so `finish` with its usage; but if a call is still
//   open then, no `finish`: the stream ends and core cuts that call, never
//   running its unfinished arguments.
// - `response.failed` and `error`: the stream fails with the provider's code
//   and message (`providerFailure`: `server` unless the code says otherwise).
// - A body that ends before any of these: no `finish`; core cuts what is open.
//
// What the server sends is read, never trusted: an event that is not an
// object with a type, or whose text delta or output_index is not of its
// type, fails the stream with `malformed-response`. An event that names a
// call which never started, a start without a call_id or a name, or
// arguments that are not text go on as they came, and core judges them. Other
// events (reasoning, refusals, which `generate` drops too) are passed over.
import type { LanguageModel } from "@graded/core"
import type OpenAI from "openai"
import { providerFailure } from "./errors.js"
import * as responses from "./responses.js"
import { type Decoder, malformed } from "./stream.js"

type Part = LanguageModel.StreamPart

export const body = (
  model: string,
  request: LanguageModel.Request,
  extra: { parallelToolCalls: boolean; store: boolean | undefined }
): OpenAI.Responses.ResponseCreateParamsStreaming => ({ ...responses.body(model, request, extra), stream: true })

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null

const usageOf = (response: unknown): LanguageModel.Usage | undefined =>
  isObject(response) ? responses.usage(response.usage as OpenAI.Responses.ResponseUsage | undefined) : undefined

export const decoder = (): Decoder => {
  const open = new Set<string>()
  const ended = new Set<string>()
  let finished = false
  const end = (key: string): Array<Part> => {
    if (!open.has(key)) return []
    open.delete(key)
    ended.add(key)
    return [{ type: "call-end", key }]
  }
  return {
    event: (event) => {
      if (finished) return []
      if (!isObject(event) || typeof event.type !== "string") return malformed("an event has no type")
      const item = isObject(event.item) ? event.item : undefined
      const isCall = item?.type === "function_call"
      const keyed = event.type === "response.function_call_arguments.delta" ||
        event.type === "response.function_call_arguments.done" || isCall
      if (keyed && !Number.isInteger(event.output_index)) return malformed(`a ${event.type} has no output_index`)
      const key = String(event.output_index)
      switch (event.type) {
        case "response.output_text.delta":
          if (typeof event.delta !== "string") return malformed("a text delta is not text")
          return event.delta === "" ? [] : [{ type: "text-delta", delta: event.delta }]
        case "response.output_item.added": {
          if (!isCall) return []
          if (!ended.has(key)) open.add(key)
          // Not checked here: core refuses a start with no call_id or no name, and a call started twice.
          const start: Part = { type: "call-start", key, id: item.call_id as string, name: item.name as string }
          // Some servers send the arguments whole with the item, and no deltas.
          return typeof item.arguments === "string" && item.arguments !== ""
            ? [start, { type: "call-delta", key, delta: item.arguments }]
            : [start]
        }
        case "response.function_call_arguments.delta":
          // A call that never started, or arguments that are not text: core judges.
          return event.delta === "" ? [] : [{ type: "call-delta", key, delta: event.delta as string }]
        case "response.function_call_arguments.done":
          return end(key)
        case "response.output_item.done":
          return isCall ? end(key) : []
        case "response.completed":
          finished = true
          return [{ type: "finish", usage: usageOf(event.response) }]
        case "response.incomplete":
          finished = true
          return open.size === 0 ? [{ type: "finish", usage: usageOf(event.response) }] : []
        case "response.failed": {
          const error = isObject(event.response) && isObject(event.response.error) ? event.response.error : {}
          return providerFailure(error.code, error.message ?? "the response failed")
        }
        case "error":
          return providerFailure(event.code, event.message)
        default:
          return []
      }
    },
    end: (cut) => finished ? [] : cut ?? []
  }
}
