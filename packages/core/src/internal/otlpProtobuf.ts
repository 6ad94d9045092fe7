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
import type { Span } from "./otlp.js"

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
// A key's pairs, and the one it was written with last: a key takes the same
// value span after span ("execute_tool", a tool's grade), found with no second lookup.
interface Pairs {
  last: unknown
  lastBytes: Uint8Array
  readonly byValue: Map<unknown, Uint8Array>
}
const pairs = new Map<string, Pairs>()
/** Empties the cache when it is full; says whether it did. */
const startOver = (): boolean => {
  if (cached < cacheLimit) return false
  strings.clear()
  pairs.clear()
  cached = 0
  return true
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
    let known = pairs.get(key)
    if (known !== undefined && known.last === value) {
      w.raw(known.lastBytes)
      return
    }
    let bytes = known?.byValue.get(value)
    if (bytes === undefined) {
      if (startOver()) known = undefined
      bytes = keep((c) => {
        c.fork()
        c.tag(1, LEN).string(key)
        c.tag(2, LEN).fork()
        writeValue(c, value)
        c.join().join()
      })
      if (known === undefined) pairs.set(key, known = { last: value, lastBytes: bytes, byValue: new Map() })
      known.byValue.set(value, bytes)
    }
    known!.last = value
    known!.lastBytes = bytes
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

/**
 * An ended span as a batch holds it, written with the tracer's own writer: a
 * first byte, 1 for the audit's span and 0 for any other, then the Span
 * message: trace_id 1, span_id 2, parent_span_id 4, name 5, kind 6, start 7
 * and end 8 (fixed64), attributes 9, events 11, links 13 (Link: trace_id 1,
 * span_id 2, attributes 4), status 15 (Status: message 2, code 3).
 */
export const encodeSpan = (w: ChunkWriter, span: Span): Uint8Array | undefined => {
  try {
    w.begin()
    return writeSpan(w, span)
  } catch {
    // A value that cannot be written (a getter that throws, say) loses its span, never the fiber that ended it.
    w.abandon()
    return undefined
  }
}

// Status { code: 0 } (unset), the status of every span that did not fail.
const unsetStatus = new Uint8Array([(15 << 3) | LEN, 2, (3 << 3) | VARINT, 0])

const writeSpan = (w: Writer, span: Span): Uint8Array => {
  const { endTime, exit } = span
  if (endTime === undefined || exit === undefined) return new Uint8Array([span.audit ? 1 : 0])
  w.bool(span.audit)
  w.tag(1, LEN).bytes(span.traceIdBytes)
  writeOwnId(w, 2, span)
  if (span.parentSpan !== undefined) writeId(w, 4, span.parentSpan)
  w.tag(5, LEN)
  writeString(w, span.name)
  w.tag(6, VARINT).int32(kinds[span.kind] ?? 0)
  w.tag(7, I64).fixed64(span.startTime)
  w.tag(8, I64).fixed64(endTime)
  const attributes = span.attributeList
  for (let i = 0; i < attributes.length; i += 2) writeAttribute(w, 9, attributes[i] as string, attributes[i + 1])
  const failure = failureOf(exit)
  if (failure?.interrupted === true) writeAttribute(w, 9, "effect.fiber.interrupted", true)
  if (span.eventList !== undefined) {
    for (const [name, at, fields] of span.eventList) writeEvent(w, name, at, fields)
  }
  if (failure !== undefined) {
    for (const error of failure.errors) {
      writeEvent(w, "exception", endTime, {
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
  const message = failure?.errors[0]?.message
  if (message === undefined) return w.raw(unsetStatus).end()
  w.tag(15, LEN).fork()
  w.tag(2, LEN).string(message)
  w.tag(3, VARINT).int32(2)
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

// InstrumentationScope (name 1, version 2) as ScopeSpans' scope 1, written once.
const scopeField = (name: string, version: string): Uint8Array => {
  const w = ProtobufWriter.make()
  w.tag(1, LEN).fork()
  w.tag(1, LEN).string(name)
  w.tag(2, LEN).string(version)
  w.join()
  return w.finish()
}

const varintSize = (n: number): number => n < 0x80 ? 1 : n < 0x4000 ? 2 : n < 0x200000 ? 3 : n < 0x10000000 ? 4 : 5

// The length of a length-delimited field of `size` bytes with a one-byte tag.
const fieldSize = (size: number): number => 1 + varintSize(size) + size

// The bytes the spans of one mark take as ScopeSpans' spans 2.
const spansSize = (spans: ReadonlyArray<Uint8Array>, mark: number): number => {
  let size = 0
  for (const span of spans) if (span[0] === mark && span.length > 1) size += fieldSize(span.length - 1)
  return size
}

/**
 * ExportTraceServiceRequest: resource_spans 1 (ResourceSpans: resource 1,
 * scope_spans 2; ScopeSpans: scope 1, spans 2), from encodeSpan's bytes: the
 * sizes first, then one buffer, each span copied into it once. (Through
 * ProtobufWriter's forks each span was copied at every level of nesting.)
 */
export const encodeBatch = (resource: Uint8Array, spans: ReadonlyArray<Uint8Array>): Uint8Array => {
  const scopes = [
    { scope: auditScope, size: spansSize(spans, 1), mark: 1 },
    { scope: effectScope, size: spansSize(spans, 0), mark: 0 }
  ].filter((scope) => scope.size > 0)
  let resourceSpans = fieldSize(resource.length)
  for (const { scope, size } of scopes) resourceSpans += fieldSize(scope.length + size)
  const out = new Uint8Array(fieldSize(resourceSpans))
  let at = 0
  const varint = (n: number) => {
    while (n > 0x7F) {
      out[at++] = (n & 0x7F) | 0x80
      n >>>= 7
    }
    out[at++] = n
  }
  const field = (field: number, size: number) => {
    out[at++] = (field << 3) | LEN
    varint(size)
  }
  field(1, resourceSpans)
  field(1, resource.length)
  out.set(resource, at)
  at += resource.length
  for (const { mark, scope, size } of scopes) {
    field(2, scope.length + size)
    out.set(scope, at)
    at += scope.length
    for (const span of spans) {
      if (span[0] !== mark || span.length <= 1) continue
      field(2, span.length - 1)
      out.set(span.subarray(1), at)
      at += span.length - 1
    }
  }
  return out
}

// graded's audit spans are versioned by the span layout this file writes.
const auditScope = scopeField("@graded/core", "1")
const effectScope = scopeField("effect", Version.getCurrentVersion())
