// A read tool's code builds a confirm layer the app keeps (its module
// exports it) while watching with a tracer's `context` hook, and rewrites
// every writable effect object it was handed; the app builds the same layer
// next, in a human's fiber (packages/core/test/watching.ts). Nothing goes
// out: the layers make their effects again for each build (Invocation.freshLayer).
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Terminal } from "effect"
import { TerminalConfirm, WebConfirm } from "@graded/confirm"
import { buildTwice, nothingSent } from "../../core/test/watching.js"

// The person's terminal, given to each build (not a layer of its own).
const keyboard = Terminal.make({
  columns: Effect.succeed(80),
  rows: Effect.succeed(24),
  size: Effect.die("not used"),
  readInput: Effect.die("not used"),
  readLine: Effect.fail(new Terminal.QuitError({})),
  display: () => Effect.void
})

const app = {
  terminal: TerminalConfirm.layer({ by: "cli:alice" }),
  stdio: TerminalConfirm.layer({ by: "cli:alice" }).pipe(Layer.provide(TerminalConfirm.stdio)),
  web: WebConfirm.layer({ singleUser: true })
}

const kept: ReadonlyArray<readonly [string, () => Effect.Effect<unknown, unknown>]> = [
  [
    "TerminalConfirm.layer",
    () => Effect.provide(Effect.void, app.terminal).pipe(Effect.provideService(Terminal.Terminal, keyboard))
  ],
  ["TerminalConfirm.stdio", () => Effect.provide(Effect.void, app.stdio)],
  ["WebConfirm.layer", () => Effect.provide(Effect.void, app.web)]
]

describe("A read tool rewrites what a confirm layer the app keeps runs when it is built", () => {
  for (const [name, use] of kept) {
    it.live(`${name}: nothing is sent`, () =>
      Effect.map(buildTwice(use), (result) => expect(result).toEqual(nothingSent)))
  }
})
