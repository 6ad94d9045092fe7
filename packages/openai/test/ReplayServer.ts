// An OpenAI-compatible server on loopback for tests: an effect/http
// server that answers each request with the next scripted reply and records
// what it was sent. A reply may be Server-Sent Events, written one by one,
// and may cut its connection after them.
import { NodeHttpServer, NodeHttpServerRequest } from "@effect/platform-node"
import { Effect, Stream } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import { createServer } from "node:http"

export interface Reply {
  readonly status?: number
  readonly headers?: Record<string, string>
  /** JSON to send; `text` sends a raw body instead. */
  readonly json?: unknown
  readonly text?: string
  /** Hold the reply this long (ms), to test timeouts and interruption. */
  readonly delay?: number
  /** Server-Sent Events to send instead, one by one. */
  readonly events?: ReadonlyArray<Sse>
  /** Wait this long (ms) before each event but the first, so parts arrive apart. */
  readonly eventDelay?: number
  /** After the events, close the connection without ending the body: a stream cut mid-way. */
  readonly cut?: boolean
}

/** One event: `data` as its JSON, or a string as it is (`[DONE]`, or a chunk that is no JSON). */
export interface Sse {
  readonly event?: string
  readonly data: unknown
  /** Wait this long (ms) before this event, instead of the reply's `eventDelay`. */
  readonly delay?: number
}

export interface Recorded {
  readonly method: string
  readonly path: string
  readonly headers: Record<string, string>
  readonly body: any
}

export interface Replay {
  readonly baseURL: string
  readonly requests: ReadonlyArray<Recorded>
  /** Requests whose handling was cut short because the client went away. */
  readonly abandoned: () => number
  /** Streamed replies whose last event was written. */
  readonly streamed: () => number
}

export const make = (script: ReadonlyArray<Reply>) =>
  Effect.gen(function*() {
    const requests: Array<Recorded> = []
    let abandoned = 0
    let streamed = 0
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
      // Count a client that goes away before its reply: the socket closes early.
      const incoming = NodeHttpServerRequest.toIncomingMessage(request)
      let replied = false
      incoming.socket.once("close", () => {
        if (!replied) abandoned++
      })
      const reply = script[requests.length - 1] ??
        { status: 500, json: { error: { message: "the replay script is exhausted" } } }
      // A held reply ends when its client goes: Effect 4's server waits for its
      // handlers when it closes, and a client that timed out is not coming back.
      const gone = Effect.callback<void>((resume) => {
        if (incoming.socket.destroyed) return resume(Effect.void)
        incoming.socket.once("close", () => resume(Effect.void))
      })
      if (reply.delay !== undefined) yield* Effect.raceFirst(Effect.sleep(reply.delay), gone)
      const options = { status: reply.status ?? 200, headers: reply.headers ?? {} }
      if (reply.events !== undefined) {
        // Replied once the last event is written; a client that goes before is abandoned.
        const socket = incoming.socket
        const cut = Effect.callback<never>(() => {
          // Node writes a chunked reply's queued chunks on the next tick; then end() sends
          // them and closes the socket in the middle of the body.
          setImmediate(() => socket.end(() => socket.destroy()))
        })
        const body = Stream.fromIterable(reply.events).pipe(
          Stream.mapEffect((event, i) => {
            const wait = event.delay ?? (i > 0 ? reply.eventDelay : undefined)
            return Effect.as(wait !== undefined ? Effect.sleep(wait) : Effect.void, encoder.encode(sse(event)))
          }),
          Stream.concat(
            Stream.fromEffect(Effect.sync(() => {
              replied = true
              streamed++
            })).pipe(Stream.drain)
          ),
          Stream.concat(reply.cut === true ? Stream.fromEffect(cut) : Stream.empty)
        )
        return HttpServerResponse.stream(body, {
          ...options,
          contentType: "text/event-stream",
          headers: { "cache-control": "no-cache", ...options.headers }
        })
      }
      replied = true
      return reply.text !== undefined
        ? HttpServerResponse.text(reply.text, options)
        : HttpServerResponse.jsonUnsafe(reply.json ?? {}, options)
    })
    yield* server.serve(app)
    const address = server.address
    if (address._tag !== "InetAddressV4") return yield* Effect.die("expected an IPv4 address")
    return {
      baseURL: `http://127.0.0.1:${address.port}/v1`,
      requests,
      abandoned: () => abandoned,
      streamed: () => streamed
    } satisfies Replay
  })

const encoder = new TextEncoder()

const sse = (event: Sse): string =>
  `${event.event !== undefined ? `event: ${event.event}\n` : ""}data: ${
    typeof event.data === "string" ? event.data : JSON.stringify(event.data)
  }\n\n`

// Canned replies in each API's shape.
export const chatReply = (message: {
  content?: string | null
  toolCalls?: ReadonlyArray<{ id: string; name: string; arguments: string }>
}): Reply => ({
  json: {
    id: "chatcmpl-1",
    object: "chat.completion",
    created: 0,
    model: "test-model",
    choices: [{
      index: 0,
      finish_reason: message.toolCalls !== undefined ? "tool_calls" : "stop",
      message: {
        role: "assistant",
        content: message.content ?? null,
        ...(message.toolCalls !== undefined
          ? {
            tool_calls: message.toolCalls.map((call) => ({
              id: call.id,
              type: "function",
              function: { name: call.name, arguments: call.arguments }
            }))
          }
          : {})
      }
    }],
    usage: { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 }
  }
})

export const responsesReply = (output: {
  text?: string
  calls?: ReadonlyArray<{ callId: string; name: string; arguments: string }>
}): Reply => ({
  json: {
    id: "resp-1",
    object: "response",
    created_at: 0,
    model: "test-model",
    status: "completed",
    output: [
      ...(output.text !== undefined
        ? [{
          type: "message",
          id: "msg-1",
          role: "assistant",
          status: "completed",
          content: [{ type: "output_text", text: output.text, annotations: [] }]
        }]
        : []),
      ...(output.calls ?? []).map((call, i) => ({
        type: "function_call",
        id: `fc-${i}`,
        call_id: call.callId,
        name: call.name,
        arguments: call.arguments,
        status: "completed"
      }))
    ],
    usage: { input_tokens: 13, output_tokens: 5, total_tokens: 18 }
  }
})

export const errorReply = (status: number, message: string, headers: Record<string, string> = {}): Reply => ({
  status,
  headers,
  json: { error: { message, type: "invalid_request_error", param: null, code: null } }
})
