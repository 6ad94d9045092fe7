// A batch of otlp.ts's spans as an OTLP ExportTraceServiceRequest in protobuf
// (opentelemetry-proto's trace/v1 and common/v1 messages), written with
// Effect's ProtobufWriter straight from the spans. Values follow Effect's
// OtlpResource.unknownToAttributeValue, so a span reads the same as under
// Effect's OtlpTracer; field numbers are in the comments.
// Who may import this: otlp.ts.
import { Formatter, Version } from "effect"
import type { OtlpResource } from "effect/observability"
import { ProtobufWriter } from "effect/protobuf"
import { Cause } from "effect"
import type * as Exit from "effect/Exit"
import { ChunkWriter } from "./chunkWriter.js"
import type { Event, Span } from "./otlp.js"

type Writer = ChunkWriter

const VARINT = ProtobufWriter.WireType.Varint
const I64 = ProtobufWriter.WireType.I64
const LEN = ProtobufWriter.WireType.Len

const int64Bound = 2 ** 63

// AnyValue: string_value 1, bool_value 2, int_value 3, double_value 4, array_value 5 (ArrayValue: values 1).
const writeValue = (w: Writer, value: unknown): void => {
  if (Array.isArray(value)) {
    w.tag(5, LEN).fork()
    for (const item of value) {
      w.tag(1, LEN).fork()
      writeValue(w, item)
      w.join()
    }
    w.join()
    return
  }
  switch (typeof value) {
    case "string":
      w.tag(1, LEN).string(value)
      return
    case "boolean":
      w.tag(2, VARINT).bool(value)
      return
    case "number":
      if (Number.isInteger(value) && value >= -int64Bound && value < int64Bound) w.tag(3, VARINT).int64(value)
      else w.tag(4, I64).double(value)
      return
    case "bigint":
      if (BigInt.asIntN(64, value) === value) w.tag(3, VARINT).int64(value)
      else w.tag(1, LEN).string(String(value))
      return
    default:
      w.tag(1, LEN).string(Formatter.format(value))
  }
}

// The audit's spans repeat their keys, names and most values ("execute_tool",
// a grade, a tool's name) from one span to the next: each is written once,
// kept as bytes, and copied after. Copying measured several times cheaper
// than writing a string again. Bounded: past `cacheLimit` entries (a model
// making up tool names, say) the cache starts over.
const cacheLimit = 4096
const cacheable = 256
let cached = 0
const cacheWriter = new ChunkWriter()
const keep = (write: (w: ChunkWriter) => void): Uint8Array => {
  cacheWriter.begin()
  write(cacheWriter)
  cached++
  return cacheWriter.end()
}
const strings = new Map<string, Uint8Array>()
const pairs = new Map<string, Map<unknown, Uint8Array>>()
const startOver = () => {
  if (cached < cacheLimit) return
  strings.clear()
  pairs.clear()
  cached = 0
}

/** A string field (its length, then UTF-8), from the cache when it is there. */
const writeString = (w: Writer, s: string): void => {
  if (s.length > cacheable) {
    w.string(s)
    return
  }
  let bytes = strings.get(s)
  if (bytes === undefined) {
    startOver()
    bytes = keep((c) => c.string(s))
    strings.set(s, bytes)
  }
  w.raw(bytes)
}

// KeyValue: key 1, value 2; under `field` of the message being written.
const writeKeyValue = (w: Writer, key: string, value: unknown): void => {
  w.tag(1, LEN)
  writeString(w, key)
  w.tag(2, LEN).fork()
  if (typeof value === "string") {
    w.tag(1, LEN)
    writeString(w, value)
  } else {
    writeValue(w, value)
  }
  w.join()
}
const writeAttribute = (w: Writer, field: number, key: string, value: unknown): void => {
  w.tag(field, LEN)
  // A key with a string or a boolean: the whole pair, length first, from the cache.
  if ((typeof value === "string" && value.length <= cacheable) || typeof value === "boolean") {
    let byValue = pairs.get(key)
    let bytes = byValue?.get(value)
    if (bytes === undefined) {
      startOver()
      bytes = keep((c) => {
        c.fork()
        c.tag(1, LEN).string(key)
        c.tag(2, LEN).fork()
        writeValue(c, value)
        c.join().join()
      })
      if (byValue === undefined || !pairs.has(key)) pairs.set(key, byValue = new Map())
      byValue.set(value, bytes)
    }
    w.raw(bytes)
    return
  }
  w.fork()
  writeKeyValue(w, key, value)
  w.join()
}

const writeAttributes = (w: Writer, field: number, attributes: Record<string, unknown> | undefined): void => {
  if (attributes !== undefined) { for (const key in attributes) writeAttribute(w, field, key, attributes[key]) }
}

// Event: time_unix_nano 1 (fixed64), name 2, attributes 3.
const writeEvent = (w: Writer, name: string, at: bigint, attributes: Record<string, unknown> | undefined): void => {
  w.tag(11, LEN).fork()
  w.tag(1, I64).fixed64(at)
  w.tag(2, LEN).string(name)
  writeAttributes(w, 3, attributes)
  w.join()
}

const kinds: Record<string, number> = { internal: 1, server: 2, client: 3, producer: 4, consumer: 5 }

// An id of this tracer's span: 8 bytes, its two words.
const writeOwnId = (w: Writer, field: number, span: Span): void => {
  w.tag(field, LEN).uint32(8).fixed32(span.idLow).fixed32(span.idHigh)
}
const writeId = (w: Writer, field: number, span: { readonly spanId: string }): void => {
  if (isOwn(span)) writeOwnId(w, field, span)
  else w.tag(field, LEN).bytes(fromHex(span.spanId, 8))
}

// The writer every span is written with, one span at a time.
const spanWriter = new ChunkWriter()

/**
 * An ended span as a batch holds it: a first byte, 1 for the audit's span and
 * 0 for any other, then the Span message: trace_id 1, span_id 2,
 * parent_span_id 4, name 5, kind 6, start 7 and end 8 (fixed64), attributes
 * 9, events 11, links 13 (Link: trace_id 1, span_id 2, attributes 4), status
 * 15 (Status: message 2, code 3).
 */
export const encodeSpan = (span: Span): Uint8Array | undefined => {
  try {
    spanWriter.begin()
    return writeSpan(spanWriter, span)
  } catch {
    // A value that cannot be written (a getter that throws, say) loses its span, never the fiber that ended it.
    spanWriter.abandon()
    return undefined
  }
}

const writeSpan = (w: Writer, span: Span): Uint8Array => {
  const status = span.status
  if (status._tag !== "Ended") return new Uint8Array([span.audit ? 1 : 0])
  w.bool(span.audit)
  w.tag(1, LEN).bytes(span.traceIdBytes)
  writeOwnId(w, 2, span)
  const parent = span.parent._tag === "Some" ? span.parent.value : undefined
  if (parent !== undefined) writeId(w, 4, parent)
  w.tag(5, LEN)
  writeString(w, span.name)
  w.tag(6, VARINT).int32(kinds[span.kind] ?? 0)
  w.tag(7, I64).fixed64(status.startTime)
  w.tag(8, I64).fixed64(status.endTime)
  const attributes = span.attributesSet
  if (attributes !== undefined) { for (const [key, value] of attributes) writeAttribute(w, 9, key, value) }
  const failure = failureOf(status.exit)
  if (failure?.interrupted === true) writeAttribute(w, 9, "effect.fiber.interrupted", true)
  if (span.eventList !== undefined) {
    for (const [name, at, fields] of span.eventList as Array<Event>) writeEvent(w, name, at, fields)
  }
  if (failure !== undefined) {
    for (const error of failure.errors) {
      writeEvent(w, "exception", status.endTime, {
        "exception.type": error.name,
        "exception.message": error.message,
        "exception.stacktrace": error.stack ?? "No stack trace available"
      })
    }
  }
  for (const link of span.links) {
    w.tag(13, LEN).fork()
    w.tag(1, LEN).bytes(isOwn(link.span) ? link.span.traceIdBytes : fromHex(link.span.traceId, 16))
    writeId(w, 2, link.span)
    writeAttributes(w, 4, link.attributes)
    w.join()
  }
  w.tag(15, LEN).fork()
  const message = failure?.errors[0]?.message
  if (message !== undefined) w.tag(2, LEN).string(message)
  w.tag(3, VARINT).int32(message !== undefined ? 2 : 0)
  w.join()
  return w.end()
}

const isOwn = (span: unknown): span is Span =>
  typeof span === "object" && span !== null && "idLow" in span && "traceIdBytes" in span

/**
 * An id from another tracer, as OTLP wants it: `size` bytes, the hex read
 * pair by pair (a pair that is not hex reads as 0), padded on the left.
 */
export const fromHex = (hex: string, size: number): Uint8Array => {
  const bytes = new Uint8Array(size)
  const digits = hex.length > size * 2 ? hex.slice(-size * 2) : hex
  const offset = size - Math.ceil(digits.length / 2)
  const start = digits.length % 2
  if (start === 1) bytes[offset] = parseInt(digits[0]!, 16) || 0
  for (let i = start, at = offset + start; i < digits.length; i += 2, at++) {
    bytes[at] = parseInt(digits.slice(i, i + 2), 16) || 0
  }
  return bytes
}

// How a failed span's exit reads: the status message and the exceptions, as Effect's OtlpTracer writes them.
const failureOf = (exit: Exit.Exit<unknown, unknown>) => {
  if (exit._tag === "Success") return undefined
  if (Cause.hasInterruptsOnly(exit.cause)) return { interrupted: true, errors: [] } as const
  return { interrupted: false, errors: Cause.prettyErrors(exit.cause, { includeCauseInStack: true }) } as const
}

// ScopeSpans: scope 1 (InstrumentationScope: name 1, version 2), spans 2.
const writeScope = (
  w: ProtobufWriter.ProtobufWriter,
  name: string,
  version: string,
  spans: ReadonlyArray<Uint8Array>,
  mark: number
): void => {
  if (!spans.some((span) => span[0] === mark && span.length > 1)) return
  w.tag(2, LEN).fork()
  w.tag(1, LEN).fork()
  w.tag(1, LEN).string(name)
  w.tag(2, LEN).string(version)
  w.join()
  for (const span of spans) if (span[0] === mark && span.length > 1) w.tag(2, LEN).bytes(span.subarray(1))
  w.join()
}

// The AnyValue of a resource's attribute, as OtlpResource made it.
const writeAnyValue = (w: ProtobufWriter.ProtobufWriter, value: OtlpResource.AnyValue): void => {
  if (value.stringValue != null) w.tag(1, LEN).string(value.stringValue)
  else if (value.boolValue != null) w.tag(2, VARINT).bool(value.boolValue)
  else if (value.intValue != null) w.tag(3, VARINT).int64(value.intValue)
  else if (value.doubleValue != null) w.tag(4, I64).double(value.doubleValue)
  else if (value.arrayValue !== undefined) {
    w.tag(5, LEN).fork()
    for (const item of value.arrayValue.values) {
      w.tag(1, LEN).fork()
      writeAnyValue(w, item)
      w.join()
    }
    w.join()
  }
}

/** A Resource message (attributes 1), written once for every batch. */
export const encodeResource = (resource: OtlpResource.Resource): Uint8Array => {
  const w = ProtobufWriter.make()
  for (const { key, value } of resource.attributes) {
    w.tag(1, LEN).fork()
    w.tag(1, LEN).string(key)
    w.tag(2, LEN).fork()
    writeAnyValue(w, value)
    w.join().join()
  }
  return w.finish()
}

/** ExportTraceServiceRequest: resource_spans 1 (ResourceSpans: resource 1, scope_spans 2), from encodeSpan's bytes. */
export const encodeBatch = (resource: Uint8Array, spans: ReadonlyArray<Uint8Array>): Uint8Array => {
  const w = ProtobufWriter.make()
  w.tag(1, LEN).fork()
  w.tag(1, LEN).bytes(resource)
  writeScope(w, "@graded/core", auditScopeVersion, spans, 1)
  writeScope(w, "effect", Version.getCurrentVersion(), spans, 0)
  w.join()
  return w.finish()
}

// graded's audit spans are versioned by the span layout this file writes.
const auditScopeVersion = "1"
