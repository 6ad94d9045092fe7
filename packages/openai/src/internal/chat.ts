// Chat Completions: graded's messages and definitions to the request body,
// and the first choice back to a turn.
import { type LanguageModel, Wire } from "@graded/core"
import type OpenAI from "openai"

type Params = OpenAI.Chat.Completions.ChatCompletionCreateParamsNonStreaming
type Message = OpenAI.Chat.Completions.ChatCompletionMessageParam

const message = (message: LanguageModel.Message): Message => {
  switch (message.role) {
    case "system":
      return { role: "system", content: message.content }
    case "user":
      return { role: "user", content: message.content }
    case "assistant":
      return message.toolCalls.length === 0
        ? { role: "assistant", content: message.content ?? "" }
        : {
          role: "assistant",
          content: message.content ?? null,
          tool_calls: message.toolCalls.map((call) => ({
            id: call.id,
            type: "function",
            function: { name: Wire.echoSafe(call.name), arguments: call.arguments }
          }))
        }
    case "tool":
      return { role: "tool", tool_call_id: message.callId, content: message.content }
  }
}

export const body = (model: string, request: LanguageModel.Request, extra: { parallelToolCalls: boolean }): Params => ({
  model,
  messages: request.messages.map(message),
  ...(request.tools.length > 0
    ? {
      tools: request.tools.map((tool) => ({
        type: "function" as const,
        function: {
          name: tool.name,
          description: tool.description,
          parameters: tool.parameters as Record<string, unknown>,
          strict: tool.strict
        }
      })),
      parallel_tool_calls: extra.parallelToolCalls
    }
    : {})
})

export const response = (completion: OpenAI.Chat.Completions.ChatCompletion): LanguageModel.Response | string => {
  const choice = completion?.choices?.[0]
  if (choice === undefined || choice.message === undefined) return "the response has no choices"
  const calls: Array<LanguageModel.ToolCall> = []
  for (const call of choice.message.tool_calls ?? []) {
    if (call.type !== "function") continue
    calls.push({ id: call.id, name: call.function.name, arguments: call.function.arguments })
  }
  return {
    text: choice.message.content ?? undefined,
    toolCalls: calls,
    usage: usage(completion.usage)
  }
}

// Shared with the stream, whose last chunk carries it.
export const usage = (usage: OpenAI.CompletionUsage | null | undefined): LanguageModel.Usage | undefined =>
  usage != null ? { inputTokens: usage.prompt_tokens, outputTokens: usage.completion_tokens } : undefined
