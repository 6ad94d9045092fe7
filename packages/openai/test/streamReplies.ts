// Streamed replies in each API's own wire format, as the openai package types
// them (ChatCompletionChunk; ResponseStreamEvent), made from a list of steps:
// a stretch of text, a call's start, a stretch of its arguments, its end.
import type { Reply, Sse } from "./ReplayServer.js"

export type Step =
  | { readonly text: string }
  | { readonly call: number; readonly id: string; readonly name: string }
  | { readonly call: number; readonly args: string }
  /** Responses only: the provider marks the call done. Chat Completions has no such event. */
  | { readonly call: number; readonly done: true }

interface Shape {
  /** Send the turn's end (chat: a finish_reason; Responses: this event); default `"completed"`. */
  readonly end?: "completed" | "incomplete" | "failed" | "none"
  /** Chat: send the usage chunk after the finish_reason (default true). */
  readonly usage?: boolean
  readonly cut?: boolean
  readonly eventDelay?: number
}

const chatUsage = { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 }
const responsesUsage = {
  input_tokens: 13,
  input_tokens_details: { cached_tokens: 0 },
  output_tokens: 5,
  output_tokens_details: { reasoning_tokens: 0 },
  total_tokens: 18
}

const chunk = (delta: object, finish: string | null = null) => ({
  id: "chatcmpl-1",
  object: "chat.completion.chunk",
  created: 0,
  model: "test-model",
  system_fingerprint: "fp_1",
  choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
  usage: null
})

/** Chat Completions' chunks, the usage chunk `stream_options.include_usage` asks for, and `[DONE]`. */
export const chatEvents = (steps: ReadonlyArray<Step>, shape: Shape = {}): Array<Sse> => {
  const data: Array<unknown> = [chunk({ role: "assistant", content: "", refusal: null })]
  for (const step of steps) {
    if ("text" in step) data.push(chunk({ content: step.text }))
    else if ("name" in step) {
      data.push(chunk({
        tool_calls: [{ index: step.call, id: step.id, type: "function", function: { name: step.name, arguments: "" } }]
      }))
    } else if ("args" in step) {
      data.push(chunk({ tool_calls: [{ index: step.call, function: { arguments: step.args } }] }))
    }
  }
  if ((shape.end ?? "completed") !== "none") {
    data.push(chunk({}, steps.some((step) => "name" in step) ? "tool_calls" : "stop"))
    if (shape.usage !== false) data.push({ ...chunk({}), choices: [], usage: chatUsage })
    data.push("[DONE]")
  }
  return data.map((data) => ({ data }))
}

export const chatStream = (steps: ReadonlyArray<Step>, shape: Shape = {}): Reply => ({
  events: chatEvents(steps, shape),
  ...(shape.cut !== undefined ? { cut: shape.cut } : {}),
  ...(shape.eventDelay !== undefined ? { eventDelay: shape.eventDelay } : {})
})

/**
 * The Responses API's events: the message item at output index 0 when there
 * is text, call n at n + 1 (or n without text). At `completed` every call not
 * yet done is marked done first, as the server does.
 */
export const responsesEvents = (steps: ReadonlyArray<Step>, shape: Shape = {}): Array<Sse> => {
  const events: Array<{ type: string } & Record<string, unknown>> = []
  const hasText = steps.some((step) => "text" in step)
  const indexOf = (call: number) => call + (hasText ? 1 : 0)
  const calls = new Map<number, { id: string; call_id: string; name: string; arguments: string; done: boolean }>()
  let text = ""
  const response = (status: string, output: Array<unknown>, usage: unknown) => ({
    id: "resp-1",
    object: "response",
    created_at: 0,
    model: "test-model",
    status,
    error: status === "failed" ? { code: "server_error", message: "The model crashed." } : null,
    incomplete_details: status === "incomplete" ? { reason: "max_output_tokens" } : null,
    output,
    parallel_tool_calls: true,
    tool_choice: "auto",
    tools: [],
    usage
  })
  const message = (status: string) => ({
    type: "message",
    id: "msg-1",
    role: "assistant",
    status,
    content: status === "in_progress" ? [] : [{ type: "output_text", text, annotations: [] }]
  })
  const item = (call: number, status: string) => {
    const c = calls.get(call)!
    return { type: "function_call", id: c.id, call_id: c.call_id, name: c.name, arguments: c.arguments, status }
  }
  const done = (call: number) => {
    const c = calls.get(call)!
    if (c.done) return
    c.done = true
    events.push({
      type: "response.function_call_arguments.done",
      item_id: c.id,
      output_index: indexOf(call),
      arguments: c.arguments
    })
    events.push({ type: "response.output_item.done", output_index: indexOf(call), item: item(call, "completed") })
  }
  events.push({ type: "response.created", response: response("in_progress", [], null) })
  events.push({ type: "response.in_progress", response: response("in_progress", [], null) })
  if (hasText) {
    events.push({ type: "response.output_item.added", output_index: 0, item: message("in_progress") })
    events.push({
      type: "response.content_part.added",
      item_id: "msg-1",
      output_index: 0,
      content_index: 0,
      part: { type: "output_text", text: "", annotations: [] }
    })
  }
  for (const step of steps) {
    if ("text" in step) {
      text += step.text
      events.push({
        type: "response.output_text.delta",
        item_id: "msg-1",
        output_index: 0,
        content_index: 0,
        delta: step.text,
        logprobs: []
      })
    } else if ("name" in step) {
      calls.set(step.call, { id: `fc-${step.call}`, call_id: step.id, name: step.name, arguments: "", done: false })
      events.push({
        type: "response.output_item.added",
        output_index: indexOf(step.call),
        item: item(step.call, "in_progress")
      })
    } else if ("args" in step) {
      calls.get(step.call)!.arguments += step.args
      events.push({
        type: "response.function_call_arguments.delta",
        item_id: `fc-${step.call}`,
        output_index: indexOf(step.call),
        delta: step.args
      })
    } else done(step.call)
  }
  const end = shape.end ?? "completed"
  if (end === "completed") {
    if (hasText) {
      events.push({ type: "response.output_text.done", item_id: "msg-1", output_index: 0, content_index: 0, text })
      events.push({ type: "response.output_item.done", output_index: 0, item: message("completed") })
    }
    for (const call of calls.keys()) done(call)
  }
  const output = [...(hasText ? [message("completed")] : []), ...[...calls.keys()].map((c) => item(c, "completed"))]
  if (end !== "none") {
    events.push({ type: `response.${end}`, response: response(end, output, responsesUsage) })
  }
  return events.map((event, i) => {
    const data = { ...event, sequence_number: i }
    return { event: event.type, data }
  })
}

export const responsesStream = (steps: ReadonlyArray<Step>, shape: Shape = {}): Reply => ({
  events: responsesEvents(steps, shape),
  ...(shape.cut !== undefined ? { cut: shape.cut } : {}),
  ...(shape.eventDelay !== undefined ? { eventDelay: shape.eventDelay } : {})
})
