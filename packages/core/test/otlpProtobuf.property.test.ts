// The bytes Audit.otlpTracer sends: its ChunkWriter writes what Effect's
// ProtobufWriter writes, for random messages (strings of any code point and
// up to 200 KiB, numbers at the edges, nested messages past one-byte
// lengths), many after one another so that messages cross into new chunks;
// a message handed out stays as written whatever is written after it; the
// cache of repeated strings gives each span its own name, past its bound; a
// batch is laid out as ProtobufWriter's nested messages lay it out; a span's
// attributes read and are written as a Map's entries.
import { describe, expect, it } from "@effect/vitest"
import { Exit, Version } from "effect"
import { ProtobufReader, ProtobufWriter } from "effect/protobuf"
import { propertyRuns } from "../../../test/propertyRuns.js"
import { ChunkWriter } from "../src/internal/chunkWriter.js"
import { Span } from "../src/internal/otlp.js"
import { encodeBatch, encodeSpan } from "../src/internal/otlpProtobuf.js"

// The writer the spans below are written with, as a tracer has its own.
const spans = new ChunkWriter()

// A small seeded generator (mulberry32): a failing seed is printed and replays.
const random = (seed: number) => () => {
  seed = (seed + 0x6D2B79F5) | 0
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}

type Op =
  | { readonly kind: "string"; readonly value: string }
  | { readonly kind: "int64"; readonly value: number | bigint }
  | { readonly kind: "uint32" | "fixed32" | "int32"; readonly value: number }
  | { readonly kind: "fixed64"; readonly value: bigint }
  | { readonly kind: "double"; readonly value: number }
  | { readonly kind: "bool"; readonly value: boolean }
  | { readonly kind: "bytes"; readonly value: Uint8Array }
  | { readonly kind: "message"; readonly ops: ReadonlyArray<Op> }

const codePoint = (next: () => number): number => {
  const band = next()
  if (band < 0.6) return Math.floor(next() * 0x80)
  if (band < 0.8) return 0x80 + Math.floor(next() * 0x780)
  if (band < 0.95) {
    const at = 0x800 + Math.floor(next() * (0xffff - 0x800 - 0x800))
    return at >= 0xd800 ? at + 0x800 : at
  }
  return 0x10000 + Math.floor(next() * 0xfffff)
}
const text = (next: () => number, length: number) =>
  String.fromCodePoint(...Array.from({ length }, () => codePoint(next)))
// A long string: a random block of 2,048 code points, repeated.
const longText = (next: () => number, length: number) => {
  const block = text(next, 2048)
  return block.repeat(Math.ceil(length / block.length)).slice(0, length)
}

const op = (next: () => number, depth: number): Op => {
  const pick = next()
  if (pick < 0.25) {
    const long = next() < 0.05
    return {
      kind: "string",
      value: long ? longText(next, Math.floor(next() * 200_000)) : text(next, Math.floor(next() * 300))
    }
  }
  if (pick < 0.35) {
    const edges = [0, 1, 127, 128, 2 ** 31, 2 ** 53 - 1, -1, -(2 ** 31), 2n ** 63n - 1n, -(2n ** 63n)]
    return {
      kind: "int64",
      value: next() < 0.5 ? edges[Math.floor(next() * edges.length)]! : Math.floor(next() * 2 ** 40)
    }
  }
  if (pick < 0.45) return { kind: "uint32", value: Math.floor(next() * 2 ** 32) }
  if (pick < 0.5) return { kind: "int32", value: Math.floor(next() * 2 ** 32) - 2 ** 31 }
  if (pick < 0.55) return { kind: "fixed32", value: Math.floor(next() * 2 ** 32) }
  if (pick < 0.62) return { kind: "fixed64", value: BigInt(Math.floor(next() * 2 ** 53)) * 1000n }
  if (pick < 0.68) return { kind: "double", value: (next() - 0.5) * 10 ** Math.floor(next() * 20) }
  if (pick < 0.72) return { kind: "bool", value: next() < 0.5 }
  if (pick < 0.8) {
    return { kind: "bytes", value: Uint8Array.from({ length: Math.floor(next() * 400) }, () => next() * 256) }
  }
  if (depth > 4) return { kind: "bool", value: true }
  return { kind: "message", ops: Array.from({ length: Math.floor(next() * 12) }, () => op(next, depth + 1)) }
}

interface Writes {
  tag(field: number, wire: ProtobufWriter.WireType): unknown
  string(value: string): unknown
  int64(value: number | bigint): unknown
  uint32(value: number): unknown
  int32(value: number): unknown
  fixed32(value: number): unknown
  fixed64(value: bigint): unknown
  double(value: number): unknown
  bool(value: boolean): unknown
  bytes(value: Uint8Array): unknown
  fork(): unknown
  join(): unknown
}
const write = (w: Writes, ops: ReadonlyArray<Op>): void => {
  ops.forEach((one, index) => {
    const field = index + 1
    switch (one.kind) {
      case "string":
      case "bytes":
        w.tag(field, ProtobufWriter.WireType.Len)
        return one.kind === "string" ? w.string(one.value) : w.bytes(one.value)
      case "message":
        w.tag(field, ProtobufWriter.WireType.Len)
        w.fork()
        write(w, one.ops)
        w.join()
        return
      case "fixed32":
        w.tag(field, ProtobufWriter.WireType.I32)
        return w.fixed32(one.value)
      case "fixed64":
      case "double":
        w.tag(field, ProtobufWriter.WireType.I64)
        return one.kind === "double" ? w.double(one.value) : w.fixed64(one.value)
      default:
        w.tag(field, ProtobufWriter.WireType.Varint)
        return (w[one.kind] as (value: unknown) => unknown)(one.value)
    }
  })
}

describe("otlpTracer's protobuf", () => {
  it("ChunkWriter writes Effect's ProtobufWriter's bytes, message after message, and a message handed out keeps them", () => {
    const runs = propertyRuns(25)
    for (let run = 0; run < runs; run++) {
      const seed = 1 + run * 7919
      const next = random(seed)
      const chunked = new ChunkWriter()
      const written: Array<readonly [Uint8Array, Uint8Array]> = []
      for (let message = 0; message < 30; message++) {
        const ops = Array.from({ length: 1 + Math.floor(next() * 20) }, () => op(next, 0))
        const reference = ProtobufWriter.make()
        write(reference, ops)
        chunked.begin()
        write(chunked as unknown as Writes, ops)
        written.push([chunked.end(), reference.finish()])
      }
      for (const [ours, theirs] of written) {
        if (Buffer.compare(ours, theirs) !== 0) expect.fail(`seed ${seed}: the bytes differ from ProtobufWriter's`)
      }
    }
  })

  it("a span's name survives the string cache starting over: 10,000 names, each read back as its own", () => {
    const root = Span.audit("invoke_agent graded", undefined, 1n, "internal", () => {})
    const names: Array<string> = []
    for (let i = 0; i < 10_000; i++) {
      const span = Span.audit(`execute_tool made.up.${i}`, root, 2n, "internal", (ended) => {
        const bytes = encodeSpan(spans, ended)!
        // Past the audit mark, the Span message: name is field 5.
        const reader = ProtobufReader.make(bytes.subarray(1))
        while (!reader.isDone()) {
          const tag = reader.tag()
          if (ProtobufReader.fieldNumber(tag) === 5) names.push(reader.string())
          else reader.skip(tag)
        }
      })
      span.attribute("gen_ai.tool.name", `made.up.${i}`)
      span.attribute("graded.refused", i % 2 === 0)
      span.end(3n, Exit.void)
    }
    expect(names).toEqual(Array.from({ length: 10_000 }, (_, i) => `execute_tool made.up.${i}`))
  })

  it("a batch is the ExportTraceServiceRequest ProtobufWriter writes: each scope's spans, in order, at any length", () => {
    const LEN = ProtobufWriter.WireType.Len
    // The layout written with Effect's own writer, message in message.
    const reference = (resource: Uint8Array, spans: ReadonlyArray<Uint8Array>) => {
      const w = ProtobufWriter.make()
      w.tag(1, LEN).fork()
      w.tag(1, LEN).bytes(resource)
      for (
        const [mark, name, version] of [[1, "@graded/core", "1"], [0, "effect", Version.getCurrentVersion()]] as const
      ) {
        const own = spans.filter((span) => span[0] === mark && span.length > 1)
        if (own.length === 0) continue
        w.tag(2, LEN).fork()
        w.tag(1, LEN).fork().tag(1, LEN).string(name).tag(2, LEN).string(version).join()
        for (const span of own) w.tag(2, LEN).bytes(span.subarray(1))
        w.join()
      }
      w.join()
      return w.finish()
    }
    const runs = propertyRuns(200)
    for (let seed = 1; seed <= runs; seed++) {
      const next = random(seed)
      // Lengths across each varint width of a length (1, 2 and 3 bytes), spans of either scope, none, or an empty one.
      const size = () => [0, 1, 126, 127, 128, 16_383, 16_384, 70_000][Math.floor(next() * 8)]!
      const bytes = (n: number) => {
        const out = new Uint8Array(n)
        for (let i = 0, word = Math.floor(next() * 2 ** 32); i < n; i++) {
          out[i] = (word = (word * 1103515245 + 12345) >>> 0) >>> 24
        }
        return out
      }
      const spans = Array.from({ length: Math.floor(next() * 40) }, () => {
        const body = bytes(size())
        const span = new Uint8Array(body.length + 1)
        span[0] = next() < 0.5 ? 1 : 0
        span.set(body, 1)
        return span
      })
      const resource = bytes(size())
      if (Buffer.compare(encodeBatch(resource, spans), reference(resource, spans)) !== 0) {
        expect.fail(`seed ${seed}: the batch differs from ProtobufWriter's`)
      }
    }
  })

  it("a span's attributes are a Map's: a key set again keeps its place and takes the last value, read and written", () => {
    const runs = propertyRuns(300)
    for (let seed = 1; seed <= runs; seed++) {
      const next = random(seed)
      const keys = ["a", "b", "graded.grade", "gen_ai.tool.name", "n"]
      const expected = new Map<string, unknown>()
      let written: Array<[string, unknown]> = []
      const span = Span.audit("execute_tool t", undefined, 1n, "internal", (ended) => {
        const reader = ProtobufReader.make(encodeSpan(spans, ended)!.subarray(1))
        while (!reader.isDone()) {
          const tag = reader.tag()
          if (ProtobufReader.fieldNumber(tag) !== 9) {
            reader.skip(tag)
            continue
          }
          const pair = ProtobufReader.make(reader.bytesView())
          let key = ""
          let value: unknown
          while (!pair.isDone()) {
            const field = ProtobufReader.fieldNumber(pair.tag())
            if (field === 1) key = pair.string()
            else {
              const any = ProtobufReader.make(pair.bytesView())
              const kind = ProtobufReader.fieldNumber(any.tag())
              value = kind === 1 ? any.string() : kind === 2 ? any.bool() : Number(any.int64())
            }
          }
          written.push([key, value])
        }
      })
      for (let i = Math.floor(next() * 12); i > 0; i--) {
        const key = keys[Math.floor(next() * keys.length)]!
        const pick = next()
        const value = pick < 0.4 ? `v${Math.floor(next() * 3)}` : pick < 0.7 ? next() < 0.5 : Math.floor(next() * 1000)
        span.attribute(key, value)
        expected.set(key, value)
      }
      expect([...span.attributes]).toEqual([...expected])
      span.end(2n, Exit.void)
      // Set after the end: not kept, as Effect's spans do not.
      span.attribute("late", true)
      expect(written).toEqual([...expected])
      expect([...span.attributes]).toEqual([...expected])
      written = []
    }
  })
})
