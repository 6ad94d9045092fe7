import { Terminal } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { TerminalConfirm } from "@graded/confirm"
import { makeDesk } from "../../core/test/supportDesk.js"

// A terminal that answers with the given lines, then reports end of input.
const terminal = (lines: ReadonlyArray<string>) => {
  const shown: Array<string> = []
  let next = 0
  const layer = Layer.succeed(
    Terminal.Terminal,
    Terminal.Terminal.of({
      columns: Effect.succeed(80),
      rows: Effect.succeed(24),
      isTTY: Effect.succeed(true),
      readInput: Effect.die("not used"),
      readLine: Effect.suspend(() => {
        const line = lines[next++]
        return line === undefined ? Effect.fail(new Terminal.QuitException()) : Effect.succeed(line)
      }),
      display: (text) => Effect.sync(() => void shown.push(text))
    })
  )
  return { layer, shown }
}

const confirmWith = (desk: ReturnType<typeof makeDesk>, lines: ReadonlyArray<string>) => {
  const fake = terminal(lines)
  const layer = TerminalConfirm.layer({ by: "cli:alice" }).pipe(Layer.provide(fake.layer))
  return { shown: fake.shown, run: (text: string) => desk.SendReply.invoke({ text }).pipe(Effect.provide(layer)) }
}

describe("TerminalConfirm", () => {
  it.effect("shows the exact payload and delivers on approve", () =>
    Effect.gen(function*() {
      const desk = makeDesk()
      const { run, shown } = confirmWith(desk, ["a"])
      expect(yield* run("Hello")).toEqual({ delivered: true })
      expect(desk.effects.delivered).toEqual([{ to: "customer:42", text: "Hello" }])
      const screen = shown.join("")
      expect(screen).toContain("SEND: Send a chat message (chat.sendMessage)")
      expect(screen).toContain("\"text\": \"Hello\"")
    }))

  it.effect("edits: not JSON is asked again; the edit is validated by the tool's schema", () =>
    Effect.gen(function*() {
      const desk = makeDesk()
      const good = confirmWith(desk, ["x", "e", "{oops", "{\"to\":\"customer:42\",\"text\":\"Edited\"}"])
      yield* good.run("Hello")
      expect(desk.effects.delivered).toEqual([{ to: "customer:42", text: "Edited" }])
      expect(good.shown.join("")).toContain("Please answer a, e or r.")
      expect(good.shown.join("")).toContain("That is not JSON.")
      const bad = confirmWith(desk, ["e", "{\"to\":\"customer:42\",\"text\":\"\"}"])
      const error = yield* Effect.flip(bad.run("Hello"))
      expect(error).toMatchObject({ _tag: "@graded/core/ToolError/InvalidEdit", by: "cli:alice" })
      expect(desk.effects.delivered).toEqual([{ to: "customer:42", text: "Edited" }])
    }))

  it.effect("rejects with the reason typed, and end of input is a rejection", () =>
    Effect.gen(function*() {
      const desk = makeDesk()
      const error = yield* Effect.flip(confirmWith(desk, ["r", "wrong customer"]).run("Hello"))
      expect(error).toMatchObject({
        _tag: "@graded/core/ToolError/Rejected",
        by: "cli:alice",
        reason: "wrong customer"
      })
      const closed = yield* Effect.flip(confirmWith(desk, []).run("Hello"))
      expect(closed).toMatchObject({
        _tag: "@graded/core/ToolError/Rejected",
        reason: "the terminal closed before a decision"
      })
      expect(desk.effects.delivered).toEqual([])
    }))
})
