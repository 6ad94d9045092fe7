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
import { Context, Duration, Effect, type Layer, type Option, Scope, Tracer } from "effect"
import type * as Exit from "effect/Exit"
import { HttpBody, type HttpClient } from "effect/http"
import { OtlpExporter, OtlpResource } from "effect/observability"
import type { OtlpTracerOptions } from "../Audit.js"
import { freshLayer } from "./freshLayer.js"
import { encodeBatch, encodeResource, encodeSpan, fromHex } from "./otlpProtobuf.js"

type SpanOptions = Parameters<Tracer.Tracer["span"]>[0]

// Random ids from a pool the platform's generator refills 4 KiB at a time
// (about 340 span ids), read without making an object per id.
const pool = new Uint32Array(1024)
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

/**
 * A span of this tracer; `audit` says whether Audit.otel made it. It is
 * written to protobuf when it ends (otlpProtobuf.ts), so the batch holds
 * bytes, not spans, while it waits to be sent.
 */
export class Span implements Tracer.Span {
  readonly _tag = "Span"
  readonly name: string
  readonly parent: Option.Option<Tracer.AnySpan>
  readonly annotations: Context.Context<never>
  readonly links: Array<Tracer.SpanLink>
  readonly kind: Tracer.SpanKind
  readonly sampled: boolean
  status: Tracer.SpanStatus
  /** The trace id's 16 bytes, shared by the spans of a trace this tracer started. */
  readonly traceIdBytes: Uint8Array
  /** The span id's 8 bytes, as two words. */
  readonly idLow: number
  readonly idHigh: number
  private traceIdText: string | undefined
  private spanIdText: string | undefined
  private attributeMap: Map<string, unknown> | undefined
  eventList: Array<Event> | undefined

  constructor(options: SpanOptions, readonly audit: boolean, private readonly done: (span: Span) => void) {
    this.name = options.name
    this.parent = options.parent
    this.annotations = options.annotations
    this.links = options.links
    this.kind = options.kind
    this.sampled = options.sampled
    this.status = { _tag: "Started", startTime: options.startTime }
    const parent = options.parent._tag === "Some" ? options.parent.value : undefined
    this.traceIdBytes = parent === undefined
      ? randomTraceId()
      : parent instanceof Span
      ? parent.traceIdBytes
      : fromHex(parent.traceId, 16)
    this.idLow = randomWord()
    this.idHigh = randomWord()
  }

  get traceId(): string {
    return this.traceIdText ??= this.parent._tag === "Some" && !(this.parent.value instanceof Span)
      ? this.parent.value.traceId
      : toHex(this.traceIdBytes)
  }

  get spanId(): string {
    return this.spanIdText ??= wordHex(this.idLow) + wordHex(this.idHigh)
  }

  get attributes(): Map<string, unknown> {
    return this.attributeMap ??= new Map()
  }

  /** The attributes set, without making a map for a span that has none. */
  get attributesSet(): ReadonlyMap<string, unknown> | undefined {
    return this.attributeMap
  }

  end(endTime: bigint, exit: Exit.Exit<unknown, unknown>): void {
    if (this.status._tag === "Ended") return
    this.status = { _tag: "Ended", startTime: this.status.startTime, endTime, exit }
    if (this.sampled) this.done(this)
  }

  attribute(key: string, value: unknown): void {
    if (this.status._tag === "Ended") return
    this.attributes.set(key, value)
  }

  event(name: string, startTime: bigint, attributes?: Record<string, unknown>): void {
    if (this.status._tag === "Ended") return
    ;(this.eventList ??= []).push([name, startTime, attributes])
  }

  addLinks(links: ReadonlyArray<Tracer.SpanLink>): void {
    if (this.status._tag === "Ended") return
    this.links.push(...links)
  }
}

// Audit.otel's way to a span under graded's scope, by the tracer it was built with.
const auditMakers = new WeakMap<Tracer.Tracer, (options: SpanOptions) => Tracer.Span>()

/** The span Audit.otel makes: under graded's scope with this module's tracer, else the tracer's own. */
export const auditSpan = (tracer: Tracer.Tracer): (options: SpanOptions) => Tracer.Span =>
  auditMakers.get(tracer) ?? ((options) => tracer.span(options))

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
        body: (spans: Array<Uint8Array>) => [
          HttpBody.uint8Array(encodeBatch(resource, spans), "application/x-protobuf"),
          Effect.void
        ],
        shutdownTimeout: options.shutdownTimeout ?? Duration.seconds(3)
      }).pipe(Effect.provideService(OtlpExporter.Flusher, flusher))
      const push = (span: Span) => {
        const bytes = encodeSpan(span)
        if (bytes !== undefined) exporter.push(bytes)
      }
      const tracer = Tracer.make({ span: (span) => new Span(span, false, push) })
      auditMakers.set(tracer, (span) => new Span(span, true, push))
      return Context.make(OtlpExporter.Flusher, flusher).pipe(Context.add(Tracer.Tracer, tracer))
    })
  )
