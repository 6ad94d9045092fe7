// HTTP/1.1 by hand on a loopback socket, for requests that fetch will not
// send: bytes outside ASCII in a header, a Host of our choosing, a body whose
// length is declared but never sent, a chunked body with no Content-Length.
// Each request asks the server to close the connection; the answer is what
// arrived before the socket ended (or before `waitMs`, if it never did).
import * as net from "node:net"

export interface Request {
  readonly method: string
  readonly path: string
  /** Sent as given; a Buffer value is sent byte for byte. */
  readonly headers: Readonly<Record<string, string | Buffer>>
  /** A body sent with Content-Length (unless `headers` declares one), or chunks sent with chunked encoding. */
  readonly body?: string | Buffer | { readonly chunks: ReadonlyArray<Buffer> } | undefined
}

export interface Answer {
  /** Undefined when nothing came back in time. */
  readonly status: number | undefined
  readonly headers: Readonly<Record<string, string>>
  readonly body: any
}

const encode = (request: Request): Buffer => {
  const parts: Array<Buffer> = [Buffer.from(`${request.method} ${request.path} HTTP/1.1\r\n`, "latin1")]
  const header = (name: string, value: string | Buffer) =>
    parts.push(Buffer.from(`${name}: `, "latin1"), Buffer.from(value as string), Buffer.from("\r\n", "latin1"))
  for (const [name, value] of Object.entries(request.headers)) header(name, value)
  header("connection", "close")
  const declared = Object.keys(request.headers).some((name) => /^(content-length|transfer-encoding)$/i.test(name))
  const body = request.body
  if (body !== undefined && typeof body === "object" && "chunks" in body) {
    header("transfer-encoding", "chunked")
    parts.push(Buffer.from("\r\n"))
    for (const chunk of body.chunks) {
      parts.push(Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from("\r\n"))
    }
    parts.push(Buffer.from("0\r\n\r\n"))
    return Buffer.concat(parts)
  }
  const bytes = body === undefined ? undefined : Buffer.from(body)
  if (bytes !== undefined && !declared) header("content-length", String(bytes.length))
  parts.push(Buffer.from("\r\n"))
  if (bytes !== undefined) parts.push(bytes)
  return Buffer.concat(parts)
}

const dechunk = (text: string): string => {
  let out = ""
  let rest = text
  for (;;) {
    const line = rest.indexOf("\r\n")
    if (line < 0) return out
    const size = parseInt(rest.slice(0, line), 16)
    if (!(size > 0)) return out
    out += rest.slice(line + 2, line + 2 + size)
    rest = rest.slice(line + 2 + size + 2)
  }
}

const parse = (raw: Buffer): Answer => {
  const text = raw.toString("utf8")
  const end = text.indexOf("\r\n\r\n")
  if (end < 0) return { status: undefined, headers: {}, body: undefined }
  const [first = "", ...lines] = text.slice(0, end).split("\r\n")
  const headers = Object.fromEntries(lines.map((line) => {
    const colon = line.indexOf(":")
    return [line.slice(0, colon).toLowerCase(), line.slice(colon + 1).trim()]
  }))
  const content = headers["transfer-encoding"] === "chunked" ? dechunk(text.slice(end + 4)) : text.slice(end + 4)
  let body: unknown = content
  try {
    body = JSON.parse(content)
  } catch {
    // Not JSON (the page, or nothing): kept as text.
  }
  return { status: Number(first.split(" ")[1]), headers, body }
}

/** Sends one request to `origin` (`http://host:port`) and reads the answer. */
export const send = (origin: string, request: Request, waitMs = 5_000): Promise<Answer> =>
  new Promise((resolve) => {
    const { hostname, port } = new URL(origin)
    const received: Array<Buffer> = []
    const socket = net.connect(Number(port), hostname.replace(/^\[|\]$/g, ""))
    const done = () => {
      clearTimeout(timer)
      socket.destroy()
      resolve(parse(Buffer.concat(received)))
    }
    const timer = setTimeout(done, waitMs)
    socket.on("connect", () => socket.write(encode(request)))
    socket.on("data", (chunk) => received.push(chunk))
    socket.on("end", done)
    // A server that stops reading a body it refused may reset the socket; what arrived before counts.
    socket.on("error", done)
  })
