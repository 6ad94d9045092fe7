// A provider's server on loopback for tests: an effect/http server that
// answers each request with the next scripted reply (JSON, or server-sent
// events, optionally cut off mid-stream) and records what it was sent.
// The replies below are in the providers' own wire formats: Anthropic's
// Messages API and OpenAI's Responses API.
import { NodeHttpServer, NodeHttpServerRequest } from "@effect/platform-node"
import { Effect, Stream } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import { createServer } from "node:http"

export interface SseEvent {
  readonly event?: string
  readonly data: unknown
}

export interface Reply {
  readonly status?: number
  readonly headers?: Record<string, string>
  /** JSON to send; `text` sends a raw body instead; `sse` a stream of events. */
  readonly json?: unknown
  readonly text?: string
  readonly sse?: ReadonlyArray<SseEvent>
  /** After the events, drop the connection instead of ending the stream. */
  readonly cut?: boolean
  /** Drop the connection before any reply. */
  readonly drop?: boolean
}

export interface Recorded {
  readonly method: string
  readonly path: string
  readonly headers: Record<string, string>
  readonly body: any
}

export interface Replay {
  readonly url: string
  readonly requests: ReadonlyArray<Recorded>
}

const encoder = new TextEncoder()

export const sseText = (events: ReadonlyArray<SseEvent>): string =>
  events.map(({ data, event }) =>
    `${event !== undefined ? `event: ${event}\n` : ""}data: ${
      typeof data === "string" ? data : JSON.stringify(data)
    }\n\n`
  ).join("")

export const make = (script: ReadonlyArray<Reply>) =>
  Effect.gen(function*() {
    const requests: Array<Recorded> = []
    const server = yield* NodeHttpServer.make(() => createServer(), { port: 0, host: "127.0.0.1" })
    const app = Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const text = yield* Effect.orElseSucceed(request.text, () => "")
      let body: unknown = text
      try {
        body = JSON.parse(text)
      } catch {
        // recorded as text
      }
      requests.push({ method: request.method, path: request.url, headers: { ...request.headers }, body })
      const reply = script[requests.length - 1] ??
        {
          status: 500,
          json: { type: "error", error: { type: "api_error", message: "the replay script is exhausted" } }
        }
      const options = { status: reply.status ?? 200, headers: reply.headers ?? {} }
      if (reply.drop === true) {
        NodeHttpServerRequest.toIncomingMessage(request).socket.destroy()
        return HttpServerResponse.empty()
      }
      if (reply.sse !== undefined) {
        const socket = NodeHttpServerRequest.toIncomingMessage(request).socket
        // Each event its own chunk, flushed before the next; a cut drops the
        // socket with the chunked body unfinished, as a dead connection does.
        const events = Stream.fromIterable(reply.sse).pipe(
          Stream.mapEffect((event) => Effect.as(Effect.sleep(2), encoder.encode(sseText([event]))))
        )
        const cut = Stream.fromEffect(
          Effect.andThen(Effect.sleep(50), Effect.sync(() => socket.destroy()))
        ).pipe(Stream.drain)
        return HttpServerResponse.stream(reply.cut === true ? Stream.concat(events, cut) : events, {
          ...options,
          contentType: "text/event-stream"
        })
      }
      return reply.text !== undefined
        ? HttpServerResponse.text(reply.text, options)
        : HttpServerResponse.jsonUnsafe(reply.json ?? {}, options)
    })
    yield* server.serve(app)
    const address = server.address
    if (address._tag !== "InetAddressV4") return yield* Effect.die("expected an IPv4 address")
    return { url: `http://127.0.0.1:${address.port}`, requests } satisfies Replay
  })

// ---- Anthropic's Messages API ------------------------------------------------

export interface Call {
  readonly id: string
  readonly name: string
  /** The arguments' JSON text. */
  readonly arguments: string
}

export interface Turn {
  readonly text?: string
  readonly calls?: ReadonlyArray<Call>
  readonly usage?: { readonly input: number; readonly output: number }
}

const usageOf = (turn: Turn) => turn.usage ?? { input: 11, output: 7 }

// Usage as the Messages API reports it, with the cache and service fields it always sends.
const anthropicUsage = (input: number, output: number) => ({
  input_tokens: input,
  cache_creation_input_tokens: 0,
  cache_read_input_tokens: 0,
  cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 0 },
  output_tokens: output,
  service_tier: "standard",
  inference_geo: null
})

export const anthropicJson = (turn: Turn): Reply => ({
  json: {
    id: "msg_1",
    type: "message",
    role: "assistant",
    model: "claude-sonnet-4-5",
    content: [
      ...(turn.text !== undefined ? [{ type: "text", text: turn.text }] : []),
      ...(turn.calls ?? []).map((call) => ({
        type: "tool_use",
        id: call.id,
        name: call.name,
        input: JSON.parse(call.arguments)
      }))
    ],
    stop_reason: (turn.calls ?? []).length > 0 ? "tool_use" : "end_turn",
    stop_sequence: null,
    usage: anthropicUsage(usageOf(turn).input, usageOf(turn).output)
  }
})

/** A turn as Anthropic streams it; each call's arguments in `pieces` of their text. */
export const anthropicEvents = (turn: Turn, pieces = 3): Array<SseEvent> => {
  const events: Array<SseEvent> = [{
    event: "message_start",
    data: {
      type: "message_start",
      message: {
        id: "msg_1",
        type: "message",
        role: "assistant",
        model: "claude-sonnet-4-5",
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: anthropicUsage(usageOf(turn).input, 1)
      }
    }
  }]
  let index = 0
  if (turn.text !== undefined) {
    events.push({
      event: "content_block_start",
      data: { type: "content_block_start", index, content_block: { type: "text", text: "" } }
    })
    const half = Math.ceil(turn.text.length / 2)
    for (const piece of [turn.text.slice(0, half), turn.text.slice(half)]) {
      events.push({
        event: "content_block_delta",
        data: { type: "content_block_delta", index, delta: { type: "text_delta", text: piece } }
      })
    }
    events.push({ event: "content_block_stop", data: { type: "content_block_stop", index } })
    index++
  }
  for (const call of turn.calls ?? []) {
    events.push({
      event: "content_block_start",
      data: {
        type: "content_block_start",
        index,
        content_block: { type: "tool_use", id: call.id, name: call.name, input: {} }
      }
    })
    const size = Math.ceil(call.arguments.length / pieces)
    for (let at = 0; at < call.arguments.length; at += size) {
      events.push({
        event: "content_block_delta",
        data: {
          type: "content_block_delta",
          index,
          delta: { type: "input_json_delta", partial_json: call.arguments.slice(at, at + size) }
        }
      })
    }
    events.push({ event: "content_block_stop", data: { type: "content_block_stop", index } })
    index++
  }
  events.push({
    event: "message_delta",
    data: {
      type: "message_delta",
      delta: { stop_reason: (turn.calls ?? []).length > 0 ? "tool_use" : "end_turn", stop_sequence: null },
      usage: {
        input_tokens: usageOf(turn).input,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 0,
        output_tokens: usageOf(turn).output
      }
    }
  })
  events.push({ event: "message_stop", data: { type: "message_stop" } })
  return events
}

export const anthropicSse = (turn: Turn): Reply => ({ sse: anthropicEvents(turn) })

export const anthropicError = (
  status: number,
  type: string,
  message: string,
  headers: Record<string, string> = {}
) => ({
  status,
  headers,
  json: { type: "error", error: { type, message }, request_id: "req_1" }
})

// ---- OpenAI's Responses API --------------------------------------------------

const responseObject = (turn: Turn, status: "completed" | "in_progress") => ({
  id: "resp_1",
  object: "response",
  created_at: 0,
  model: "gpt-4.1",
  status,
  output: status === "in_progress" ? [] : outputItems(turn),
  usage: status === "in_progress" ? null : {
    input_tokens: usageOf(turn).input,
    output_tokens: usageOf(turn).output,
    total_tokens: usageOf(turn).input + usageOf(turn).output,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens_details: { reasoning_tokens: 0 }
  },
  parallel_tool_calls: true,
  tool_choice: "auto",
  tools: []
})

const outputItems = (turn: Turn) => [
  ...(turn.text !== undefined
    ? [{
      type: "message",
      id: "msg_1",
      role: "assistant",
      status: "completed",
      content: [{ type: "output_text", text: turn.text, annotations: [] }]
    }]
    : []),
  ...(turn.calls ?? []).map((call, i) => ({
    type: "function_call",
    id: `fc_${i}`,
    call_id: call.id,
    name: call.name,
    arguments: call.arguments,
    status: "completed"
  }))
]

export const openAiJson = (turn: Turn): Reply => ({ json: responseObject(turn, "completed") })

export const openAiEvents = (turn: Turn, pieces = 3): Array<SseEvent> => {
  let sequence = 0
  const event = (type: string, fields: Record<string, unknown>): SseEvent => ({
    event: type,
    data: { type, sequence_number: sequence++, ...fields }
  })
  const events: Array<SseEvent> = [
    event("response.created", { response: responseObject(turn, "in_progress") }),
    event("response.in_progress", { response: responseObject(turn, "in_progress") })
  ]
  let index = 0
  if (turn.text !== undefined) {
    const item = { type: "message", id: "msg_1", role: "assistant", status: "in_progress", content: [] }
    events.push(event("response.output_item.added", { output_index: index, item }))
    events.push(event("response.content_part.added", {
      item_id: "msg_1",
      output_index: index,
      content_index: 0,
      part: { type: "output_text", text: "", annotations: [] }
    }))
    const half = Math.ceil(turn.text.length / 2)
    for (const piece of [turn.text.slice(0, half), turn.text.slice(half)]) {
      events.push(event("response.output_text.delta", {
        item_id: "msg_1",
        output_index: index,
        content_index: 0,
        delta: piece,
        logprobs: []
      }))
    }
    events.push(event("response.output_text.done", {
      item_id: "msg_1",
      output_index: index,
      content_index: 0,
      text: turn.text,
      logprobs: []
    }))
    events.push(event("response.output_item.done", { output_index: index, item: outputItems(turn)[0] }))
    index++
  }
  for (const [i, call] of (turn.calls ?? []).entries()) {
    const item = {
      type: "function_call",
      id: `fc_${i}`,
      call_id: call.id,
      name: call.name,
      arguments: "",
      status: "in_progress"
    }
    events.push(event("response.output_item.added", { output_index: index, item }))
    const size = Math.ceil(call.arguments.length / pieces)
    for (let at = 0; at < call.arguments.length; at += size) {
      events.push(event("response.function_call_arguments.delta", {
        item_id: `fc_${i}`,
        output_index: index,
        delta: call.arguments.slice(at, at + size)
      }))
    }
    events.push(event("response.function_call_arguments.done", {
      item_id: `fc_${i}`,
      output_index: index,
      name: call.name,
      arguments: call.arguments
    }))
    events.push(event("response.output_item.done", {
      output_index: index,
      item: { ...item, arguments: call.arguments, status: "completed" }
    }))
    index++
  }
  events.push(event("response.completed", { response: responseObject(turn, "completed") }))
  return events
}

export const openAiSse = (turn: Turn): Reply => ({ sse: openAiEvents(turn) })

export const openAiError = (status: number, message: string, headers: Record<string, string> = {}) => ({
  status,
  headers,
  json: { error: { message, type: "invalid_request_error", param: null, code: null } }
})
