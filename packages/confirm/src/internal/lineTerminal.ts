// The process's terminal, read one line per question, whether standard input
// is a terminal or a pipe. Imported by TerminalConfirm only (its `stdio`, and
// `forgetTyped` once each card is drawn).
//
// NodeTerminal's readLine reads `process.stdin`, and lets its readline
// interface go a few milliseconds after each line: here one interface on a
// stream of this module's own lives as long as the layer and queues every
// line, in order.
//
// It guards, in this order:
// - end of input (Ctrl-D, a closed pipe) fails the question with
//   QuitError, which TerminalConfirm turns into a rejection;
// - on a terminal, `forgetTyped`, called once a card is drawn, drops the lines
//   typed before (from a pipe, nothing is dropped: a script's lines are its
//   answers, in order), so an Enter pressed twice, or a line typed while the
//   program started, cannot answer a card nobody has seen;
// - the lines are read from a stream of this module's own on the process's
//   standard input, not from `process.stdin`, which any code can reach;
// - the terminal stays in its normal line mode: the person sees what they
//   type, can correct it, and Ctrl-C stops the program as it always does.
import { NodeTerminal } from "@effect/platform-node"
import { type Cause, Effect, type Layer, Queue, Scope, Terminal } from "effect"
import * as fs from "node:fs"
import * as net from "node:net"
import * as readline from "node:readline"
import { Readable } from "node:stream"
import * as tty from "node:tty"
import { Invocation } from "@graded/core"

// A stream of our own on file descriptor 0, made as Node makes
// `process.stdin` for each kind of input: the shared `process.stdin` is an
// object any code in the process can reach, and a line it emits (a tool's
// `process.stdin.emit("data", "a\n")`) would answer the card.
// No standard input at all (descriptor 0 closed) reads as one that ended.
const ownInput = (): Readable => {
  if (tty.isatty(0)) return new tty.ReadStream(0)
  let stat: fs.Stats
  try {
    stat = fs.fstatSync(0)
  } catch {
    return Readable.from([])
  }
  return stat.isFIFO() || stat.isSocket()
    ? new net.Socket({ fd: 0, readable: true, writable: false })
    : fs.createReadStream("", { fd: 0, autoClose: false })
}

// Resumes after the event loop has polled its input at least once.
const pollOnce = Effect.callback<void>((resume) => {
  setImmediate(() => setImmediate(() => resume(Effect.void)))
})

// How to drop what was typed ahead, for each terminal this module made.
const typedAhead = new WeakMap<Terminal.Terminal, Effect.Effect<void>>()

/** Drops the lines typed so far on a terminal made here; does nothing for any other. */
export const forgetTyped = (terminal: Terminal.Terminal): Effect.Effect<void> => typedAhead.get(terminal) ?? Effect.void

// Made for each build (Invocation.freshLayer), NodeTerminal's terminal too:
// `NodeTerminal.layer`'s effect is the same object at every build.
export const layer: Layer.Layer<Terminal.Terminal> = Invocation.freshLayer(
  Terminal.Terminal,
  () =>
    Effect.gen(function*() {
      const node = yield* NodeTerminal.make()
      const scope = yield* Effect.scope
      const isTerminal = tty.isatty(0)

      // Opened at the first card, not before: until then the program's
      // standard input is left alone.
      const open = Effect.gen(function*() {
        const lines = yield* Queue.make<string, Cause.Done>()
        const end = () => void Queue.endUnsafe(lines)
        const input = yield* Effect.acquireRelease(Effect.sync(ownInput), (input) => Effect.sync(() => input.destroy()))
        const reader = yield* Effect.acquireRelease(
          Effect.sync(() => readline.createInterface({ input, terminal: false, crlfDelay: Number.POSITIVE_INFINITY })),
          (reader) => Effect.sync(() => reader.close())
        )
        reader.on("line", (line) => void Queue.offerUnsafe(lines, line))
        reader.on("close", end)
        input.once("error", end)
        yield* Effect.addFinalizer(() => Effect.sync(() => input.off("error", end)))
        if (input.readableEnded || input.destroyed) end()
        return lines
      })
      const lines = yield* Effect.cached(Scope.provide(scope)(open))

      const readLine = Effect.flatMap(lines, Queue.take).pipe(
        Effect.mapError(() => new Terminal.QuitError({}))
      )
      const terminal = Terminal.make({ ...node, readLine })
      if (isTerminal) {
        // Opens the input at the first card too: lines typed before it wait in
        // the terminal, not in the mailbox, and would answer it. Two turns of
        // the event loop hold a poll of the input, so what was typed before the
        // card was drawn has been read, and is dropped.
        typedAhead.set(
          terminal,
          Effect.flatMap(lines, (queue) => Effect.andThen(pollOnce, Effect.asVoid(Queue.clear(queue))))
        )
      }
      return terminal
    })
)

// Sealed where they are made (Invocation.seal): each is shared by every
// fiber, and a tool's code that finds one must not rewrite it in place.
Invocation.seal(pollOnce)
Invocation.seal(layer)
