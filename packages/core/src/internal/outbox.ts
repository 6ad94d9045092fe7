// A durable step's audit entries, held for the step's transaction: each is
// stamped as it is recorded (time, trace, actor, labels) and written when the
// step commits (`flush`, inside the transaction), so a change of the run and
// the entries that led to it are kept together, or neither is. A process
// killed before the commit loses both: the step runs again from what was
// stored, and records its entries again. Entries are written before any code
// of a tool runs, whose own entries follow them.
// Who may import this: runs.ts.
import { Effect } from "effect"
import { Audit, type Entry, type Event } from "../Audit.js"
import { discard, type Sink, stamped, stampOf, writeNow } from "./audit.js"
import { keptService } from "./kept.js"

export interface Outbox {
  /** Audit.record, held until `flush`. */
  readonly record: (event: Event) => Effect.Effect<void>
  /** Writes what is held, in the order it was recorded. */
  readonly flush: Effect.Effect<void>
  /** Whether nothing is held. */
  readonly empty: () => boolean
}

export const outbox = (): Outbox => {
  const held: Array<readonly [Sink, Entry]> = []
  const write = (): Effect.Effect<void> => {
    while (held.length > 0) {
      const [sink, entry] = held.shift()!
      const pending = writeNow(sink, entry)
      if (pending !== undefined) return Effect.andThen(pending, Effect.suspend(write))
    }
    return Effect.void
  }
  return {
    record: (event) =>
      Effect.withFiber((fiber) => {
        const sink = keptService(fiber.context, Audit)
        if (sink !== discard) held.push([sink, stamped(stampOf(fiber), event)])
        return Effect.void
      }),
    flush: Effect.suspend(write),
    empty: () => held.length === 0
  }
}
