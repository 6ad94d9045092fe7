import { Terminal } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Schema } from "effect"
import { Tool } from "@graded/core"
import { TerminalConfirm } from "@graded/confirm"

// A terminal that answers with the given lines, then reports end of input.
const terminal = (lines: ReadonlyArray<string>) => {
  const shown: Array<string> = []
  let next = 0
  const layer = Layer.succeed(Terminal.Terminal, Terminal.Terminal.of({
    columns: Effect.succeed(80),
    rows: Effect.succeed(24),
    isTTY: Effect.succeed(true),
    readInput: Effect.die("not used"),
    readLine: Effect.suspend(() => {
      const line = lines[next++]
      return line === undefined ? Effect.fail(new Terminal.QuitException()) : Effect.succeed(line)
    }),
    display: (text) => Effect.sync(() => void shown.push(text))
  }))
  return { layer, shown }
}

const delivered: Array<string> = []
const Send = Tool.send("chat.sendMessage", {
  title: "Send a chat message",
  description: "Send a message to the customer.",
  input: Schema.Struct({ text: Schema.String }),
  payload: Schema.Struct({ to: Schema.String, text: Schema.NonEmptyString }),
  output: Schema.Boolean,
  prepare: ({ text }) => Effect.succeed({ to: "c-42", text }),
  deliver: (confirmed) => Effect.sync(() => (delivered.push(confirmed.payload.text), true))
})

const confirmWith = (lines: ReadonlyArray<string>) => {
  const fake = terminal(lines)
  const layer = TerminalConfirm.layer({ by: "cli:alice" }).pipe(Layer.provide(fake.layer))
  return { shown: fake.shown, run: (text: string) => Send.invoke({ text }).pipe(Effect.provide(layer)) }
}

describe("TerminalConfirm", () => {
  it.effect("shows the exact payload and delivers on approve", () =>
    Effect.gen(function*() {
      delivered.length = 0
      const { run, shown } = confirmWith(["a"])
      expect(yield* run("Hello")).toBe(true)
      expect(delivered).toEqual(["Hello"])
      const screen = shown.join("")
      expect(screen).toContain("SEND: Send a chat message (chat.sendMessage)")
      expect(screen).toContain("\"text\": \"Hello\"")
    }))

  it.effect("edits: not JSON is asked again; the edit is validated by the tool's schema", () =>
    Effect.gen(function*() {
      delivered.length = 0
      const good = confirmWith(["x", "e", "{oops", "{\"to\":\"c-42\",\"text\":\"Edited\"}"])
      yield* good.run("Hello")
      expect(delivered).toEqual(["Edited"])
      expect(good.shown.join("")).toContain("Please answer a, e or r.")
      expect(good.shown.join("")).toContain("That is not JSON.")
      const bad = confirmWith(["e", "{\"to\":\"c-42\",\"text\":\"\"}"])
      const error = yield* Effect.flip(bad.run("Hello"))
      expect(error).toMatchObject({ _tag: "@graded/core/ToolError/InvalidEdit", by: "cli:alice" })
      expect(delivered).toEqual(["Edited"])
    }))

  it.effect("rejects with the reason typed, and end of input is a rejection", () =>
    Effect.gen(function*() {
      delivered.length = 0
      const error = yield* Effect.flip(confirmWith(["r", "wrong customer"]).run("Hello"))
      expect(error).toMatchObject({ _tag: "@graded/core/ToolError/Rejected", by: "cli:alice", reason: "wrong customer" })
      const closed = yield* Effect.flip(confirmWith([]).run("Hello"))
      expect(closed).toMatchObject({ _tag: "@graded/core/ToolError/Rejected", reason: "the terminal closed before a decision" })
      expect(delivered).toEqual([])
    }))
})
