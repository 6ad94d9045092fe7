// McpServe's layers: the existing ways to serve (`stdio`, `http`), held open
// for a layer's lifetime, their effects made for each build
// (Invocation.freshLayer). Nothing here serves by itself; it calls serve.ts.
import { Context, Effect, type Layer } from "effect"
import type { Registry, Tool } from "@graded/core"
import type { Address as McpAddress, HttpOptions } from "../McpServe.js"
import * as serve from "./serve.js"
import { Invocation } from "@graded/core"

type AnyRegistry = Registry.Registry<ReadonlyArray<Tool.Any>>

/** The address an HTTP layer listens on, as a service. */
export const Address: Context.Service<McpAddress, McpAddress> = Context.Service<McpAddress>(
  "@graded/mcp/McpServe/Address"
)

/**
 * One session over stdio, served in a fiber of the layer's scope: closing
 * the scope interrupts it, which closes the server (`connect`'s release).
 * When the client ends the session first, the fiber ends and the scope stays
 * open until its owner closes it.
 */
export const layerStdio = (
  registry: AnyRegistry,
  options?: Parameters<typeof serve.stdio>[1]
): Layer.Layer<never, never, any> =>
  Invocation.freshLayer(() => Effect.as(Effect.forkScoped(serve.stdio(registry, options)), Context.empty()))

/** Streamable HTTP for the layer's lifetime; the bound address is the service it provides. */
export const layerHttp = (
  registry: AnyRegistry,
  options?: HttpOptions
): Layer.Layer<McpAddress, serve.ListenError, any> =>
  Invocation.freshLayer(Address, () => serve.http(registry, options))

// Sealed where they are made (Invocation.seal): each is shared by every
// fiber, and a tool's code that finds one must not rewrite it in place.
Invocation.seal(Address)
