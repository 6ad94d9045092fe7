// The bytes Audit.otlpTracer sends: its ChunkWriter writes what Effect's
// ProtobufWriter writes, for random messages (strings of any code point and
// up to 200 KiB, numbers at the edges, nested messages past one-byte
// lengths), many after one another so that messages cross into new chunks;
// a message handed out stays as written whatever is written after it; the
// cache of repeated strings gives each span its own name, past its bound.
import { describe, expect, it } from "@effect/vitest"
import { Context, Exit, Option } from "effect"
import { ProtobufReader, ProtobufWriter } from "effect/protobuf"
import { propertyRuns } from "../../../test/propertyRuns.js"
import { ChunkWriter } from "../src/internal/chunkWriter.js"
import { Span } from "../src/internal/otlp.js"
import { encodeSpan } from "../src/internal/otlpProtobuf.js"

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
    const root = new Span(
      {
        name: "invoke_agent graded",
        parent: Option.none(),
        annotations: Context.empty(),
        links: [],
        startTime: 1n,
        kind: "internal",
        root: true,
        sampled: true
      },
      true,
      () => {}
    )
    const names: Array<string> = []
    for (let i = 0; i < 10_000; i++) {
      const span = new Span(
        {
          name: `execute_tool made.up.${i}`,
          parent: Option.some(root),
          annotations: Context.empty(),
          links: [],
          startTime: 2n,
          kind: "internal",
          root: false,
          sampled: true
        },
        true,
        (ended) => {
          const bytes = encodeSpan(ended)!
          // Past the audit mark, the Span message: name is field 5.
          const reader = ProtobufReader.make(bytes.subarray(1))
          while (!reader.isDone()) {
            const tag = reader.tag()
            if (ProtobufReader.fieldNumber(tag) === 5) names.push(reader.string())
            else reader.skip(tag)
          }
        }
      )
      span.attribute("gen_ai.tool.name", `made.up.${i}`)
      span.attribute("graded.refused", i % 2 === 0)
      span.end(3n, Exit.void)
    }
    expect(names).toEqual(Array.from({ length: 10_000 }, (_, i) => `execute_tool made.up.${i}`))
  })
})
