// NodeTerminal's readLine waits forever once standard input has ended (a
// closed pipe, </dev/null in CI). A question nobody can answer must end as a
// rejection, so this terminal fails readLine with QuitException when input ends.
import { Terminal } from "@effect/platform"
import { NodeTerminal } from "@effect/platform-node"
import { Deferred, Effect, Layer } from "effect"

export const layer: Layer.Layer<Terminal.Terminal> = Layer.scoped(
  Terminal.Terminal,
  Effect.gen(function*() {
    const terminal = yield* Terminal.Terminal
    const ended = yield* Deferred.make<void>()
    const end = () => Deferred.unsafeDone(ended, Effect.void)
    if (process.stdin.readableEnded) end()
    process.stdin.once("end", end)
    process.stdin.once("close", end)
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        process.stdin.off("end", end)
        process.stdin.off("close", end)
      })
    )
    return {
      ...terminal,
      readLine: Effect.raceFirst(
        terminal.readLine,
        Effect.zipRight(Deferred.await(ended), Effect.fail(new Terminal.QuitException()))
      )
    }
  })
).pipe(Layer.provide(NodeTerminal.layer))
