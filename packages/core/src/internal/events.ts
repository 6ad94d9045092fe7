// What a streaming loop tells its caller as it goes. The loop is the same one
// `Agent.run` and `Runs.start` run; streamed, it is handed an `Emit`, which is
// a parameter and never a service: a tool's code, which runs in the loop's
// fiber, cannot reach it to say something the loop did not.
import { Cause, Effect, Queue, Stream } from "effect"
import type { Proposal } from "../Proposal.js"
import type { Call } from "./agent.js"

export type LoopEvent =
  | { readonly type: "text-delta"; readonly round: number; readonly delta: string }
  | { readonly type: "call-start"; readonly round: number; readonly id: string; readonly tool: string }
  | { readonly type: "call-delta"; readonly round: number; readonly id: string; readonly delta: string }
  | {
    readonly type: "refused"
    readonly round: number
    readonly id: string
    readonly tool: string
    readonly gate: string
    readonly reason: string
  }
  | { readonly type: "call"; readonly round: number; readonly call: Call }
  | { readonly type: "pending"; readonly proposal: Proposal }
  | { readonly type: "decided"; readonly proposal: Proposal }

export type Emit = (event: LoopEvent) => Effect.Effect<void>

/**
 * A run as a stream: `body` runs with an `Emit` that puts each event in the
 * stream, and its result ends the stream as `end(result)`. The consumer going
 * away interrupts the run where it is, as interrupting `Agent.run` would.
 */
export const eventStream = <A, E, R, End>(
  body: (emit: Emit) => Effect.Effect<A, E, R>,
  end: (result: A) => End
): Stream.Stream<LoopEvent | End, E, R> =>
  Stream.callback<LoopEvent | End, E, R>((queue) =>
    Effect.matchCauseEffect(body((event) => Effect.asVoid(Queue.offer(queue, event))), {
      onSuccess: (result) => Effect.andThen(Queue.offer(queue, end(result)), Queue.end(queue)),
      onFailure: (cause) => Queue.failCause(queue, cause as Cause.Cause<E>)
    })
  )
