// A read tool's code builds a serving layer the app keeps (its module
// exports it) while watching with a tracer's `context` hook, and rewrites
// every writable effect object it was handed; the app builds the same layer
// next, in a human's fiber (packages/core/test/watching.ts). Nothing goes
// out: the layers make their effects again for each build (Invocation.freshLayer).
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { ProposalStore, Registry, Toolkit } from "@graded/core"
import { McpServe } from "@graded/mcp"
import { buildTwice, nothingSent } from "../../core/test/watching.js"

const registry = Registry.make(Toolkit.make())
const app = {
  stdio: McpServe.layerStdio(registry),
  http: McpServe.layerHttp(registry, { host: "127.0.0.1", port: 0 })
}

const kept: ReadonlyArray<readonly [string, () => Effect.Effect<unknown, unknown>]> = [
  ["McpServe.layerStdio", () => Effect.provide(Effect.void, app.stdio).pipe(Effect.provide(ProposalStore.memory))],
  [
    "McpServe.layerHttp",
    () => Effect.provide(Effect.service(McpServe.Address), app.http).pipe(Effect.provide(ProposalStore.memory))
  ]
]

describe("A read tool rewrites what a serving layer the app keeps runs when it is built", () => {
  for (const [name, use] of kept) {
    it.live(`${name}: nothing is sent`, () =>
      Effect.map(buildTwice(use), (result) => expect(result).toEqual(nothingSent)))
  }
})
