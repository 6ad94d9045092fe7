// graded's request to effect/ai's: the conversation as a Prompt (built from
// its parts, never decoded, so nothing in it can throw), and the function
// definitions as a toolkit of dynamic tools: a wire name, a description, the
// JSON Schema graded made and its strictness. The toolkit has no handlers:
// effect/ai is only ever asked to describe the tools to the provider.
import { type LanguageModel, Wire } from "@graded/core"
import { Prompt, Tool, Toolkit } from "effect/ai"

/** The toolkit effect/ai is given: tools by wire name, no handler among them. */
export type Tools = Toolkit.Toolkit<Record<string, Tool.Any>>

export const toolkit = (tools: ReadonlyArray<LanguageModel.FunctionSchema>): Tools =>
  Toolkit.make(
    ...tools.map((tool) =>
      Tool.dynamic(tool.name, { description: tool.description, parameters: tool.parameters })
        .annotate(Tool.Strict, tool.strict)
    )
  ) as unknown as Tools

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const parse = (text: string): { readonly ok: true; readonly value: unknown } | { readonly ok: false } => {
  try {
    return { ok: true, value: JSON.parse(text) }
  } catch {
    return { ok: false }
  }
}

// A call the model made, echoed back: the providers send parameters as an
// object (Anthropic's `input`, OpenAI's `arguments` re-serialized). Arguments
// that were not a JSON object go back as `{}`: the loop already told the model
// what was wrong with them in the call's result.
const paramsOf = (text: string): unknown => {
  const parsed = parse(text)
  return parsed.ok && isRecord(parsed.value) ? parsed.value : {}
}

// A tool's result is JSON text; the providers serialize `result` with
// JSON.stringify, so the parsed value goes in and the same text comes out.
// Text that is not JSON goes as a string.
const resultOf = (text: string): unknown => {
  const parsed = parse(text)
  return parsed.ok ? parsed.value : text
}

export const prompt = (messages: ReadonlyArray<LanguageModel.Message>): Prompt.Prompt => {
  const out: Array<Prompt.Message> = []
  for (const message of messages) {
    switch (message.role) {
      case "system": {
        out.push(Prompt.makeMessage("system", { content: message.content }))
        break
      }
      case "user": {
        out.push(Prompt.makeMessage("user", { content: [Prompt.makePart("text", { text: message.content })] }))
        break
      }
      case "assistant": {
        const content: Array<Prompt.AssistantMessagePart> = []
        if (message.content !== undefined && message.content !== "") {
          content.push(Prompt.makePart("text", { text: message.content }))
        }
        for (const call of message.toolCalls) {
          content.push(
            Prompt.makePart("tool-call", {
              id: call.id,
              name: Wire.echoSafe(call.name),
              params: paramsOf(call.arguments),
              providerExecuted: false
            })
          )
        }
        // An empty assistant turn is no message a provider accepts.
        if (content.length > 0) out.push(Prompt.makeMessage("assistant", { content }))
        break
      }
      case "tool": {
        const part = Prompt.makePart("tool-result", {
          id: message.callId,
          name: Wire.echoSafe(message.name),
          isFailure: false,
          result: resultOf(message.content),
          providerExecuted: false
        })
        // The results of one turn's calls go together, in one message.
        const last = out.at(-1)
        if (last !== undefined && last.role === "tool") {
          out[out.length - 1] = Prompt.makeMessage("tool", { content: [...last.content, part] })
        } else {
          out.push(Prompt.makeMessage("tool", { content: [part] }))
        }
        break
      }
    }
  }
  return Prompt.fromMessages(out)
}
