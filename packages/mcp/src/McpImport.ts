/**
 * Import a foreign MCP server's tools as graded tools. The grade of each tool
 * is the importer's decision, never the server's: the server's annotations
 * (`readOnlyHint` and the others) are kept as claims, and a claim that
 * contradicts the importer's grade is reported, not believed. A tool the
 * importer did not grade is a `send`, the safest grade, and the toolkit's type
 * says so.
 *
 * Every call checks the arguments against the server's input schema and the
 * result against its output schema; a server that answers with an error,
 * returns what its schema does not allow, times out or disappears gives a
 * structured tool error, and the run goes on.
 *
 * @since 0.1.0
 */
import type { Client } from "@modelcontextprotocol/sdk/client/index.js"
import type { Effect } from "effect/Effect"
import type * as PubSub from "effect/PubSub"
import type * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import type { Grade, Tool, Toolkit } from "@graded/core"
import * as connect from "./internal/connect.js"
import type { ImportFailed } from "./internal/import.js"
import * as internal from "./internal/import.js"
import * as liveInternal from "./internal/live.js"

/**
 * The MCP server answered a call with `isError: true`. The model sees only the
 * tool's fixed failure message; `text` keeps the server's own words for logs.
 *
 * @since 0.1.0
 * @category errors
 */
export { ServerError } from "./internal/import.js"

/**
 * The MCP server returned a result its output schema does not allow, or no
 * structured content although it lists an output schema. The result is
 * discarded.
 *
 * @since 0.1.0
 * @category errors
 */
export { BadResult } from "./internal/import.js"

/**
 * The MCP server could not be reached for a call: its connection closed
 * (`closed`), the call outlived its timeout (`timeout`), or it broke the
 * protocol (`protocol`).
 *
 * @since 0.1.0
 * @category errors
 */
export { Unreachable } from "./internal/import.js"

/**
 * The server's tools could not be imported: listing them failed (or ran past
 * 100 pages or 10,000 tools, or repeated a cursor), a graded name is not
 * among them, a grade is not read/write/send, or a graded tool's name does
 * not make a valid graded name or its input or output schema cannot be
 * compiled (the reason names the tool and why).
 *
 * @since 0.1.0
 * @category errors
 */
export { ImportFailed } from "./internal/import.js"

/**
 * A tool of a live import (`McpImport.live`) changed on its server since it
 * was imported, and the call was not made: the server no longer lists it
 * (`removed`), its current input schema refuses the arguments (`input`), or
 * the server's latest listing could not be imported (`unlisted`).
 *
 * @since 0.2.0
 * @category errors
 */
export { Changed } from "./internal/import.js"

/**
 * A connection to an MCP server failed before the server answered
 * `initialize`: the command could not be started (`not-found`), the process
 * exited first (`exited`, with the end of its stderr), the HTTP server could
 * not be reached or answered with an HTTP error (`refused`), no answer came
 * within the timeout (`timeout`), or the answer was not MCP (`protocol`).
 * `target` is the command line, or the URL without its query.
 *
 * @since 0.2.0
 * @category errors
 */
export { ConnectFailed } from "./internal/connect.js"

/**
 * Every way a call of an imported tool can fail on the server's side.
 *
 * @since 0.1.0
 * @category errors
 */
export type CallError = internal.CallError

/**
 * The grades an importer declares: each tool name the server lists, to
 * `read`, `write` or `send`.
 *
 * @since 0.1.0
 * @category models
 */
export type Grades = { readonly [name: string]: Grade.Grade }

/**
 * The arguments of an imported tool: an object checked against the server's
 * input schema.
 *
 * @since 0.1.0
 * @category models
 */
export type Arguments = { readonly [key: string]: unknown }

/**
 * One imported tool, by its graded name and grade: a send's payload is its
 * validated arguments.
 *
 * @since 0.1.0
 * @category models
 */
export type Imported<Name extends string, G extends Grade.Grade> = G extends "read"
  ? Tool.Tool<Name, "read", Arguments, unknown, CallError, never>
  : G extends "write" ? Tool.Tool<Name, "write", Arguments, unknown, CallError, never>
  : Tool.SendTool<Name, Arguments, Arguments, unknown, CallError, never>

/**
 * The tools of an imported toolkit: each graded name with its grade, and any
 * other tool of the namespace as a `send`.
 *
 * @since 0.1.0
 * @category models
 */
export type Tools<Namespace extends string, G extends Grades> = ReadonlyArray<
  | { readonly [K in keyof G & string]: Imported<`${Namespace}.${K}`, G[K]> }[keyof G & string]
  | Imported<`${Namespace}.${string}`, "send">
>

/**
 * What `toolkit` takes beside the client and the grades.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options<Namespace extends string> {
  /** The domain of every imported tool's graded name: `<namespace>.<server tool name>` (default `mcp`). */
  readonly namespace?: Namespace | undefined
  /** The longest a call, or the listing, may take, in milliseconds (the SDK's default otherwise). */
  readonly timeout?: number | undefined
}

/**
 * Lists the tools of a connected MCP server and makes each a graded tool under
 * the grade `grades` gives it (`send` when it gives none). A read calls the
 * server at once; a write calls it from `run`, after a human approved; a send's
 * `prepare` returns the validated arguments as the payload the human confirms,
 * and `deliver` calls the server with the confirmed payload. The idempotency key
 * of a write or send travels in the request's `_meta` as `graded/idempotencyKey`.
 *
 * @example
 * import { Effect } from "effect"
 * import { Client } from "@modelcontextprotocol/sdk/client/index.js"
 * import { McpImport } from "@graded/mcp"
 *
 * declare const client: Client
 *
 * const program = Effect.gen(function*() {
 *   const toolkit = yield* McpImport.toolkit(client, { search: "read", create_issue: "write" }, { namespace: "gh" })
 *   return McpImport.mismatches(toolkit)
 * })
 *
 * @since 0.1.0
 * @category constructors
 */
export const toolkit = <const G extends Grades, const Namespace extends string = "mcp">(
  client: Client,
  grades: G,
  options?: Options<Namespace>
): Effect<Toolkit.Toolkit<Tools<Namespace, G>>, ImportFailed> =>
  internal.toolkit(client, grades, options) as unknown as Effect<Toolkit.Toolkit<Tools<Namespace, G>>, ImportFailed>

/**
 * What the server said about one imported tool: its annotations, kept as
 * claims beside the grade the tool got and whether the importer gave it.
 *
 * @since 0.1.0
 * @category models
 */
export interface Claim extends internal.Claim {}

/**
 * A claim that contradicts the importer's grade: the server says the tool
 * only reads, the importer graded it write or send. Reported, never believed.
 *
 * @since 0.1.0
 * @category models
 */
export interface Mismatch extends internal.Mismatch {}

/**
 * The server's claims about each tool of an imported toolkit, in listing
 * order; empty for a toolkit `toolkit` did not make.
 *
 * @since 0.1.0
 * @category getters
 */
export const claims = (toolkit: Toolkit.Any): ReadonlyArray<Claim> => internal.reports.get(toolkit)?.claims ?? []

/**
 * The tools of an imported toolkit whose server claims `readOnlyHint` though
 * the importer graded them write or send.
 *
 * @since 0.1.0
 * @category getters
 */
export const mismatches = (toolkit: Toolkit.Any): ReadonlyArray<Mismatch> =>
  internal.reports.get(toolkit)?.mismatches ?? []

/**
 * A server tool `toolkit` left out: nobody graded it, and its name does not
 * make a valid graded name (`reason` says why).
 *
 * @since 0.1.0
 * @category models
 */
export interface Skipped extends internal.Skipped {}

/**
 * The server tools an imported toolkit left out, with why. A tool the importer
 * graded is never skipped: a name that cannot be imported fails the import.
 *
 * @since 0.1.0
 * @category getters
 */
export const skipped = (toolkit: Toolkit.Any): ReadonlyArray<Skipped> => internal.reports.get(toolkit)?.skipped ?? []

/**
 * The Effect Schema `toolkit` builds from a JSON Schema: the common subset
 * (object, properties, required, string, number, integer, boolean, null,
 * array, enum; `additionalProperties: false` makes an object strict) converted,
 * anything else kept as `Schema.Any` with its JSON Schema, and the whole
 * value checked by the SDK's AJV validator on every decode.
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromJsonSchema: (schema: unknown) => Schema.Codec<any, any> = internal.fromJsonSchema

/**
 * What `McpImport.stdio` spawns: the command, its arguments, environment and
 * working directory, how long `initialize` may take (default 30 seconds), and
 * what becomes of the server's stderr (`capture`, the default, keeps its end
 * for the error when the process exits before it answered; `inherit` passes it
 * through). The environment is the SDK's: a few safe variables of this process
 * (`PATH`, `HOME`, `USER`…) and `env` on top; nothing else of this process's
 * environment, its secrets included, reaches the server.
 *
 * @since 0.2.0
 * @category models
 */
export interface StdioOptions extends connect.StdioOptions {}

/**
 * What `McpImport.http` takes beside the URL: headers sent with every request
 * (an `Authorization` header, for one), and how long `initialize` may take
 * (default 30 seconds).
 *
 * @since 0.2.0
 * @category models
 */
export interface HttpOptions extends connect.HttpOptions {}

/**
 * Spawns an MCP server's command and connects an SDK `Client` to it over
 * stdio. When the scope closes the client is closed and the process ends
 * (stdin closed, then SIGTERM, then SIGKILL, as the SDK does). A command that
 * cannot be started, a process that exits before it answers `initialize`, or
 * no answer within the timeout fails with `ConnectFailed`.
 *
 * @example
 * import { Effect } from "effect"
 * import { McpImport } from "@graded/mcp"
 *
 * const program = Effect.scoped(Effect.gen(function*() {
 *   const client = yield* McpImport.stdio({ command: "npx", args: ["-y", "@modelcontextprotocol/server-everything"] })
 *   return yield* McpImport.toolkit(client, { echo: "read" }, { namespace: "everything" })
 * }))
 *
 * @since 0.2.0
 * @category constructors
 */
export const stdio: (options: StdioOptions) => Effect<Client, connect.ConnectFailed, Scope.Scope> = connect.stdio

/**
 * Connects an SDK `Client` to an MCP server over Streamable HTTP. The client
 * is closed when the scope closes. A server that cannot be reached, answers
 * with an HTTP error (a 401, a 404), does not answer `initialize` within the
 * timeout or does not speak MCP fails with `ConnectFailed`.
 *
 * @example
 * import { Effect } from "effect"
 * import { McpImport } from "@graded/mcp"
 *
 * const program = Effect.scoped(Effect.gen(function*() {
 *   const client = yield* McpImport.http("http://127.0.0.1:3000/mcp", { headers: { authorization: "Bearer t" } })
 *   return yield* McpImport.toolkit(client, { search: "read" }, { namespace: "kb" })
 * }))
 *
 * @since 0.2.0
 * @category constructors
 */
export const http: (
  url: string | URL,
  options?: HttpOptions
) => Effect<Client, connect.ConnectFailed, Scope.Scope> = connect.http

/**
 * What one refresh of a live import found, by graded name: tools the server
 * lists now and did not before (`added`: a send unless graded), tools it no
 * longer lists (`removed`), and tools whose title, description, schemas or
 * annotations differ (`changed`). `failed` says why the listing could not be
 * imported; until one can, no call of the live import is made.
 *
 * @since 0.2.0
 * @category models
 */
export interface Refresh extends liveInternal.Refresh {}

/**
 * An imported toolkit kept current: `toolkit` is the latest import, `refresh`
 * lists the server's tools again now, and `changes` subscribes to every
 * refresh from then on (from a notification or from `refresh`).
 *
 * @since 0.2.0
 * @category models
 */
export interface Live<Tools extends ReadonlyArray<Tool.Any>> {
  /** The toolkit made from the server's latest listing. */
  readonly toolkit: Effect<Toolkit.Toolkit<Tools>>
  /** Lists the server's tools and imports them again now, as a list-changed notification does. */
  readonly refresh: Effect<Refresh, ImportFailed>
  /** Every refresh from now until the scope closes, as it happens (`PubSub.take` one). */
  readonly changes: Effect<PubSub.Subscription<Refresh>, never, Scope.Scope>
}

/**
 * Imports a server's tools as `toolkit` does, and imports them again each time
 * the server sends `notifications/tools/list_changed`, under the same grades,
 * until the scope closes. A tool that appears later is a `send` until graded;
 * a graded tool keeps its name, grade and type. Every tool, from the latest
 * toolkit or an earlier one, calls the server through its latest listing: a
 * tool the server no longer lists, or arguments its current input schema
 * refuses, fail with `Changed` and nothing is sent. The client's handler for
 * tool list-changed notifications is this import's while the scope is open.
 *
 * @example
 * import { Effect, PubSub } from "effect"
 * import { McpImport } from "@graded/mcp"
 *
 * const program = Effect.scoped(Effect.gen(function*() {
 *   const client = yield* McpImport.http("http://127.0.0.1:3000/mcp")
 *   const github = yield* McpImport.live(client, { search: "read", create_issue: "write" }, { namespace: "gh" })
 *   const changes = yield* github.changes
 *   const { added, removed } = yield* PubSub.take(changes)
 *   return { added, removed, toolkit: yield* github.toolkit }
 * }))
 *
 * @since 0.2.0
 * @category constructors
 */
export const live = <const G extends Grades, const Namespace extends string = "mcp">(
  client: Client,
  grades: G,
  options?: Options<Namespace>
): Effect<Live<Tools<Namespace, G>>, ImportFailed, Scope.Scope> =>
  // One import for any grades; the signature restores what `grades` makes of the tools.
  liveInternal.live(client, grades, options) as unknown as Effect<Live<Tools<Namespace, G>>, ImportFailed, Scope.Scope>
