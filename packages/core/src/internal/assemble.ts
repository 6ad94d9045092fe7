// A streamed turn, put together: the one place a stream of parts becomes the
// turn the loop judges, for every adapter and the scripted model. A part is
// data from outside: one that names a call it does not fit makes that call
// malformed; one that names nothing the turn can hold makes the turn
// malformed. A call still open when the stream stops is cut, and refused.
import { Effect, Stream } from "effect"
import { ModelError, type Response, type StreamPart, type ToolCall, type Usage } from "../LanguageModel.js"

/** What a streamed turn came to: the turn, and why each refused call is refused (by index). */
export interface Assembled {
  readonly response: Response
  readonly issues: ReadonlyMap<number, string>
}

/** A well-formed part, as the loop passes it on while the turn streams. */
export type Piece =
  | { readonly type: "text-delta"; readonly delta: string }
  | { readonly type: "call-start"; readonly id: string; readonly name: string }
  | { readonly type: "call-delta"; readonly id: string; readonly delta: string }

export const cutIssue = "the stream stopped before this call's arguments were complete; it was not run"

interface Open {
  readonly id: string
  readonly name: string
  readonly args: Array<string>
  ended: boolean
  issue: string | undefined
}

const isString = (value: unknown): value is string => typeof value === "string"

const field = (part: object, key: string): unknown => (part as Record<string, unknown>)[key]

const readUsage = (value: unknown): Usage | undefined => {
  if (typeof value !== "object" || value === null) return undefined
  const input = field(value, "inputTokens")
  const output = field(value, "outputTokens")
  return {
    inputTokens: typeof input === "number" && Number.isFinite(input) ? input : 0,
    outputTokens: typeof output === "number" && Number.isFinite(output) ? output : 0
  }
}

const malformed = (detail: string) =>
  new ModelError({ reason: "malformed-response", detail: `the model's streamed turn is malformed: ${detail}` })

/**
 * Reads a turn's parts as they come, handing each well-formed one to `onPiece`
 * (a streaming loop's events). Fails as the stream does when it stops before
 * its first part, so that a turn that never started fails as a request would.
 */
export const assemble = <R>(
  parts: Stream.Stream<StreamPart, ModelError>,
  onPiece: (piece: Piece) => Effect.Effect<void, never, R>
): Effect.Effect<Assembled, ModelError, R> =>
  Effect.suspend(() => {
    const text: Array<string> = []
    const calls: Array<Open> = []
    const byKey = new Map<string, Open>()
    let usage: Usage | undefined
    let finished = false
    let seen = 0
    let broken: ModelError | undefined

    // Ok, or why the turn as a whole is malformed.
    const take = (part: unknown): Effect.Effect<void, never, R> | ModelError | undefined => {
      seen++
      if (typeof part !== "object" || part === null) return malformed("a part is not an object")
      const type = field(part, "type")
      if (type === "text-delta") {
        const delta = field(part, "delta")
        if (!isString(delta)) return malformed("a text-delta has no text")
        text.push(delta)
        return onPiece({ type, delta })
      }
      if (type === "finish") {
        usage = readUsage(field(part, "usage"))
        finished = true
        return undefined
      }
      const key = field(part, "key")
      if (!isString(key)) return malformed(`a ${String(type).slice(0, 40)} part has no key`)
      const open = byKey.get(key)
      if (type === "call-start") {
        const id = field(part, "id")
        const name = field(part, "name")
        if (open !== undefined) {
          open.issue ??= "the call was started twice"
          return undefined
        }
        const call: Open = {
          id: isString(id) ? id : "",
          name: isString(name) ? name : "(no name)",
          args: [],
          ended: false,
          issue: isString(id) && isString(name) ? undefined : "the call's start has no id or no name"
        }
        calls.push(call)
        byKey.set(key, call)
        return call.issue === undefined ? onPiece({ type, id: call.id, name: call.name }) : undefined
      }
      if (open === undefined) return malformed(`a part names the call ${JSON.stringify(key)}, which never started`)
      if (type === "call-delta") {
        const delta = field(part, "delta")
        if (!isString(delta)) open.issue ??= "a part of its arguments is not text"
        else if (open.ended) open.issue ??= "arguments came after the call's end"
        else {
          open.args.push(delta)
          if (open.issue === undefined) return onPiece({ type, id: open.id, delta })
        }
        return undefined
      }
      if (type === "call-end") {
        open.ended = true
        return undefined
      }
      return malformed(`a part of type ${JSON.stringify(String(type).slice(0, 40))} is unknown`)
    }

    const consumed = Stream.runForEachWhile(parts, (part) => {
      const taken = take(part)
      if (taken instanceof ModelError) {
        broken = taken
        return Effect.succeed(false)
      }
      if (taken === undefined) return Effect.succeed(!finished)
      return Effect.as(taken, !finished)
    })

    return Effect.flatMap(Effect.result(consumed), (result) => {
      if (broken !== undefined) return Effect.fail(broken)
      // Nothing came: the turn failed as a request fails.
      if (result._tag === "Failure" && seen === 0) return Effect.fail(result.failure)
      const issues = new Map<number, string>()
      const toolCalls = calls.map((call, index): ToolCall => {
        const issue = call.issue ?? (call.ended || finished ? undefined : cutIssue)
        if (issue !== undefined) issues.set(index, issue)
        return { id: call.id, name: call.name, arguments: issue === undefined ? call.args.join("") : "" }
      })
      // A stream cut with no call in it left only text, which may be cut mid-word:
      // that is no answer to end a run on.
      if (!finished && toolCalls.length === 0) {
        return Effect.fail(
          result._tag === "Failure"
            ? result.failure
            : new ModelError({ reason: "connection", detail: "the stream ended before the turn was complete" })
        )
      }
      const joined = text.join("")
      return Effect.succeed({
        response: { text: text.length > 0 ? joined : undefined, toolCalls, usage },
        issues
      })
    })
  })
