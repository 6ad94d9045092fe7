// A streamed turn over either API. The request goes out with a signal its
// stream's scope aborts, so a consumer that is interrupted or stops reading
// ends the HTTP request. The client's timeout covers the wait for the headers
// only: a server that stops sending mid-stream is cut when no event came for
// as long (`timeout`), as a connection that dropped. Each API's decoder reads the provider's events into
// graded's parts. The retry policy applies until the first part only: after
// it the human has seen tokens, and a second request would show them another
// turn.
import { Clock, Effect, Schedule, Stream } from "effect"
import { LanguageModel } from "@graded/core"
import { toModelError, toStreamError } from "./errors.js"

type Part = LanguageModel.StreamPart

/**
 * One API's reading of its events, made afresh for each request. `event`
 * never throws on what the server sent: it gives the parts an event makes, or
 * the typed failure of an event it cannot read (a throw is caught as one).
 * `end` is told how the events stopped: `undefined` when the body ended, or
 * the failure that cut it.
 */
export interface Decoder {
  readonly event: (event: unknown) => ReadonlyArray<Part> | LanguageModel.ModelError
  readonly end: (cut: LanguageModel.ModelError | undefined) => ReadonlyArray<Part> | LanguageModel.ModelError
}

export const malformed = (detail: string) =>
  new LanguageModel.ModelError({ reason: "malformed-response", detail: `a streamed event is malformed: ${detail}` })

const emit = (result: ReadonlyArray<Part> | LanguageModel.ModelError): Stream.Stream<Part, LanguageModel.ModelError> =>
  result instanceof LanguageModel.ModelError ? Stream.fail(result) : Stream.fromIterable(result)

const read = (decoder: Decoder, event: unknown): ReadonlyArray<Part> | LanguageModel.ModelError => {
  try {
    return decoder.event(event)
  } catch (error) {
    return malformed(`reading it threw (${String(error).slice(0, 200)})`)
  }
}

/**
 * The events, watched for a server that stops sending: one timer for the
 * whole stream, re-armed as each event is asked for (a timer raced against
 * every event costs a fiber and a timer an event, about 100 µs). It counts
 * only while the source is waited on, never while the consumer is busy; when
 * a wait reaches `idleMillis`, `stall` aborts the request and `stalled()`
 * says so.
 */
const idle = (events: AsyncIterable<unknown>, idleMillis: number, stall: () => void) => {
  let waiting = false
  let cut = false
  const timer = setTimeout(function check() {
    // Fired while the consumer held the stream: the server is not late; wait again.
    if (!waiting) return void timer.refresh()
    cut = true
    stall()
  }, idleMillis)
  return {
    events: {
      [Symbol.asyncIterator]: () => {
        const iterator = events[Symbol.asyncIterator]()
        return {
          next: () => {
            waiting = true
            timer.refresh()
            return iterator.next().finally(() => {
              waiting = false
            })
          },
          return: (value?: unknown) => iterator.return?.(value) ?? Promise.resolve({ done: true as const, value })
        }
      }
    } satisfies AsyncIterable<unknown>,
    stalled: () => cut,
    stop: () => clearTimeout(timer)
  }
}

const attempt = (
  open: (signal: AbortSignal) => Promise<AsyncIterable<unknown>>,
  decoder: () => Decoder,
  idleMillis: number
): Stream.Stream<Part, LanguageModel.ModelError> =>
  Stream.unwrap(Effect.gen(function*() {
    const controller = yield* Effect.acquireRelease(
      Effect.sync(() => new AbortController()),
      (controller) => Effect.sync(() => controller.abort())
    )
    const events = yield* Effect.tryPromise({ try: () => open(controller.signal), catch: (error) => error }).pipe(
      Effect.catch((error) => Effect.flatMap(Clock.currentTimeMillis, (now) => Effect.fail(toModelError(error, now))))
    )
    const decoding = decoder()
    let seen = 0
    const stalled = new LanguageModel.ModelError({
      reason: "timeout",
      detail: `the stream stalled: no event for ${idleMillis} ms`
    })
    const watch = yield* Effect.acquireRelease(
      Effect.sync(() => idle(events, idleMillis, () => controller.abort())),
      (watch) => Effect.sync(watch.stop)
    )
    const parts = Stream.fromAsyncIterable(watch.events, (error) => watch.stalled() ? stalled : toStreamError(error))
      .pipe(
        Stream.mapEffect((event) => {
          seen++
          const result = read(decoding, event)
          return result instanceof LanguageModel.ModelError ? Effect.fail(result) : Effect.succeed(result)
        }),
        Stream.flattenIterable
      )
    // A 200 whose body holds no event at all is no stream (a proxy's page): malformed, as `generate` has it.
    // The client ends a stream whose request was aborted as if it had ended: a stall is told here.
    const ended = () =>
      watch.stalled() ? decoding.end(stalled)
        : seen === 0 ? malformed("the reply holds no Server-Sent Events")
        : decoding.end(undefined)
    return Stream.concat(parts, Stream.suspend(() => emit(ended()))).pipe(
      Stream.catch((cut) => emit(decoding.end(cut)))
    )
  }))

/**
 * The parts of one turn: `open` sends the request (with the signal to abort
 * it) and gives the provider's events; `policy` is `generate`'s retry policy,
 * applied while no part has been emitted; `idleMillis` the longest wait
 * between two events.
 */
export const turn = (
  open: (signal: AbortSignal) => Promise<AsyncIterable<unknown>>,
  decoder: () => Decoder,
  policy: Schedule.Schedule<LanguageModel.ModelError, LanguageModel.ModelError>,
  idleMillis: number
): Stream.Stream<Part, LanguageModel.ModelError> =>
  Stream.suspend(() => {
    let started = false
    return attempt(open, decoder, idleMillis).pipe(
      Stream.tap(() =>
        Effect.sync(() => {
          started = true
        })
      ),
      // Stream.retry would run the request again after parts were emitted too.
      Stream.retry(Schedule.while(policy, () => !started))
    )
  })
