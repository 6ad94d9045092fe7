// effect/ai's response parts to graded's turn, and its stream parts to
// graded's StreamParts. Only calls the model asks the app to run count
// (`providerExecuted` ones ran at the provider, and are not graded's to run);
// their arguments are the provider's raw JSON text where it streams it, and
// the parameters it parsed, serialized again, where it does not.
import type { LanguageModel } from "@graded/core"
import type { Response, Tool } from "effect/ai"
import { fromErrorPart } from "./errors.js"

type Tools = Record<string, Tool.Any>

const serialize = (params: unknown): string => {
  try {
    return JSON.stringify(params) ?? ""
  } catch {
    // Not JSON (a provider's own value): arguments the loop refuses as malformed.
    return ""
  }
}

const usageOf = (usage: Response.Usage | undefined): LanguageModel.Usage | undefined =>
  usage === undefined ? undefined : {
    inputTokens: usage.inputTokens.total ?? 0,
    outputTokens: usage.outputTokens.total ?? 0
  }

export const response = (parts: ReadonlyArray<Response.Part<Tools>>): LanguageModel.Response => {
  const text: Array<string> = []
  const toolCalls: Array<LanguageModel.ToolCall> = []
  let usage: LanguageModel.Usage | undefined
  for (const part of parts) {
    switch (part.type) {
      case "text": {
        text.push(part.text)
        break
      }
      case "tool-call": {
        if (part.providerExecuted) break
        toolCalls.push({ id: part.id, name: part.name, arguments: serialize(part.params) })
        break
      }
      case "finish": {
        usage = usageOf(part.usage)
        break
      }
    }
  }
  const joined = text.join("")
  return { text: joined === "" ? undefined : joined, toolCalls, usage }
}

interface Call {
  /** Some of its arguments' text came as deltas. */
  streamed: boolean
  ended: boolean
}

/**
 * A mapper for one stream: each effect/ai part to the graded parts it makes,
 * or the error an `error` part reports. A call starts at `tool-params-start`
 * (its key is its id) and ends at its `tool-call`, the part that says effect/ai
 * read the whole call; a stream cut before that leaves the call open, and
 * graded refuses it.
 */
export const streamMapper = () => {
  const calls = new Map<string, Call>()
  const skipped = new Set<string>()
  return (part: Response.StreamPart<Tools>): ReadonlyArray<LanguageModel.StreamPart> | LanguageModel.ModelError => {
    switch (part.type) {
      case "text-delta":
        return part.delta === "" ? [] : [{ type: "text-delta", delta: part.delta }]
      case "tool-params-start": {
        if (part.providerExecuted) {
          skipped.add(part.id)
          return []
        }
        if (calls.has(part.id)) return []
        calls.set(part.id, { streamed: false, ended: false })
        return [{ type: "call-start", key: part.id, id: part.id, name: part.name }]
      }
      case "tool-params-delta": {
        const call = calls.get(part.id)
        if (call === undefined || call.ended || part.delta === "") return []
        call.streamed = true
        return [{ type: "call-delta", key: part.id, delta: part.delta }]
      }
      case "tool-call": {
        if (part.providerExecuted || skipped.has(part.id)) return []
        const call = calls.get(part.id)
        if (call?.ended === true) return []
        const out: Array<LanguageModel.StreamPart> = []
        if (call === undefined) out.push({ type: "call-start", key: part.id, id: part.id, name: part.name })
        // No text streamed (a provider that sends the call whole, or `{}` with no
        // delta): the parameters it parsed are the arguments.
        if (call === undefined || !call.streamed) {
          out.push({ type: "call-delta", key: part.id, delta: serialize(part.params) })
        }
        calls.set(part.id, { streamed: true, ended: true })
        out.push({ type: "call-end", key: part.id })
        return out
      }
      case "finish":
        return [{ type: "finish", usage: usageOf(part.usage) }]
      case "error":
        return fromErrorPart(part.error)
      default:
        return []
    }
  }
}
