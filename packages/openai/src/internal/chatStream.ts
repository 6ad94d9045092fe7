// Chat Completions, streamed: `chat.body` with `stream: true` and the usage
// chunk asked for, and each chat.completion.chunk read into parts. A call
// starts at the first fragment of its index (which carries its id and name)
// and has no end of its own: all of a turn's calls end at `finish`. That
// comes once a choice has its `finish_reason` and the usage chunk has come,
// or when the body ends (or is cut) after the `finish_reason` without one:
// the provider has said the turn is whole. A body that stops before a
// `finish_reason` ends without `finish`, and core cuts what is open.
//
// What the server sends is read, never trusted: a chunk that is not an
// object, or whose choices, content or tool calls are not of their types (a
// fragment without its index, which nothing could be tied to), fails the
// stream with `malformed-response`. A call's start without an id or a name,
// or arguments that are not text, go on as they came: core refuses that call
// and the turn goes on, as `generate` hands such a call to the loop.
import type { LanguageModel } from "@graded/core"
import type OpenAI from "openai"
import * as chat from "./chat.js"
import { type Decoder, malformed } from "./stream.js"

type Part = LanguageModel.StreamPart

export const body = (
  model: string,
  request: LanguageModel.Request,
  extra: { parallelToolCalls: boolean }
): OpenAI.Chat.Completions.ChatCompletionCreateParamsStreaming => ({
  ...chat.body(model, request, extra),
  stream: true,
  stream_options: { include_usage: true }
})

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null

// The fragments of the tool calls in one chunk's delta, each a part.
const calls = (fragments: unknown, started: Set<number>, parts: Array<Part>): string | undefined => {
  if (fragments == null) return undefined
  if (!Array.isArray(fragments)) return "a delta's tool_calls is not a list"
  for (const fragment of fragments) {
    if (!isObject(fragment) || !Number.isInteger(fragment.index)) return "a tool call fragment has no index"
    const key = String(fragment.index)
    const fn = isObject(fragment.function) ? fragment.function : {}
    if (!started.has(fragment.index as number)) {
      started.add(fragment.index as number)
      // Not checked here: core refuses a start with no id or no name.
      parts.push({ type: "call-start", key, id: fragment.id as string, name: fn.name as string })
    }
    if (fn.arguments !== undefined && fn.arguments !== "") {
      // Not checked here either: core refuses a call whose arguments are not text.
      parts.push({ type: "call-delta", key, delta: fn.arguments as string })
    }
  }
  return undefined
}

export const decoder = (): Decoder => {
  const started = new Set<number>()
  let reason = false
  let usage: LanguageModel.Usage | undefined
  let finished = false
  const finish = (): Array<Part> => {
    finished = true
    return [{ type: "finish", usage }]
  }
  return {
    event: (chunk) => {
      // What follows the finish is not read; core has stopped reading too.
      if (finished) return []
      if (!isObject(chunk)) return malformed("a chunk is not an object")
      if (chunk.usage != null) {
        if (!isObject(chunk.usage)) return malformed("a chunk's usage is not an object")
        usage = chat.usage(chunk.usage as unknown as OpenAI.CompletionUsage)
      }
      const parts: Array<Part> = []
      if (chunk.choices != null) {
        if (!Array.isArray(chunk.choices)) return malformed("a chunk's choices is not a list")
        // One choice is asked for; `generate` reads the first too.
        const choice: unknown = chunk.choices[0]
        if (choice !== undefined) {
          if (!isObject(choice)) return malformed("a choice is not an object")
          const delta = choice.delta ?? {}
          if (!isObject(delta)) return malformed("a choice's delta is not an object")
          if (delta.content != null && typeof delta.content !== "string") {
            return malformed("a delta's content is not text")
          }
          if (typeof delta.content === "string" && delta.content !== "") {
            parts.push({ type: "text-delta", delta: delta.content })
          }
          const wrong = calls(delta.tool_calls, started, parts)
          if (wrong !== undefined) return malformed(wrong)
          if (choice.finish_reason != null) reason = true
        }
      }
      return reason && usage !== undefined ? [...parts, ...finish()] : parts
    },
    end: (cut) => finished ? [] : reason ? finish() : cut ?? []
  }
}
