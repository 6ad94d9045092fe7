// The Responses API: the conversation as input items (messages, function
// calls and their outputs, matched by call_id), and the output items back.
import { type LanguageModel, Wire } from "@graded/core"
import type OpenAI from "openai"

type Params = OpenAI.Responses.ResponseCreateParamsNonStreaming
type Item = OpenAI.Responses.ResponseInputItem

const items = (message: LanguageModel.Message): Array<Item> => {
  switch (message.role) {
    case "system":
      return [{ role: "system", content: message.content }]
    case "user":
      return [{ role: "user", content: message.content }]
    case "assistant":
      return [
        ...(message.content !== undefined && message.content !== ""
          ? [{ role: "assistant" as const, content: message.content }] : []),
        ...message.toolCalls.map((call): Item => ({
          type: "function_call",
          call_id: call.id,
          name: Wire.echoSafe(call.name),
          arguments: call.arguments
        }))
      ]
    case "tool":
      return [{ type: "function_call_output", call_id: message.callId, output: message.content }]
  }
}

export const body = (
  model: string,
  request: LanguageModel.Request,
  extra: { parallelToolCalls: boolean; store: boolean | undefined }
): Params => ({
  model,
  input: request.messages.flatMap(items),
  ...(request.tools.length > 0
    ? {
      tools: request.tools.map((tool) => ({
        type: "function" as const,
        name: tool.name,
        description: tool.description,
        parameters: tool.parameters as Record<string, unknown>,
        strict: tool.strict
      })),
      parallel_tool_calls: extra.parallelToolCalls
    }
    : {}),
  ...(extra.store !== undefined ? { store: extra.store } : {})
})

export const response = (result: OpenAI.Responses.Response): LanguageModel.Response | string => {
  if (!Array.isArray(result?.output)) return "the response has no output"
  const texts: Array<string> = []
  const calls: Array<LanguageModel.ToolCall> = []
  for (const item of result.output) {
    if (item.type === "message") {
      for (const part of item.content) if (part.type === "output_text") texts.push(part.text)
    } else if (item.type === "function_call") {
      calls.push({ id: item.call_id, name: item.name, arguments: item.arguments })
    }
  }
  return {
    text: texts.length > 0 ? texts.join("") : undefined,
    toolCalls: calls,
    usage: usage(result.usage)
  }
}

// Shared with the stream, whose `response.completed` event carries it.
export const usage = (usage: OpenAI.Responses.ResponseUsage | null | undefined): LanguageModel.Usage | undefined =>
  usage != null ? { inputTokens: usage.input_tokens, outputTokens: usage.output_tokens } : undefined
