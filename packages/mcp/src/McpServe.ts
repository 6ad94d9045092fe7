/**
 * Serve a graded toolkit over the Model Context Protocol, with its grades
 * enforced, not merely hinted. Each tool is listed by its wire name with its
 * strict input schema, annotations derived from its grade and the grade itself
 * under `_meta["graded/grade"]`. Every call from a client is a model's choice:
 * the session is autonomous. A read runs; a write or send never runs on the
 * client's word. If the client can show a form (form-mode elicitation), the
 * server asks the human there, with the exact payload: approve, edit or
 * reject, and the answer is the `HumanConfirm` decision, audited as decided
 * by `mcp:<client>@<version>`. Otherwise the call records a proposal
 * (`Proposal.tool`) for a human to decide elsewhere, and the client is
 * answered with the proposal's id.
 *
 * @since 0.1.0
 */
import {
  Invocation,
  type Proposal,
  type ProposalStore,
  type Registry,
  type SendCapability,
  type Tool,
  type WriteCapability
} from "@graded/core"
import type { Server } from "@modelcontextprotocol/sdk/server/index.js"
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js"
import type { Context, Duration, Effect, Layer, Scope } from "effect"
import * as elicitInternal from "./internal/elicit.js"
import * as layers from "./internal/layer.js"
import * as internal from "./internal/serve.js"

/**
 * How a session is served: the name and version the server announces, the
 * invocation context of its caller (who, which role, page, features, tenant:
 * every gate and any policy in scope reads it; `autonomous` is always true),
 * and the options of the proposals its writes and sends record.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** The server name announced to clients (default `graded`). */
  readonly name?: string | undefined
  /** The server version announced to clients (default `0.1.0`). */
  readonly version?: string | undefined
  /**
   * Who the session is for. Unless it names a `traceId`, each session gets
   * its own, so `Proposal.ToolOptions.maxPendingPerTrace` caps the proposals
   * one client session may leave waiting.
   */
  readonly context?: Partial<Omit<Invocation.Context, "autonomous">> | undefined
  /** Options of the proposals a write or send call records (a cap, an expiry). */
  readonly proposals?: Proposal.ToolOptions | undefined
  /**
   * Asking the human through the client's form (on unless `false`): how long
   * a form waits for an answer (default 10 minutes; no answer is a
   * rejection). `false` never asks: every write and send is proposed, for a
   * server whose clients' forms do not reach the person who must decide.
   */
  readonly elicitation?: false | ElicitationOptions | undefined
}

/**
 * How a write or send asks through the client's form.
 *
 * @since 0.2.0
 * @category models
 */
export interface ElicitationOptions {
  readonly timeout?: Duration.Input | undefined
}

/**
 * The form's required field that holds the human's choice, `approve` or
 * `reject`. The payload's own fields (strings, choices, numbers, booleans at
 * its top level) follow it, prefilled with their values.
 *
 * @since 0.2.0
 * @category constants
 */
export const decisionField: "graded/decision" = elicitInternal.decisionField

/**
 * The form's optional field for the reason of a rejection.
 *
 * @since 0.2.0
 * @category constants
 */
export const reasonField: "graded/reason" = elicitInternal.reasonField

/**
 * What serving a registry needs: its tools' own services, and a
 * `ProposalStore` when any of them is a write or send (a client's call to one
 * records a proposal there). Never a `WriteCapability` or `SendCapability`:
 * nothing a client asks for writes or sends.
 *
 * @since 0.1.0
 * @category utility types
 */
export type Requirements<Tools extends ReadonlyArray<Tool.Any>> =
  // A tool's context type can carry its grade's capability (inferred from
  // `invoke`); no call a client makes reaches one, so none is required.
  | Exclude<Tool.Context<Tools[number]>, WriteCapability | SendCapability>
  | ([Exclude<Tool.Grade<Tools[number]>, "read">] extends [never] ? never : ProposalStore.ProposalStore)

/**
 * The `_meta` key under which each listed tool carries its grade.
 *
 * @since 0.1.0
 * @category constants
 */
export const gradeKey: "graded/grade" = internal.gradeKey

/**
 * The `_meta` key of a call's result that names the proposal a write or send
 * call recorded.
 *
 * @since 0.1.0
 * @category constants
 */
export const proposalKey: "graded/proposal" = internal.proposalKey

/**
 * The SDK server of one session over a registry, not yet connected: list and
 * call handlers installed. Connect it to any SDK transport yourself, or use
 * `McpServe.connect` / `McpServe.stdio`.
 *
 * @example
 * import { Effect } from "effect"
 * import { Registry, Toolkit } from "@graded/core"
 * import { McpServe } from "@graded/mcp"
 *
 * const server = McpServe.make(Registry.make(Toolkit.make()), { context: { role: "support" } })
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = <Tools extends ReadonlyArray<Tool.Any>>(
  registry: Registry.Registry<Tools>,
  options?: Options
): Effect.Effect<Server, never, Requirements<Tools>> =>
  // Written once for any registry; the signature states what it needs.
  internal.make(registry as unknown as Registry.Registry<ReadonlyArray<Tool.Any>>, options)

/**
 * Serves one session over an SDK transport (an `InMemoryTransport`, a
 * Streamable HTTP transport of your own) until the scope closes; then the
 * server is closed.
 *
 * @example
 * import { Effect } from "effect"
 * import { Registry, Toolkit } from "@graded/core"
 * import { McpServe } from "@graded/mcp"
 * import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js"
 *
 * const [, serverSide] = InMemoryTransport.createLinkedPair()
 * const serving = Effect.scoped(McpServe.connect(Registry.make(Toolkit.make()), serverSide))
 *
 * @since 0.1.0
 * @category constructors
 */
export const connect = <Tools extends ReadonlyArray<Tool.Any>>(
  registry: Registry.Registry<Tools>,
  transport: Transport,
  options?: Options
): Effect.Effect<Server, never, Requirements<Tools> | Scope.Scope> =>
  internal.connect(registry as unknown as Registry.Registry<ReadonlyArray<Tool.Any>>, transport, options)

/**
 * Options of `McpServe.stdio`: those of every session, and the streams to
 * use instead of this process's stdin and stdout.
 *
 * @since 0.1.0
 * @category models
 */
export interface StdioOptions extends Options {
  readonly stdin?: NodeJS.ReadableStream | undefined
  readonly stdout?: NodeJS.WritableStream | undefined
}

/**
 * Serves one session over this process's stdin and stdout (newline-delimited
 * JSON-RPC), as an MCP client that spawns a command expects. Completes when
 * stdin ends or the client closes the connection. Write nothing else to
 * stdout meanwhile: it is the protocol's channel.
 *
 * @example
 * import { Effect } from "effect"
 * import { Registry, Toolkit } from "@graded/core"
 * import { McpServe } from "@graded/mcp"
 *
 * const main = McpServe.stdio(Registry.make(Toolkit.make()), { name: "support-desk" })
 * // Effect.runPromise(main)
 *
 * @since 0.1.0
 * @category constructors
 */
export const stdio = <Tools extends ReadonlyArray<Tool.Any>>(
  registry: Registry.Registry<Tools>,
  options?: StdioOptions
): Effect.Effect<void, never, Requirements<Tools>> =>
  internal.stdio(registry as unknown as Registry.Registry<ReadonlyArray<Tool.Any>>, options)

/**
 * The HTTP server could not listen (the port is taken, the host is not this
 * machine's), or was not started because an option of `McpServe.http` is
 * invalid (`maxSessions` not a positive integer, `idleTimeout` not a positive
 * duration; the reason names the option and its value): where, and why.
 *
 * @since 0.1.0
 * @category errors
 */
export const ListenError: typeof internal.ListenError = internal.ListenError

/**
 * @since 0.1.0
 * @category errors
 */
export type ListenError = internal.ListenError

/**
 * Options of `McpServe.http`: those of every session, and where to listen
 * (default `127.0.0.1`, a free port, path `/mcp`).
 *
 * @since 0.1.0
 * @category models
 */
export interface HttpOptions extends Options {
  readonly host?: string | undefined
  /** The port; 0 or unset picks a free one (see the returned address). */
  readonly port?: number | undefined
  readonly path?: string | undefined
  /**
   * The most client sessions open at once (default 1,000; a positive
   * integer). At the limit, a request to open one (a POST naming no session,
   * such as `initialize`) is answered 503 with a JSON-RPC error naming the
   * limit and a `Retry-After` header; open sessions go on as before. A
   * session frees its place when its client ends it (DELETE), when it has
   * been idle for `idleTimeout`, or when the scope closes.
   *
   * @since 0.2.0
   */
  readonly maxSessions?: number | undefined
  /**
   * How long a session may go without a request before it is closed
   * (default 30 minutes; a positive duration, `Duration.infinity` for never).
   * Idleness counts from the end of its last request: a session whose
   * request is still being answered (a call waiting on a form, an open GET
   * stream) is never idle. A request naming a closed session is answered 404
   * `Session not found`, which tells an MCP client to initialize again.
   *
   * @since 0.2.0
   */
  readonly idleTimeout?: Duration.Input | undefined
}

/**
 * Where `McpServe.http` listens.
 *
 * @since 0.1.0
 * @category models
 */
export interface Address {
  readonly host: string
  readonly port: number
  /** The endpoint a client connects to, such as `http://127.0.0.1:3000/mcp`. */
  readonly url: string
}

/**
 * Serves over Streamable HTTP on a host and port until the scope closes.
 * Each client session (an `initialize`) gets its own server, trace and
 * proposals cap; every session has the same context (`options.context`).
 * Sessions are bounded: at most `maxSessions` at once (503 beyond), and one
 * idle for `idleTimeout` is closed (404 afterwards). Fails with `ListenError`
 * when it cannot listen or an option is invalid.
 *
 * @example
 * import { Effect } from "effect"
 * import { Registry, Toolkit } from "@graded/core"
 * import { McpServe } from "@graded/mcp"
 *
 * const main = Effect.scoped(
 *   Effect.flatMap(McpServe.http(Registry.make(Toolkit.make()), { port: 3000 }), () => Effect.never)
 * )
 *
 * @since 0.1.0
 * @category constructors
 */
export const http = <Tools extends ReadonlyArray<Tool.Any>>(
  registry: Registry.Registry<Tools>,
  options?: HttpOptions
): Effect.Effect<Address, ListenError, Requirements<Tools> | Scope.Scope> =>
  internal.http(registry as unknown as Registry.Registry<ReadonlyArray<Tool.Any>>, options)

/**
 * The address `McpServe.layerHttp` listens on, as a service of the layer:
 * `yield* McpServe.Address` gives its host, port and endpoint URL (the port
 * the system picked, when the options asked for 0 or none).
 *
 * @example
 * import { Console, Effect } from "effect"
 * import { Registry, Toolkit } from "@graded/core"
 * import { McpServe } from "@graded/mcp"
 *
 * const main = McpServe.Address.use(({ url }) => Console.error(`MCP on ${url}`)).pipe(
 *   Effect.andThen(Effect.never),
 *   Effect.provide(McpServe.layerHttp(Registry.make(Toolkit.make()), { port: 3000 }))
 * )
 *
 * @since 0.2.0
 * @category tags
 */
export const Address: Context.Service<Address, Address> = layers.Address

/**
 * Serves one session over this process's stdin and stdout for the lifetime of
 * the layer (`McpServe.stdio`, held open by the layer's scope): closing the
 * scope closes the server. It provides no service. When the client closes
 * stdin first, the session is over and the layer stays up, doing nothing,
 * until its scope closes: a program whose life is the session (a command an
 * MCP client spawns, which should exit when the client leaves) runs
 * `McpServe.stdio` instead, which completes then. Named after effect/ai's
 * `McpServer.layerStdio` (effect/ai).
 *
 * @example
 * import { Layer } from "effect"
 * import { ProposalStore, Registry, Toolkit } from "@graded/core"
 * import { McpServe } from "@graded/mcp"
 *
 * const Served = McpServe.layerStdio(Registry.make(Toolkit.make()), { name: "support-desk" }).pipe(
 *   Layer.provide(ProposalStore.memory)
 * )
 * // Layer.launch(Served).pipe(NodeRuntime.runMain)
 *
 * @since 0.2.0
 * @category layers
 */
export const layerStdio = <Tools extends ReadonlyArray<Tool.Any>>(
  registry: Registry.Registry<Tools>,
  options?: StdioOptions
): Layer.Layer<never, never, Requirements<Tools>> =>
  Invocation.seal(layers.layerStdio(registry as unknown as Registry.Registry<ReadonlyArray<Tool.Any>>, options))

/**
 * Serves over Streamable HTTP for the lifetime of the layer (`McpServe.http`,
 * held open by the layer's scope): listening once the layer is built, every
 * session closed and the port released when its scope closes. It provides
 * `McpServe.Address`, where it listens; it fails with `McpServe.ListenError`
 * when it cannot listen. Named after effect/ai's `McpServer.layerHttp`.
 *
 * @example
 * import { Effect, Layer } from "effect"
 * import { ProposalStore, Registry, Toolkit } from "@graded/core"
 * import { McpServe } from "@graded/mcp"
 *
 * const Served = McpServe.layerHttp(Registry.make(Toolkit.make()), { host: "127.0.0.1", port: 3000 }).pipe(
 *   Layer.provide(ProposalStore.memory)
 * )
 * const main = McpServe.Address.use((address) => Effect.log(`serving ${address.url}`)).pipe(
 *   Effect.andThen(Effect.never),
 *   Effect.provide(Served)
 * )
 *
 * @since 0.2.0
 * @category layers
 */
export const layerHttp = <Tools extends ReadonlyArray<Tool.Any>>(
  registry: Registry.Registry<Tools>,
  options?: HttpOptions
): Layer.Layer<Address, ListenError, Requirements<Tools>> =>
  Invocation.seal(layers.layerHttp(registry as unknown as Registry.Registry<ReadonlyArray<Tool.Any>>, options))
