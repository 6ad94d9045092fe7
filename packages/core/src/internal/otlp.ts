// Audit.otlpTracer's body: a Tracer whose spans go over OTLP/HTTP in protobuf,
// batched by Effect's own OtlpExporter (its interval, batch size, retries and
// flush when the scope closes). What it does not do is Effect's OtlpTracer's
// per-span work: a span is written to protobuf the moment it ends, straight
// from the span (otlpProtobuf.ts), with no OTLP object in between, and the
// batch holds those bytes, so nothing of the span outlives its call; ids are
// random words, hex only when asked for.
//
// Spans Audit.otel makes through `auditSpan` are exported under graded's
// instrumentation scope; spans made through the tracer's `span` (the app's
// `Effect.withSpan`, a tool's own spans) under Effect's. Only Audit.otel
// reaches `auditSpan` (this module is internal), so a tool's code cannot make
// a span a reader would take for the audit's.
// Who may import this: Audit.ts, otel.ts.
import { Context, Duration, Effect, type Layer, Option, Scope, Tracer } from "effect"
import type * as Exit from "effect/Exit"
import { HttpBody, type HttpClient } from "effect/http"
import { OtlpExporter, OtlpResource } from "effect/observability"
import type { OtlpTracerOptions } from "../Audit.js"
import { freshLayer } from "./freshLayer.js"
import { ChunkWriter } from "./chunkWriter.js"
import { encodeBatch, encodeResource, encodeSpan, fromHex } from "./otlpProtobuf.js"

type SpanOptions = Parameters<Tracer.Tracer["span"]>[0]

// Random ids from a pool the platform's generator refills 64 KiB at a time
// (its most at once: about 5,400 span ids), read without making an object per id.
const pool = new Uint32Array(16384)
let poolAt = pool.length
const randomWord = (): number => {
  if (poolAt === pool.length) {
    globalThis.crypto.getRandomValues(pool)
    poolAt = 0
  }
  return pool[poolAt++]!
}
const randomTraceId = (): Uint8Array => {
  const words = new Uint32Array(4)
  for (let i = 0; i < 4; i++) words[i] = randomWord()
  return new Uint8Array(words.buffer)
}

const hexDigits = "0123456789abcdef"
const toHex = (bytes: Uint8Array): string => {
  let text = ""
  for (const byte of bytes) text += hexDigits[byte >> 4]! + hexDigits[byte & 15]!
  return text
}
// A word's four bytes, least significant first, as ProtobufWriter.fixed32 writes them.
const wordHex = (word: number): string => {
  let text = ""
  for (let i = 0; i < 4; i++) {
    const byte = (word >>> (8 * i)) & 255
    text += hexDigits[byte >> 4]! + hexDigits[byte & 15]!
  }
  return text
}

export type Event = readonly [name: string, at: bigint, attributes: Record<string, unknown> | undefined]

const noLinks: ReadonlyArray<Tracer.SpanLink> = Object.freeze([])

/**
 * A span of this tracer; `audit` says whether Audit.otel made it. It is
 * written to protobuf when it ends (otlpProtobuf.ts), so the batch holds
 * bytes, not spans, while it waits to be sent. What the interface asks for
 * as objects (the parent as an Option, the status, the attributes as a Map)
 * is made only when read: Audit.otel's spans are never read, only written.
 */
export class Span implements Tracer.Span {
  readonly _tag = "Span"
  /** The trace id's 16 bytes, shared by the spans of a trace this tracer started. */
  readonly traceIdBytes: Uint8Array
  /** The span id's 8 bytes, as two words. */
  readonly idLow: number
  readonly idHigh: number
  endTime: bigint | undefined
  exit: Exit.Exit<unknown, unknown> | undefined
  /** The attributes set, key then value, in the order first set. */
  readonly attributeList: Array<unknown> = []
  eventList: Array<Event> | undefined
  private linkList: Array<Tracer.SpanLink> | undefined
  private parentOption: Option.Option<Tracer.AnySpan> | undefined
  private traceIdText: string | undefined
  private spanIdText: string | undefined

  /** A span the app or a library made through the tracer (`Effect.withSpan`, say). */
  static of(options: SpanOptions, done: (span: Span) => void): Span {
    const span = new Span(
      options.name,
      options.parent._tag === "Some" ? options.parent.value : undefined,
      options.startTime,
      options.kind,
      false,
      done,
      options.annotations,
      options.sampled
    )
    span.parentOption = options.parent
    if (options.links.length > 0) span.linkList = [...options.links]
    return span
  }

  /** A span of Audit.otel's, under graded's scope. */
  static audit(
    name: string,
    parent: Tracer.AnySpan | undefined,
    startTime: bigint,
    kind: Tracer.SpanKind,
    done: (span: Span) => void
  ): Span {
    return new Span(name, parent, startTime, kind, true, done, Context.empty(), true)
  }

  private constructor(
    readonly name: string,
    readonly parentSpan: Tracer.AnySpan | undefined,
    readonly startTime: bigint,
    readonly kind: Tracer.SpanKind,
    readonly audit: boolean,
    private readonly done: (span: Span) => void,
    readonly annotations: Context.Context<never>,
    readonly sampled: boolean
  ) {
    this.traceIdBytes = parentSpan === undefined
      ? randomTraceId()
      : parentSpan instanceof Span
      ? parentSpan.traceIdBytes
      : fromHex(parentSpan.traceId, 16)
    this.idLow = randomWord()
    this.idHigh = randomWord()
  }

  get parent(): Option.Option<Tracer.AnySpan> {
    return this.parentOption ??= this.parentSpan === undefined ? Option.none() : Option.some(this.parentSpan)
  }

  get status(): Tracer.SpanStatus {
    return this.endTime === undefined
      ? { _tag: "Started", startTime: this.startTime }
      : { _tag: "Ended", startTime: this.startTime, endTime: this.endTime, exit: this.exit! }
  }

  get traceId(): string {
    return this.traceIdText ??= this.parentSpan !== undefined && !(this.parentSpan instanceof Span)
      ? this.parentSpan.traceId
      : toHex(this.traceIdBytes)
  }

  get spanId(): string {
    return this.spanIdText ??= wordHex(this.idLow) + wordHex(this.idHigh)
  }

  /** The attributes as the interface reads them: a copy, made when asked for. */
  get attributes(): ReadonlyMap<string, unknown> {
    const map = new Map<string, unknown>()
    const list = this.attributeList
    for (let i = 0; i < list.length; i += 2) map.set(list[i] as string, list[i + 1])
    return map
  }

  get links(): ReadonlyArray<Tracer.SpanLink> {
    return this.linkList ?? noLinks
  }

  end(endTime: bigint, exit: Exit.Exit<unknown, unknown>): void {
    if (this.endTime !== undefined) return
    this.endTime = endTime
    this.exit = exit
    if (this.sampled) this.done(this)
  }

  // A key set again keeps its place and takes the new value, as a Map's does.
  attribute(key: string, value: unknown): void {
    if (this.endTime !== undefined) return
    const list = this.attributeList
    for (let i = 0; i < list.length; i += 2) {
      if (list[i] === key) {
        list[i + 1] = value
        return
      }
    }
    list.push(key, value)
  }

  event(name: string, startTime: bigint, attributes?: Record<string, unknown>): void {
    if (this.endTime !== undefined) return
    ;(this.eventList ??= []).push([name, startTime, attributes])
  }

  addLinks(links: ReadonlyArray<Tracer.SpanLink>): void {
    if (this.endTime !== undefined) return
    ;(this.linkList ??= []).push(...links)
  }
}

/** How Audit.otel opens a span: with graded's tracer, a Span of its scope, with no options object in between. */
export type OpenSpan = (
  name: string,
  parent: Tracer.AnySpan | undefined,
  startTime: bigint,
  kind: Tracer.SpanKind
) => Tracer.Span

// Audit.otel's way to a span under graded's scope, by the tracer it was built with.
const auditMakers = new WeakMap<Tracer.Tracer, OpenSpan>()

/** The span Audit.otel makes: under graded's scope with this module's tracer, else the tracer's own. */
export const auditSpan = (tracer: Tracer.Tracer): OpenSpan =>
  auditMakers.get(tracer) ?? ((name, parent, startTime, kind) =>
    tracer.span({
      name,
      parent: parent === undefined ? Option.none() : Option.some(parent),
      annotations: Context.empty(),
      links: [],
      startTime,
      kind,
      root: parent === undefined,
      sampled: true
    }))

// The flusher OtlpExporter registers with, made here for each build (as
// graded's layers are, freshLayer.ts) rather than Effect's shared layer.
const makeFlusher = (): OtlpExporter.Flusher["Service"] => {
  const exporters = new Set<Effect.Effect<void>>()
  return {
    flush: Effect.suspend(() =>
      Effect.forEach(exporters, (flush) => flush, { concurrency: "unbounded", discard: true })
    ),
    register: (flush) =>
      Effect.flatMap(Effect.scope, (scope) => {
        exporters.add(flush)
        return Scope.addFinalizer(scope, Effect.sync(() => exporters.delete(flush)))
      })
  }
}

export const layer = (options: OtlpTracerOptions): Layer.Layer<OtlpExporter.Flusher, never, HttpClient.HttpClient> =>
  freshLayer(() =>
    Effect.gen(function*() {
      const flusher = makeFlusher()
      // This tracer's spans, and no other's: its batches free what it wrote.
      const writer = new ChunkWriter()
      // Spans pushed to the exporter and not yet written into a batch.
      let waiting = 0
      // No service name given or in OTEL_SERVICE_NAME / OTEL_RESOURCE_ATTRIBUTES:
      // OpenTelemetry's default, rather than a layer that cannot be built.
      const resource = encodeResource(
        yield* OtlpResource.fromConfig(options.resource).pipe(
          Effect.catchDefect(() => OtlpResource.fromConfig({ ...options.resource, serviceName: "unknown_service" }))
        )
      )
      const exporter = yield* OtlpExporter.make({
        label: "graded",
        url: options.url,
        headers: options.headers,
        compression: options.compression,
        exportInterval: options.exportInterval ?? Duration.seconds(5),
        maxBatchSize: options.maxBatchSize ?? 1000,
        body: (spans: Array<Uint8Array>) => {
          const batch = encodeBatch(resource, spans)
          // Once every span pushed is in a batch (copied there), the chunk is
          // written over. Spans the exporter drops (while it is disabled) never
          // come back: the count stays above 0, and chunks are made anew.
          waiting -= spans.length
          if (waiting === 0) writer.reuse()
          return [HttpBody.uint8Array(batch, "application/x-protobuf"), Effect.void]
        },
        shutdownTimeout: options.shutdownTimeout ?? Duration.seconds(3)
      }).pipe(Effect.provideService(OtlpExporter.Flusher, flusher))
      const push = (span: Span) => {
        const bytes = encodeSpan(writer, span)
        if (bytes === undefined) return
        waiting++
        exporter.push(bytes)
      }
      const tracer = Tracer.make({ span: (span) => Span.of(span, push) })
      auditMakers.set(tracer, (name, parent, startTime, kind) => Span.audit(name, parent, startTime, kind, push))
      return Context.make(OtlpExporter.Flusher, flusher).pipe(Context.add(Tracer.Tracer, tracer))
    })
  )
