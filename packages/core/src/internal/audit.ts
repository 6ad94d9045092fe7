import { Clock, Effect, Exit, type Fiber } from "effect"
import type { Entry, Event } from "../Audit.js"
import type { Context as InvocationContext } from "../Invocation.js"
import { currentRef, looksAutonomous } from "./authority.js"
import { type Labels, labelsRef } from "./labels.js"
import { pathRef, pathText } from "./tree.js"
import { asServiceCode } from "./authority.js"
import { ownEffect } from "./serviceCode.js"
import { syncThunk } from "./syncThunk.js"
import { stateOf } from "./toolState.js"

export interface Sink {
  readonly write: (entry: Entry) => Effect.Effect<void>
  /** Stores an entry at once, doing what `write` does. */
  readonly unsafeWrite?: ((entry: Entry) => void) | undefined
}

export { syncThunk } from "./syncThunk.js"

/**
 * Writes `entry` now when the sink can (a sink with `unsafeWrite`, or whose
 * `write` returns a done or synchronous effect): undefined once written, or
 * the effect that writes it. A throw here is what the effect's defect would be.
 */
export const writeNow = (sink: Sink, entry: Entry): Effect.Effect<void> | undefined => {
  if (sink.unsafeWrite !== undefined) {
    sink.unsafeWrite(entry)
    return undefined
  }
  // Graded's own effect for what the sink returned (serviceCode.ts), read from here on.
  const effect = ownEffect(sink.write(entry), sinkCode) as Effect.Effect<void>
  if (Exit.isExit(effect)) return Exit.isSuccess(effect) ? undefined : effect
  const thunk = syncThunk(effect)
  if (thunk === undefined) return effect
  thunk()
  return undefined
}

// A sink's effects run as code graded calls (serviceCode.ts): a sink may
// have been put in a context by a tool's code. One that is done already or
// synchronous (`Effect.sync`) runs plain JavaScript, rebuilt as graded's own.
const sinkCode = asServiceCode("the audit sink's code")

/** `sink.write(entry)`, its effect run as the sink's code. */
export const sinkWrite = (sink: Sink, entry: Entry): Effect.Effect<void> =>
  ownEffect(sink.write(entry), sinkCode) as Effect.Effect<void>

// The sink in scope when no layer provides one.
export const discard: Sink = { write: () => Effect.void }

type Mutable<T> = { -readonly [K in keyof T]: T[K] }

export { type Labels, labelsRef } from "./labels.js"

/** The labels of a tool (kept in its record when graded made it); undefined for a tool with neither tags nor side effects. */
export const labelsOf = (tool: {
  readonly name: string
  readonly tags?: ReadonlyArray<string> | undefined
  readonly sideEffects?: ReadonlyArray<string> | undefined
}): Labels | undefined => {
  const state = stateOf(tool)
  if (state !== undefined) return state.labels
  const tags = tool.tags !== undefined && tool.tags.length > 0 ? Object.freeze([...tool.tags]) : undefined
  const sideEffects = tool.sideEffects !== undefined && tool.sideEffects.length > 0
    ? Object.freeze([...tool.sideEffects])
    : undefined
  return tags === undefined && sideEffects === undefined
    ? undefined
    : Object.freeze({ tool: tool.name, tags, sideEffects })
}

/** Runs `self` with `tool`'s labels stamped on the entries recorded for it. */
export const labelled = (tool: Parameters<typeof labelsOf>[0]) => <A, E, R>(self: Effect.Effect<A, E, R>) => {
  const labels = labelsOf(tool)
  return labels === undefined ? self : Effect.provideService(self, labelsRef, labels)
}

/** What every entry of one call is stamped with, read from its fiber once. */
export interface Stamp {
  readonly traceId: string | undefined
  readonly actor: string | undefined
  readonly autonomous: boolean
  readonly clock: Clock.Clock
  readonly labels: Labels | undefined
  /** The sub-agent's path where the entry is written inside one. */
  readonly agent: ReadonlyArray<string>
}

export const stampOf = (
  fiber: Fiber.Fiber<unknown, unknown>,
  labels: Labels | undefined = fiber.getRef(labelsRef),
  context: InvocationContext = fiber.getRef(currentRef),
  autonomous: boolean = looksAutonomous(fiber, context)
): Stamp => {
  return {
    traceId: context.traceId,
    actor: context.actor,
    autonomous,
    clock: fiber.getRef(Clock.Clock),
    labels,
    agent: fiber.getRef(pathRef)
  }
}

const label = (entry: Mutable<Entry>, tool: string, labels: Labels | undefined): Entry => {
  if (labels !== undefined && tool === labels.tool) {
    if (labels.tags !== undefined) entry.tags = labels.tags
    if (labels.sideEffects !== undefined) entry.sideEffects = labels.sideEffects
  }
  return entry
}

/** `event`, stamped. */
export const stamped = (stamp: Stamp, event: Event): Entry => {
  // Copied, then stamped: on Node 20 `{ ...event, at }` (a spread followed
  // by more properties) costs about a microsecond a property.
  const entry = Object.assign({}, event) as Mutable<Entry>
  entry.at = isoTime(stamp.clock.currentTimeMillisUnsafe())
  entry.traceId = stamp.traceId
  entry.actor = stamp.actor
  entry.autonomous = stamp.autonomous
  if (stamp.agent.length > 0) entry.agent = pathText(stamp.agent)
  return "tool" in event ? label(entry, event.tool, stamp.labels) : entry
}

// Records into `sink`, stamped with the fiber's invocation context and clock;
// `undefined` when the sink discards, so callers skip the work. The registry
// binds one per call rather than reading the fiber for every entry.
export const recorder = (
  sink: Sink,
  fiber: Fiber.Fiber<unknown, unknown>,
  labels: Labels | undefined = fiber.getRef(labelsRef)
): ((event: Event) => Effect.Effect<void>) | undefined => {
  if (sink === discard) return undefined
  const stamp = stampOf(fiber, labels)
  return (event) => sinkWrite(sink, stamped(stamp, event))
}

// Formatting a date is slow next to the rest; entries in the same
// millisecond share one string.
let lastMillis = Number.NaN
let lastIso = ""
const isoTime = (millis: number): string => {
  if (millis !== lastMillis) {
    lastMillis = millis
    lastIso = new Date(millis).toISOString()
  }
  return lastIso
}

// Refusals already written to audit where they happened, so the registry,
// which records every refusal it sees, does not record them twice.
const audited = new WeakSet<object>()

export const markAudited = <E extends object>(error: E): E => {
  audited.add(error)
  return error
}

export const wasAudited = (error: unknown): boolean => typeof error === "object" && error !== null && audited.has(error)
