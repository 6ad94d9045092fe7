// McpImport's connections: an SDK `Client` connected to a foreign server, by
// spawning its command (stdio) or over Streamable HTTP, closed with its scope.
// Every way the connection can fail before the server answered `initialize`
// becomes one `ConnectFailed`, named by what failed; nothing throws.
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js"
import { StreamableHTTPClientTransport, StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js"
import { ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js"
import { Effect, Schema, type Scope } from "effect"

export class ConnectFailed extends Schema.TaggedError<ConnectFailed>()("@graded/mcp/McpImport/ConnectFailed", {
  target: Schema.String,
  reason: Schema.Literals(["not-found", "exited", "refused", "timeout", "protocol"]),
  detail: Schema.String
}) {
  override get message(): string {
    return `Could not connect to the MCP server ${this.target} (${this.reason}): ${this.detail}`
  }
}

export const defaultTimeout = 30_000

const clientInfo = { name: "graded", version: "0.2.0" }

// The last part of a spawned server's stderr, for the error when it exits before it answered.
const tailLength = 2_000

export interface StdioOptions {
  readonly command: string
  readonly args?: ReadonlyArray<string> | undefined
  readonly env?: { readonly [name: string]: string } | undefined
  readonly cwd?: string | undefined
  readonly timeout?: number | undefined
  readonly stderr?: "capture" | "inherit" | undefined
}

export interface HttpOptions {
  readonly headers?: { readonly [name: string]: string } | undefined
  readonly timeout?: number | undefined
}

type Kind = "stdio" | "http"

const codeOf = (error: unknown): string | undefined => {
  if (typeof error !== "object" || error === null) return undefined
  const code = (error as { code?: unknown }).code
  if (typeof code === "string") return code
  return codeOf((error as { cause?: unknown }).cause)
}

const messageOf = (error: unknown): string => error instanceof Error ? error.message : String(error)

const classify = (
  kind: Kind,
  target: string,
  timeout: number,
  error: unknown,
  stderr: () => string
): ConnectFailed => {
  const fail = (reason: ConnectFailed["reason"], detail: string) => new ConnectFailed({ target, reason, detail })
  if (error instanceof McpError) {
    if (error.code === ErrorCode.RequestTimeout) {
      return fail("timeout", `no answer to initialize within ${timeout} ms`)
    }
    if (error.code === ErrorCode.ConnectionClosed) {
      if (kind === "http") return fail("refused", "the connection closed before initialize")
      const tail = stderr().trim()
      return fail("exited", `the process exited before it answered initialize${tail === "" ? "" : `; stderr: ${tail}`}`)
    }
    return fail("protocol", error.message)
  }
  const code = codeOf(error)
  if (kind === "stdio" && (code === "ENOENT" || code === "EACCES")) {
    return fail("not-found", `${target.split(" ")[0]} could not be started (${code}): ${messageOf(error)}`)
  }
  if (error instanceof StreamableHTTPError) {
    return error.code !== undefined && error.code > 0
      ? fail("refused", `the server answered HTTP ${error.code}: ${error.message}`)
      : fail("protocol", error.message)
  }
  if (kind === "http" && (error instanceof TypeError || code !== undefined)) {
    return fail("refused", code === undefined ? messageOf(error) : `${code}: ${messageOf(error)}`)
  }
  if (error instanceof Error && error.name === "UnauthorizedError") {
    return fail("refused", `the server answered HTTP 401: ${error.message}`)
  }
  return fail("protocol", messageOf(error))
}

const connectWith = (
  kind: Kind,
  target: string,
  transport: Transport,
  timeout: number,
  stderr: () => string
): Effect.Effect<Client, ConnectFailed, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.tryPromise({
      try: async () => {
        const client = new Client(clientInfo, { capabilities: {} })
        // The SDK closes the transport (and so the process) itself when initialize fails.
        await client.connect(transport, { timeout })
        return client
      },
      catch: (error) => classify(kind, target, timeout, error, stderr)
    }).pipe(Effect.onInterrupt(() => Effect.promise(() => transport.close().catch(() => undefined)))),
    (client) => Effect.promise(() => client.close().catch(() => undefined))
  )

export const stdio = (options: StdioOptions): Effect.Effect<Client, ConnectFailed, Scope.Scope> =>
  Effect.suspend(() => {
    const target = [options.command, ...(options.args ?? [])].join(" ")
    const capture = options.stderr !== "inherit"
    const transport = new StdioClientTransport({
      command: options.command,
      args: [...(options.args ?? [])],
      ...(options.env !== undefined ? { env: { ...options.env } } : {}),
      ...(options.cwd !== undefined ? { cwd: options.cwd } : {}),
      stderr: capture ? "pipe" : "inherit"
    })
    let tail = ""
    // Read it always: a pipe nobody reads fills and stalls the server.
    transport.stderr?.on("data", (chunk: Buffer | string) => {
      tail = (tail + chunk.toString()).slice(-tailLength)
    })
    return connectWith("stdio", target, transport, options.timeout ?? defaultTimeout, () => tail)
  })

/** The URL without credentials or query, which may carry secrets: what an error may show. */
const shown = (url: URL): string => `${url.origin}${url.pathname}`

export const http = (
  url: string | URL,
  options: HttpOptions = {}
): Effect.Effect<Client, ConnectFailed, Scope.Scope> =>
  Effect.suspend(() => {
    let parsed: URL
    try {
      parsed = new URL(url)
    } catch {
      return Effect.fail(new ConnectFailed({ target: String(url), reason: "refused", detail: "not a valid URL" }))
    }
    if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
      return Effect.fail(
        new ConnectFailed({ target: shown(parsed), reason: "refused", detail: "the URL is not http: or https:" })
      )
    }
    const transport = new StreamableHTTPClientTransport(parsed, {
      ...(options.headers !== undefined ? { requestInit: { headers: { ...options.headers } } } : {})
    })
    return connectWith("http", shown(parsed), transport, options.timeout ?? defaultTimeout, () => "")
  })
