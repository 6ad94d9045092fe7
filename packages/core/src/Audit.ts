/**
 * Audit records what happened and why: which tools were offered and why the
 * others were not, every call, refusal, confirmation and delivery. Each entry
 * carries the trace id, the actor and the autonomous flag of its invocation.
 *
 * @since 0.1.0
 */
import { Clock, Context, Effect, Layer } from "effect"
import * as Invocation from "./Invocation.js"

/**
 * What happened.
 *
 * @since 0.1.0
 * @category models
 */
export type Event =
  | {
    readonly type: "offered"
    readonly tools: ReadonlyArray<string>
    readonly suppressed: ReadonlyArray<{ readonly tool: string; readonly reason: string }>
  }
  | { readonly type: "called"; readonly tool: string; readonly input: unknown }
  | { readonly type: "completed"; readonly tool: string; readonly chars: number }
  | { readonly type: "refused"; readonly tool: string; readonly gate: string; readonly reason: string }
  | { readonly type: "confirm-requested"; readonly tool: string; readonly grade: string; readonly payload: unknown }
  | {
    readonly type: "decided"
    readonly tool: string
    readonly by: string
    readonly decision: "approved" | "rejected" | "invalid-edit"
    readonly edited: boolean
    readonly reason?: string | undefined
  }
  | { readonly type: "delivered"; readonly tool: string; readonly by: string }
  | { readonly type: "failed"; readonly tool: string; readonly error: string; readonly cause?: string | undefined }
  | { readonly type: "answered"; readonly rounds: number }
  | { readonly type: "round-limit"; readonly rounds: number; readonly pending: ReadonlyArray<string> }

/**
 * An event with when and for whom it happened.
 *
 * @since 0.1.0
 * @category models
 */
export type Entry = Event & {
  readonly at: string
  readonly traceId: string | undefined
  readonly actor: string | undefined
  readonly autonomous: boolean
}

/**
 * Where entries go. With no layer in scope, entries are discarded.
 *
 * @since 0.1.0
 * @category services
 */
export class Audit extends Context.Reference<Audit>()("@graded/core/Audit", {
  defaultValue: (): Audit.Service => ({ write: () => Effect.void })
}) {}

/**
 * @since 0.1.0
 */
export declare namespace Audit {
  /**
   * @since 0.1.0
   * @category models
   */
  export interface Service {
    readonly write: (entry: Entry) => Effect.Effect<void>
  }
}

/**
 * Records an event, stamped with the current invocation context.
 *
 * @since 0.1.0
 * @category constructors
 */
export const record = (event: Event): Effect.Effect<void> =>
  Effect.gen(function*() {
    const audit = yield* Audit
    const context = yield* Invocation.current
    const now = yield* Clock.currentTimeMillis
    yield* audit.write({
      ...event,
      at: new Date(now).toISOString(),
      traceId: context.traceId,
      actor: context.actor,
      autonomous: context.autonomous
    })
  })

/**
 * A sink from a function.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (write: (entry: Entry) => Effect.Effect<void>): Layer.Layer<Audit> =>
  Layer.succeed(Audit, { write })

/**
 * An in-memory sink: its `entries` grow as events are recorded.
 *
 * @since 0.1.0
 * @category models
 */
export interface Memory {
  readonly layer: Layer.Layer<Audit>
  readonly entries: ReadonlyArray<Entry>
}

/**
 * @example
 * import { Audit } from "@graded/core"
 * const audit = Audit.memory()
 * // provide audit.layer, then read audit.entries
 *
 * @since 0.1.0
 * @category constructors
 */
export const memory = (): Memory => {
  const entries: Array<Entry> = []
  return { entries, layer: layer((entry) => Effect.sync(() => void entries.push(entry))) }
}
