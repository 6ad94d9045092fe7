/**
 * Audit records what happened and why: which tools were offered and why the
 * others were not, every call, refusal, confirmation and delivery. Each entry
 * carries the trace id, the actor and the autonomous flag of its invocation.
 *
 * @since 0.1.0
 */
import { Context, Effect, FileSystem, Layer, Result, Schema, Semaphore, Tracer, Tuple } from "effect"
import type { PlatformError } from "effect/PlatformError"
import type * as Duration from "effect/Duration"
import type { HttpClient } from "effect/http"
import type * as Headers from "effect/http/Headers"
import type { OtlpExporter } from "effect/observability"
import * as Grade from "./Grade.js"
import { discard, stamped, stampOf, writeNow } from "./internal/audit.js"
import * as lines from "./internal/describe.js"
import * as otelSpans from "./internal/otel.js"
import * as otlp from "./internal/otlp.js"
import { keptService } from "./internal/kept.js"
import { sealed } from "./internal/seal.js"
import { freshService } from "./internal/freshLayer.js"
import { textOrUndefinedKey, unknownKey } from "./internal/absentKey.js"

const tool = Schema.String
const optionalReason = Schema.optional(Schema.String)

/**
 * What happened, as a schema: a sink writes entries and reads them back (a
 * file, a database) without trusting their shape.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Event = Schema.Union([
  Schema.Struct({
    type: Schema.Literal("offered"),
    tools: Schema.Array(Schema.String),
    // `gate` says which kind of rule left the tool out (feature, page, policy:role, ...).
    suppressed: Schema.Array(Schema.Struct({ tool, reason: Schema.String, gate: Schema.optional(Schema.String) })),
    // The policy's guidelines that matched, and how (by data, or by a model for a text condition).
    guidelines: Schema.optional(
      Schema.Array(Schema.Struct({ id: Schema.String, via: Schema.Literals(["data", "model"]) }))
    )
  }),
  Schema.Struct({
    type: Schema.Literal("called"),
    tool,
    // The tool's grade, where the registry knows it (entries written before 0.4 have none).
    grade: Schema.optional(Grade.schema),
    input: unknownKey,
    openWorld: Schema.optional(Schema.Literal(true))
  }),
  Schema.Struct({ type: Schema.Literal("completed"), tool, chars: Schema.Number }),
  Schema.Struct({ type: Schema.Literal("refused"), tool, gate: Schema.String, reason: Schema.String }),
  Schema.Struct({ type: Schema.Literal("confirm-requested"), tool, grade: Schema.String, payload: unknownKey }),
  Schema.Struct({
    type: Schema.Literal("decided"),
    tool,
    by: Schema.String,
    decision: Schema.Literals(["approved", "rejected", "invalid-edit"]),
    edited: Schema.Boolean,
    reason: optionalReason,
    // How long the human took, from the request (or the proposal) to the decision, where it is known.
    waitedMillis: Schema.optional(Schema.Number)
  }),
  Schema.Struct({ type: Schema.Literal("delivered"), tool, by: Schema.String, key: Schema.optional(Schema.String) }),
  Schema.Struct({ type: Schema.Literal("failed"), tool, error: Schema.String, cause: Schema.optional(Schema.String) }),
  Schema.Struct({ type: Schema.Literal("proposed"), tool, proposal: Schema.String }),
  Schema.Struct({
    type: Schema.Literal("step"),
    plan: Schema.String,
    index: Schema.Number,
    step: Schema.String,
    kind: Schema.Union([Grade.schema, Schema.Literals(["generate", "validate"])]),
    status: Schema.Literals(["started", "completed", "failed"]),
    reason: optionalReason
  }),
  Schema.Struct({ type: Schema.Literal("answered"), rounds: Schema.Number }),
  // What a model turn used, as its provider reported it (a turn that reported nothing has no entry).
  Schema.Struct({
    type: Schema.Literal("usage"),
    round: Schema.Number,
    inputTokens: Schema.Number,
    outputTokens: Schema.Number,
    cost: Schema.optional(Schema.Number),
    // Who served the turn, as the model adapter names itself (LanguageModel.Service's provider and model).
    provider: Schema.optional(Schema.String),
    model: Schema.optional(Schema.String)
  }),
  Schema.Struct({ type: Schema.Literal("round-limit"), rounds: Schema.Number, pending: Schema.Array(Schema.String) }),
  // A delivery that stopped without settling: surfaced to a human, who marks it done or retries it.
  Schema.Struct({
    type: Schema.Literal("in-doubt"),
    tool,
    proposal: Schema.String,
    action: Schema.Literals(["surfaced", "marked-done", "retried"]),
    by: Schema.String
  }),
  // A supervised run's life: waiting on decisions, resumed, cancelled, finished.
  Schema.Struct({
    type: Schema.Literal("run"),
    run: Schema.String,
    status: Schema.Literals(["waiting", "resumed", "cancelled", "finished"]),
    proposals: Schema.optional(Schema.Array(Schema.String))
  })
])

/**
 * What happened.
 *
 * @since 0.1.0
 * @category models
 */
export type Event = typeof Event.Type

/**
 * An event with when and for whom it happened.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Entry = Event.mapMembers(Tuple.map(Schema.fieldsAssign({
  at: Schema.String,
  // Undefined when absent: a JSON line leaves out an entry's missing trace or actor.
  traceId: textOrUndefinedKey,
  actor: textOrUndefinedKey,
  autonomous: Schema.Boolean,
  // The tool's compliance tags and declared side effects, on every entry of its calls.
  tags: Schema.optional(Schema.Array(Schema.String)),
  sideEffects: Schema.optional(Schema.Array(Schema.String)),
  // Where a sub-agent wrote it: its path from the run's own tool down (`billing → research`).
  agent: Schema.optional(Schema.String),
  // The entry's stable id, where a store that keeps it forwards it to
  // another sink (`SqlAudit.forwarding`): at least once, so a reader drops
  // repeats by it.
  id: Schema.optional(Schema.String)
})))

/**
 * @since 0.1.0
 * @category models
 */
export type Entry = typeof Entry.Type

/**
 * Where entries go. With no layer in scope, entries are discarded: a
 * `Context.Reference`, so reading it requires nothing.
 *
 * @since 0.1.0
 * @category services
 */
export const Audit: Context.Reference<Audit.Service> = sealed(
  Context.Reference<Audit.Service>("@graded/core/Audit", { defaultValue: () => discard })
)

/**
 * What a layer providing the sink outputs, as a type: `never`, since Effect
 * 4's references are no requirement (`Layer.succeed(Audit.Audit, sink)` is a
 * `Layer<never>`). Kept so that `Layer.Layer<X | Audit.Audit>` reads as before.
 *
 * @since 0.1.0
 * @category services
 */
export type Audit = never

/**
 * @since 0.1.0
 */
export declare namespace Audit {
  /**
   * What a sink implements: `write` stores one entry and has no error channel,
   * so a sink never fails the call it records.
   *
   * @since 0.1.0
   * @category models
   */
  export interface Service {
    readonly write: (entry: Entry) => Effect.Effect<void>
    /**
     * Stores one entry at once, without an effect, doing what `write` does
     * and never throwing. Optional: graded calls it instead of `write` on a
     * tool call's path where it can, so that recording allocates nothing
     * beyond the entry. `layerSync` makes a sink with both.
     *
     * @since 0.2.0
     */
    readonly unsafeWrite?: ((entry: Entry) => void) | undefined
    /**
     * Stores entries forwarded from another store, in order, and fails
     * unless every one is stored (unlike `write`, which never fails): a
     * forwarder then sends them again. Optional: without it, a forwarder
     * writes each with `write`, and what such a sink drops is lost.
     *
     * @since 0.3.0
     */
    readonly writeBatch?: ((entries: ReadonlyArray<Entry>) => Effect.Effect<void, unknown>) | undefined
  }
}

/**
 * Records an event, stamped with the current invocation context.
 *
 * @since 0.1.0
 * @category constructors
 */
export const record = (event: Event): Effect.Effect<void> =>
  // One read of the fiber for the sink, the context and the clock: this runs
  // for every tool call, so it avoids a chain of effects.
  Effect.withFiber((fiber) => {
    const sink = keptService(fiber.context, Audit)
    if (sink === discard) return Effect.void
    return writeNow(sink, stamped(stampOf(fiber), event)) ?? Effect.void
  })

/**
 * A sink from a function.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (write: (entry: Entry) => Effect.Effect<void>): Layer.Layer<Audit> =>
  sealed(freshService(Audit, () => Effect.succeed(Object.freeze({ write }))))

/**
 * A sink from a function that stores an entry at once (an array, a counter, a
 * buffer another fiber drains): graded calls it without building an effect for
 * each entry. `write` must not throw; a sink never fails the call it records.
 *
 * @example
 * import { Audit } from "@graded/core"
 * let recorded = 0
 * const counting = Audit.layerSync(() => void recorded++)
 *
 * @since 0.2.0
 * @category layers
 */
export const layerSync = (write: (entry: Entry) => void): Layer.Layer<Audit> =>
  sealed(
    freshService(
      Audit,
      () =>
        Effect.succeed(Object.freeze({ write: (entry: Entry) => Effect.sync(() => write(entry)), unsafeWrite: write }))
    )
  )

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
 * Makes an in-memory sink, for tests and demos: provide its `layer`, then read
 * what was recorded in its `entries`.
 *
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
  return { entries, layer: layerSync((entry) => void entries.push(entry)) }
}

/**
 * A sink that counts every entry and keeps only the last `capacity` of them.
 *
 * @since 0.2.0
 * @category models
 */
export interface Ring {
  readonly layer: Layer.Layer<Audit>
  /** How many entries were recorded in all, kept or not. */
  readonly recorded: number
  /** The last `capacity` entries (fewer until that many were recorded), oldest first: a copy. */
  readonly entries: () => ReadonlyArray<Entry>
}

/**
 * Makes a sink that counts every entry and keeps the last `capacity` in a
 * fixed buffer: memory stays bounded however long the process runs, and
 * recording allocates nothing beyond the entry, which the buffer lets go once
 * `capacity` newer ones arrived. For benchmarks, and in production for a
 * process that ships its audit elsewhere and keeps a recent window to look
 * at. `Audit.ring(0)` only counts.
 *
 * @example
 * import { Audit } from "@graded/core"
 * const recent = Audit.ring(1000)
 * // provide recent.layer; recent.recorded counts, recent.entries() is the last 1000
 *
 * @since 0.2.0
 * @category constructors
 */
export const ring = (capacity: number): Ring => {
  const size = Math.max(0, Math.floor(capacity))
  const buffer: Array<Entry | undefined> = new Array(size).fill(undefined)
  let recorded = 0
  return {
    layer: layerSync((entry) => {
      if (size > 0) buffer[recorded % size] = entry
      recorded++
    }),
    get recorded() {
      return recorded
    },
    entries: () => {
      const kept = Math.min(recorded, size)
      const out: Array<Entry> = []
      for (let i = recorded - kept; i < recorded; i++) out.push(buffer[i % size]!)
      return out
    }
  }
}

/**
 * A JSON Lines file sink: one entry a line, appended. Writes are serialized,
 * so concurrent fibers never interleave lines. A write that fails is dropped
 * rather than failing the tool call it records.
 *
 * @example
 * import { NodeFileSystem } from "@effect/platform-node"
 * import { Layer } from "effect"
 * import { Audit } from "@graded/core"
 * const audit = Audit.jsonl("audit.jsonl").pipe(Layer.provide(NodeFileSystem.layer))
 *
 * @since 0.1.0
 * @category layers
 */
export const jsonl = (path: string): Layer.Layer<Audit, PlatformError, FileSystem.FileSystem> =>
  sealed(freshService(
    Audit,
    () =>
      Effect.gen(function*() {
        const fs = yield* FileSystem.FileSystem
        const file = yield* fs.open(path, { flag: "a" })
        const lock = yield* Semaphore.make(1)
        const encoder = new TextEncoder()
        const append = (entries: ReadonlyArray<Entry>) =>
          lock.withPermits(1)(
            Effect.suspend(() =>
              file.writeAll(
                encoder.encode(entries.map((entry) => `${JSON.stringify(entry, lines.replacer)}\n`).join(""))
              )
            )
          )
        return Object.freeze<Audit.Service>({
          write: (entry) => Effect.ignore(append([entry])),
          // Forwarded entries, in one append and then synced: a failure is
          // the forwarder's to retry, and what it counts as stored is on disk.
          writeBatch: (entries) => Effect.andThen(append(entries), file.sync)
        })
      })
  ))

/**
 * A line of an audit file that is not an audit entry: not JSON, or JSON that
 * does not decode as an `Audit.Entry`.
 *
 * @since 0.1.0
 * @category errors
 */
export class CorruptLine extends Schema.TaggedError<CorruptLine>()("@graded/core/Audit/CorruptLine", {
  path: Schema.String,
  line: Schema.Number,
  issue: Schema.String
}) {
  override get message(): string {
    return `${this.path}, line ${this.line}: ${this.issue}`
  }
}

const decodeEntry = Schema.decodeUnknownResult(Entry)
const issueOf = (error: Schema.SchemaError) => error.message.split("\n")[0]

/**
 * Reads a JSON Lines audit file back; each line is decoded with `Entry`, and
 * one that does not decode is named.
 *
 * @since 0.1.0
 * @category constructors
 */
export const readJsonl = (
  path: string
): Effect.Effect<ReadonlyArray<Entry>, PlatformError | CorruptLine, FileSystem.FileSystem> =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const lines = (yield* fs.readFileString(path)).split("\n")
    const entries: Array<Entry> = []
    for (const [index, line] of lines.entries()) {
      if (line.trim() === "") continue
      const json = yield* Effect.try({
        try: () => JSON.parse(line) as unknown,
        catch: (error) => new CorruptLine({ path, line: index + 1, issue: String(error) })
      })
      const entry = decodeEntry(json)
      if (Result.isFailure(entry)) {
        return yield* new CorruptLine({ path, line: index + 1, issue: `not an audit entry: ${issueOf(entry.failure)}` })
      }
      entries.push(entry.success)
    }
    return entries
  })

/**
 * The most characters of a payload, an input or a free-text field (a reason,
 * an error) that `describe` shows, as `Printable.display` counts them; the
 * rest is cut, and the line says how much.
 *
 * @since 0.1.0
 * @category models
 */
export const maxShown = 1_000

/**
 * One entry as a line a person reads. Every field that may come from outside
 * (a tool name a model made up, a web client's decider and reason, a payload)
 * is shown through `Printable`: on one line, with control, ANSI,
 * bidirectional and zero-width characters as visible escapes, so an entry
 * cannot erase or forge another line; payloads and free text are cut at
 * `maxShown` characters, saying how many more there were. An entry written
 * inside a sub-agent starts with its path: `[agent.billing] DELIVERED ...`.
 *
 * @example
 * import { Audit } from "@graded/core"
 * Audit.describe({ type: "refused", tool: "x\nDELIVERED", gate: "offered", reason: "unknown" })
 * // "REFUSED x\\nDELIVERED at the offered gate: unknown"
 *
 * @since 0.1.0
 * @category combinators
 */
export const describe = (entry: Event): string => lines.describe(entry, maxShown)

/**
 * A payload or free text that an exported span leaves out unless the app's
 * `payloads` hook returns it: a call's `input`, a confirmation's `payload`, a
 * `reason` (a human's, a tool's, or a refusal that may quote an input) and a
 * tool's `error`.
 *
 * @since 0.4.0
 * @category models
 */
export type PayloadField = "input" | "payload" | "reason" | "error"

/**
 * How `otel` exports.
 *
 * @since 0.4.0
 * @category models
 */
export interface OtelOptions {
  /**
   * Opts one payload in: given the field, its value and the entry, returns
   * the text the span carries (the value, masked or cut as the app likes) or
   * undefined to leave it out. Without the hook no payload leaves: they may
   * hold personal data.
   */
  readonly payloads?: ((field: PayloadField, value: unknown, entry: Entry) => string | undefined) | undefined
  /** How many runs are followed at once (default 10,000): past it the oldest run's span is ended where it stood. */
  readonly maxOpenRuns?: number | undefined
}

/**
 * Exports audit entries as OpenTelemetry spans, alongside the sink in scope
 * where the layer is built (which still gets every entry first). A span per
 * run (`invoke_agent`), per model turn (`chat`, with `gen_ai.provider.name`,
 * `gen_ai.request.model` and the tokens) and per tool call (`execute_tool`,
 * with `gen_ai.tool.name`), after the GenAI semantic conventions; graded's
 * own attributes under `graded.*`: the grade, a refusal's gate and reason,
 * the tools offered and those left out with their gates and reasons, the
 * policy's guidelines, the decider, the wait for the human, whether the
 * payload was edited, a delivery's idempotency key. Spans are made with the
 * `Tracer` in scope where the layer is built: `otlpTracer` below sends them
 * over OTLP/HTTP (Effect's `OtlpTracer.layer` from effect/observability, or
 * the tracer of @effect/opentelemetry, do too, at a few times the cost a
 * span). No payload leaves without `payloads`.
 *
 * @example
 * import { Layer } from "effect"
 * import { FetchHttpClient } from "effect/http"
 * import { Audit } from "@graded/core"
 * const store = Audit.memory()
 * const traced = Audit.otel().pipe(
 *   Layer.provide(store.layer),
 *   Layer.provide(Audit.otlpTracer({ url: "http://localhost:4318/v1/traces", resource: { serviceName: "desk" } })),
 *   Layer.provide(FetchHttpClient.layer)
 * )
 *
 * @since 0.4.0
 * @category layers
 */
export const otel = (options?: OtelOptions): Layer.Layer<Audit> =>
  sealed(freshService(
    Audit,
    () =>
      Effect.gen(function*() {
        const inner = yield* Audit
        const span = otelSpans.spans(yield* Tracer.Tracer, options)
        const keep = inner === discard ? undefined : inner
        const innerUnsafe = keep?.unsafeWrite
        const innerBatch = keep?.writeBatch
        // With no sink beneath, or one that stores at once, both happen in one
        // synchronous step: graded then records a call's entries without an effect.
        const now = keep === undefined ? span : innerUnsafe === undefined ? undefined : (entry: Entry) => {
          innerUnsafe(entry)
          span(entry)
        }
        return Object.freeze<Audit.Service>({
          write: now !== undefined
            ? (entry) => Effect.sync(() => now(entry))
            : (entry) => Effect.andThen(keep!.write(entry), Effect.sync(() => span(entry))),
          unsafeWrite: now,
          writeBatch: innerBatch === undefined ? undefined : (entries) =>
            Effect.andThen(innerBatch(entries), Effect.sync(() => entries.forEach(span)))
        })
      })
  ))

/**
 * How `otlpTracer` exports: the options of Effect's `OtlpTracer.layer`.
 * Batches go out every `exportInterval` (5 seconds) or at `maxBatchSize`
 * spans (1,000), whichever comes first, and once more when the layer's scope
 * closes (waiting at most `shutdownTimeout`, 3 seconds). The resource's
 * service name, version and attributes also come from `OTEL_SERVICE_NAME`
 * and `OTEL_RESOURCE_ATTRIBUTES`, as Effect reads them; with no name from
 * either, the service is `unknown_service`, OpenTelemetry's default.
 *
 * @since 0.4.0
 * @category models
 */
export interface OtlpTracerOptions {
  /** The collector's traces endpoint, e.g. `http://localhost:4318/v1/traces`. */
  readonly url: string
  readonly resource?: {
    readonly serviceName?: string | undefined
    readonly serviceVersion?: string | undefined
    readonly attributes?: Record<string, unknown> | undefined
  } | undefined
  readonly headers?: Headers.Input | undefined
  readonly compression?: "gzip" | "none" | undefined
  readonly exportInterval?: Duration.Input | undefined
  readonly maxBatchSize?: number | undefined
  readonly shutdownTimeout?: Duration.Input | undefined
}

/**
 * A `Tracer` that sends spans over OTLP/HTTP in protobuf, for `otel` above
 * and for the app's own spans. It batches, retries and flushes with Effect's
 * `OtlpExporter`, as Effect's `OtlpTracer` does, and writes each span to
 * protobuf as it ends, without an OTLP object in between: a traced call
 * costs about half what it costs under `OtlpTracer` (docs/PERFORMANCE.md). The
 * spans `otel` makes are exported under the instrumentation scope
 * `@graded/core`, any other span (an app's `Effect.withSpan`, a tool's own)
 * under `effect`: code given the tracer cannot make a span that reads as the
 * audit's. Needs an `HttpClient`: on Node, `NodeHttpClient.layerUndici`
 * (@effect/platform-node) posts a batch for about a third of the CPU
 * `FetchHttpClient.layer` (effect/http) takes.
 *
 * @since 0.4.0
 * @category layers
 */
export const otlpTracer = (
  options: OtlpTracerOptions
): Layer.Layer<OtlpExporter.Flusher, never, HttpClient.HttpClient> => sealed(otlp.layer(options))
