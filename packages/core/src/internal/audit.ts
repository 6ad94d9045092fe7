import { Clock, Context, Effect, FiberRef } from "effect"
import type { RuntimeFiber } from "effect/Fiber"
import type { Entry, Event } from "../Audit.js"
import { currentRef, looksAutonomous } from "./invocation.js"

export interface Sink {
  readonly write: (entry: Entry) => Effect.Effect<void>
}

// The sink in scope when no layer provides one.
export const discard: Sink = { write: () => Effect.void }

type Mutable<T> = { -readonly [K in keyof T]: T[K] }

/** A tool's compliance tags and declared side effects, stamped on every entry of its calls. */
export interface Labels {
  readonly tool: string
  readonly tags: ReadonlyArray<string> | undefined
  readonly sideEffects: ReadonlyArray<string> | undefined
}

export const labelsRef: FiberRef.FiberRef<Labels | undefined> = FiberRef.unsafeMake<Labels | undefined>(undefined)

const labelsMade = new WeakMap<object, Labels | undefined>()

/** The labels of a tool, made once; undefined for a tool with neither tags nor side effects. */
export const labelsOf = (tool: {
  readonly name: string
  readonly tags?: ReadonlyArray<string> | undefined
  readonly sideEffects?: ReadonlyArray<string> | undefined
}): Labels | undefined => {
  if (labelsMade.has(tool)) return labelsMade.get(tool)
  const tags = tool.tags !== undefined && tool.tags.length > 0 ? Object.freeze([...tool.tags]) : undefined
  const sideEffects = tool.sideEffects !== undefined && tool.sideEffects.length > 0
    ? Object.freeze([...tool.sideEffects])
    : undefined
  const labels = tags === undefined && sideEffects === undefined
    ? undefined
    : Object.freeze({ tool: tool.name, tags, sideEffects })
  labelsMade.set(tool, labels)
  return labels
}

/** Runs `self` with `tool`'s labels stamped on the entries recorded for it. */
export const labelled = (tool: Parameters<typeof labelsOf>[0]) => <A, E, R>(self: Effect.Effect<A, E, R>) => {
  const labels = labelsOf(tool)
  return labels === undefined ? self : Effect.locally(self, labelsRef, labels)
}

// Records into `sink`, stamped with the fiber's invocation context and clock;
// `undefined` when the sink discards, so callers skip the work. The registry
// binds one per call rather than reading the fiber for every entry.
export const recorder = (
  sink: Sink,
  fiber: RuntimeFiber<unknown, unknown>
): ((event: Event) => Effect.Effect<void>) | undefined => {
  if (sink === discard) return undefined
  const context = fiber.getFiberRef(currentRef)
  const autonomous = looksAutonomous(fiber)
  const clock = Context.get(fiber.currentDefaultServices, Clock.Clock)
  const labels = fiber.getFiberRef(labelsRef)
  return (event) => {
    // Copied, then stamped: on Node 20 `{ ...event, at }` (a spread followed
    // by more properties) costs about a microsecond a property.
    const entry = Object.assign({}, event) as Mutable<Entry>
    entry.at = isoTime(clock.unsafeCurrentTimeMillis())
    entry.traceId = context.traceId
    entry.actor = context.actor
    entry.autonomous = autonomous
    if (labels !== undefined && "tool" in event && event.tool === labels.tool) {
      if (labels.tags !== undefined) entry.tags = labels.tags
      if (labels.sideEffects !== undefined) entry.sideEffects = labels.sideEffects
    }
    return sink.write(entry)
  }
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
