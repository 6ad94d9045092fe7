// A protobuf writer for many small messages that wait together: each is
// written into the writer's chunk (1 MiB) and handed out as a view of it, so a
// span's bytes cost no buffer of their own; once every view has been copied
// out (`reuse`), the chunk is written over. A new buffer for each message, as
// Effect's ProtobufWriter.finish makes, cost more than writing the span did
// (measured in bench/runtime.ts's traced row). The methods are the subset of
// ProtobufWriter's that otlpProtobuf.ts writes spans with, alike in behaviour.
// Who may import this: otlpProtobuf.ts, otlp.ts (a writer per tracer).

const chunkSize = 1 << 20
// A message starts in a fresh chunk when less than this is left of the current one.
const room = 1 << 16

const encoder = new TextEncoder()

export class ChunkWriter {
  private buf = new Uint8Array(chunkSize)
  private view = new DataView(this.buf.buffer)
  private pos = 0
  private start = 0
  private readonly forks: Array<number> = []

  /** Starts a message, in the current chunk or, with too little room left, a new one. */
  begin(): void {
    // Setting a length is a call into the engine: only after an abandoned message.
    if (this.forks.length !== 0) this.forks.length = 0
    if (this.buf.length - this.pos < room) this.next(chunkSize, this.pos)
    this.start = this.pos
  }

  /** The message written since `begin`, a view of its chunk. */
  end(): Uint8Array {
    if (this.forks.length > 0) throw new Error("ChunkWriter.end with a fork that is not joined")
    const message = this.buf.subarray(this.start, this.pos)
    this.start = this.pos
    return message
  }

  /**
   * Every message handed out so far has been copied and let go of (a batch
   * was written from them): the next ones are written over them, from the
   * start of the chunk, so a tracer at work keeps one chunk rather than
   * making a new one every few thousand spans for the collector to sweep.
   */
  reuse(): void {
    if (this.start !== this.pos) return // a message is being written
    if (this.buf.length > chunkSize) this.next(chunkSize, this.pos) // one long message grew it: back to the usual size
    this.pos = 0
    this.start = 0
  }

  /** Drops the message being written (one that could not be written whole). */
  abandon(): void {
    this.forks.length = 0
    this.pos = this.start
  }

  tag(field: number, wire: number): this {
    return this.uint32((field << 3) | wire)
  }

  uint32(n: number): this {
    this.ensure(5)
    let value = n >>> 0
    while (value > 0x7F) {
      this.buf[this.pos++] = (value & 0x7F) | 0x80
      value >>>= 7
    }
    this.buf[this.pos++] = value
    return this
  }

  int32(n: number): this {
    return n >= 0 ? this.uint32(n) : this.int64(n)
  }

  int64(n: number | bigint | string): this {
    if (typeof n === "number" && n >= 0 && n <= Number.MAX_SAFE_INTEGER) {
      this.ensure(10)
      let value = n
      while (value > 0x7F) {
        this.buf[this.pos++] = (value % 128) | 0x80
        value = Math.floor(value / 128)
      }
      this.buf[this.pos++] = value
      return this
    }
    // Negative or past 2^53: its 64-bit two's complement, as int64 is written.
    let value = BigInt.asUintN(64, BigInt(n))
    this.ensure(10)
    while (value > 0x7Fn) {
      this.buf[this.pos++] = Number(value & 0x7Fn) | 0x80
      value >>= 7n
    }
    this.buf[this.pos++] = Number(value)
    return this
  }

  bool(value: boolean): this {
    this.ensure(1)
    this.buf[this.pos++] = value ? 1 : 0
    return this
  }

  fixed32(n: number): this {
    this.ensure(4)
    this.view.setUint32(this.pos, n >>> 0, true)
    this.pos += 4
    return this
  }

  fixed64(n: bigint): this {
    this.ensure(8)
    // setBigUint64 takes n modulo 2^64 itself, as BigInt.asUintN(64, n) would.
    this.view.setBigUint64(this.pos, n, true)
    this.pos += 8
    return this
  }

  double(n: number): this {
    this.ensure(8)
    this.view.setFloat64(this.pos, n, true)
    this.pos += 8
    return this
  }

  bytes(bytes: Uint8Array): this {
    this.uint32(bytes.length)
    this.ensure(bytes.length)
    this.buf.set(bytes, this.pos)
    this.pos += bytes.length
    return this
  }

  raw(bytes: Uint8Array): this {
    const n = bytes.length
    this.ensure(n)
    // A few bytes go faster one by one than through `set`.
    if (n <= 32) {
      const buf = this.buf
      let pos = this.pos
      for (let i = 0; i < n; i++) buf[pos++] = bytes[i]!
      this.pos = pos
      return this
    }
    this.buf.set(bytes, this.pos)
    this.pos += n
    return this
  }

  string(s: string): this {
    const n = s.length
    const place = this.reserve()
    this.ensure(n)
    const buf = this.buf
    let pos = this.pos
    let i = 0
    // ASCII byte by byte, the rest through the platform's encoder.
    for (; i < n; i++) {
      const c = s.charCodeAt(i)
      if (c >= 0x80) break
      buf[pos++] = c
    }
    this.pos = pos
    if (i < n) {
      const rest = s.slice(i)
      this.ensure(rest.length * 3)
      this.pos += encoder.encodeInto(rest, this.buf.subarray(this.pos)).written
    }
    this.fill(place)
    return this
  }

  fork(): this {
    this.forks.push(this.reserve())
    return this
  }

  join(): this {
    const place = this.forks.pop()
    if (place === undefined) throw new Error("ChunkWriter.join without a fork")
    this.fill(place)
    return this
  }

  // A one-byte length, widened by `fill` when the value is longer. Its
  // place is kept from the message's start: the message may move to a new chunk.
  private reserve(): number {
    this.ensure(1)
    return this.pos++ - this.start
  }

  private fill(place: number): void {
    const length = this.pos - (this.start + place) - 1
    if (length < 0x80) {
      this.buf[this.start + place] = length
      return
    }
    let size = 1
    for (let n = length; n > 0x7F; n >>>= 7) size++
    this.ensure(size - 1)
    const from = this.start + place
    this.buf.copyWithin(from + size, from + 1, this.pos)
    this.pos += size - 1
    let n = length
    let p = from
    while (n > 0x7F) {
      this.buf[p++] = (n & 0x7F) | 0x80
      n >>>= 7
    }
    this.buf[p] = n
  }

  private ensure(n: number): void {
    if (this.pos + n > this.buf.length) this.next(Math.max(chunkSize, 2 * (this.pos - this.start + n)), this.start)
  }

  // A new chunk, carrying over what was written from `from` on.
  private next(size: number, from: number): void {
    const buf = new Uint8Array(size)
    buf.set(this.buf.subarray(from, this.pos))
    this.pos -= from
    this.start -= from
    this.buf = buf
    this.view = new DataView(buf.buffer)
  }
}
