import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Result, Schema, Terminal } from "effect"
import { Agent, HumanConfirm, Printable, ScriptedModel, Toolkit } from "@graded/core"
import * as os from "node:os"
import { TerminalConfirm } from "@graded/confirm"
import { makeDesk } from "../../core/test/supportDesk.js"

// A terminal that answers with the given lines, then reports end of input.
const terminal = (lines: ReadonlyArray<string>) => {
  const shown: Array<string> = []
  let next = 0
  const layer = Layer.succeed(
    Terminal.Terminal,
    Terminal.make({
      columns: Effect.succeed(80),
      rows: Effect.succeed(24),
      size: Effect.die("not used"),
      readInput: Effect.die("not used"),
      readLine: Effect.suspend(() => {
        const line = lines[next++]
        return line === undefined ? Effect.fail(new Terminal.QuitError({})) : Effect.succeed(line)
      }),
      display: (text) => Effect.sync(() => void shown.push(text))
    })
  )
  return { layer, shown }
}

const confirmWith = (
  desk: ReturnType<typeof makeDesk>,
  lines: ReadonlyArray<string>,
  options: TerminalConfirm.Options = { by: "cli:alice" }
) => {
  const fake = terminal(lines)
  const layer = TerminalConfirm.layer(options).pipe(Layer.provide(fake.layer))
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

  it.effect("a card asked inside a sub-agent shows the path to the tool", () =>
    Effect.gen(function*() {
      const desk = makeDesk()
      const fake = terminal(["a"])
      const Messenger = Agent.tool("agent.messenger", {
        title: "Messenger",
        description: "Tells the customer.",
        toolkit: Toolkit.make(desk.SendReply),
        instructions: "Tell them.",
        input: Schema.Struct({ text: Schema.String })
      })
      yield* Agent.supervised({ toolkit: Toolkit.make(Messenger), prompt: "Tell them." }).pipe(
        Effect.provide(Layer.merge(
          ScriptedModel.layer([
            ScriptedModel.calls(ScriptedModel.call("agent.messenger", { text: "Hi" })),
            ScriptedModel.calls(ScriptedModel.call("chat.sendMessage", { text: "Hi" })),
            ScriptedModel.text("Sent."),
            ScriptedModel.text("Done.")
          ]),
          TerminalConfirm.layer({ by: "cli:alice" }).pipe(Layer.provide(fake.layer))
        ))
      )
      expect(desk.effects.delivered).toEqual([{ to: "customer:42", text: "Hi" }])
      expect(fake.shown.join("")).toContain("asked by: agent.messenger → chat.sendMessage")
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
        reason: "input ended before a decision (the terminal or pipe closed)"
      })
      expect(desk.effects.delivered).toEqual([])
    }))
})

// A control character anywhere on the card would move the cursor or erase; a
// bidirectional or zero-width one would reorder or hide text.
const unsafe =
  // eslint-disable-next-line no-control-regex -- finding control characters is the point
  /[\u0000-\u0008\u000B-\u001F\u007F-\u009F\u2028\u2029\u061C\u200B-\u200F\u202A-\u202E\u2060-\u2069\uFEFF]/

// A card as one line per row before it was cut at the 80 columns the test's
// terminal says it has: each row continued behind `↳` joined back.
const unwrapped = (card: string | undefined) => (card ?? "").replace(/\n│ +↳ /g, "")

describe("TerminalConfirm card", () => {
  it.effect("shows a right-to-left override and zero-width characters as badges, and flags the card", () =>
    Effect.gen(function*() {
      const desk = makeDesk()
      const { run, shown } = confirmWith(desk, ["r", "no"])
      yield* Effect.result(run("invoice\u202Efdp.exe\u200B"))
      const screen = unwrapped(shown.join(""))
      expect(screen).not.toMatch(unsafe)
      expect(screen).toContain("\"text\": \"invoice\\u202Efdp.exe\\u200B\"")
      expect(screen).toContain(
        "│ ⚠ the payload holds characters that hide or reorder text, shown as escapes: \\u202E \\u200B"
      )
      const plain = confirmWith(makeDesk(), ["r", "no"])
      yield* Effect.result(plain.run("fdp.exe"))
      expect(plain.shown.join("")).not.toContain("⚠")
    }))

  it.effect("escapes control and ANSI characters; a text's line breaks are lines behind a gutter", () =>
    Effect.gen(function*() {
      const desk = makeDesk()
      const { run, shown } = confirmWith(desk, ["r", "no"])
      const forged = "Hello\u001B[2K\u001B[1A\r\n\"to\": \"customer:666\"\n└\nApprove, edit or reject? [a/e/r] a"
      yield* Effect.result(run(forged))
      const card = shown[0] ?? ""
      expect(card).not.toMatch(unsafe)
      const lines = card.split("\n")
      expect(lines).toContain("│   \"text\":")
      expect(lines).toContain("│     ┆ Hello\\u001B[2K\\u001B[1A")
      expect(lines).toContain("│     ┆ \"to\": \"customer:666\"")
      expect(lines).toContain("│     ┆ └")
      // The card's own border and question appear once; the payload's copies sit behind the gutter.
      expect(lines.filter((line) => line.startsWith("└"))).toHaveLength(1)
      expect(lines.filter((line) => line.startsWith("Approve"))).toHaveLength(0)
      // A single-line text keeps its escapes in quotes, and a backslash of the payload shows doubled.
      const quoted = confirmWith(makeDesk(), ["r", "no"])
      yield* Effect.result(quoted.run("a\\u202E\tb\u0007"))
      expect(quoted.shown[0]).toContain("\"text\": \"a\\\\u202E\\tb\\u0007\"")
    }))

  it.effect("cuts a large payload, says how much it shows, and approves only once all of it was shown", () =>
    Effect.gen(function*() {
      const desk = makeDesk()
      const big = "x".repeat(50_000)
      const { run, shown } = confirmWith(desk, ["a", "s", "a"])
      expect(yield* run(big)).toEqual({ delivered: true })
      const [card, question, refusal, question2, all, question3] = shown.map(unwrapped)
      expect(card).toContain(`"text": "${"x".repeat(2_000)}" [showing 2000 of 50000 characters]`)
      expect(card).toMatch(/this card shows \d+ of \d+ characters of the payload; answer s to see all of it/)
      expect(card?.length).toBeLessThan(TerminalConfirm.defaultLimits.total + 1_000)
      expect(question).toBe("Show all, edit or reject? [s/e/r] ")
      expect(refusal).toContain("This card does not show the whole payload")
      expect(question2).toBe("Show all, edit or reject? [s/e/r] ")
      expect(all).toContain(big)
      expect(all).not.toContain("showing")
      expect(question3).toBe("Approve, edit or reject? [a/e/r] ")
      expect(desk.effects.delivered).toHaveLength(1)
    }))

  it.effect("the limits are the app's to set; a cut card with only `a` answered is never approved", () =>
    Effect.gen(function*() {
      const desk = makeDesk()
      const { run, shown } = confirmWith(desk, ["a"], { by: "cli:alice", limits: { field: 12, total: 40 } })
      const error = yield* Effect.flip(run("0123456789abcdef"))
      expect(shown[0]).toContain("\"text\": \"0123456789ab\" [showing 12 of 16 characters]")
      expect(error).toMatchObject({
        _tag: "@graded/core/ToolError/Rejected",
        reason: "input ended before a decision (the terminal or pipe closed)"
      })
      expect(desk.effects.delivered).toEqual([])
      // A payload within the limits is asked as before.
      const small = confirmWith(makeDesk(), ["a"], { limits: { field: 12, total: 40 } })
      expect(Result.isSuccess(yield* Effect.result(small.run("short")))).toBe(true)
    }))
})

describe("TerminalConfirm card and the display model", () => {
  it("draws Printable.display's model: its cut, its totals and its hidden characters", () => {
    const payload = { to: "customer:42", text: `${"x".repeat(30)}\u202E`, cc: ["a@example.com"] }
    const limits = { field: 12, total: 30 }
    const model = Printable.display(payload, limits)
    const text = model.fields.find((field) => field.key === "text")!
    const card = TerminalConfirm.card({
      tool: "mail.send",
      grade: "send",
      title: "Send a mail",
      description: "Sends it.",
      actor: undefined,
      payload,
      schema: undefined
    } as unknown as HumanConfirm.View, limits)
    expect(card).toContain(`"text": "${text.text}" [showing ${text.length - text.cut} of ${text.length} characters]`)
    expect(card).toContain(`this card shows ${model.shown} of ${model.total} characters`)
    expect(card).toContain(`shown as escapes: ${model.hidden.join(" ")}`)
    expect(card).toContain("[… the rest of the payload is not shown]")
    expect(model.fields.at(-1)?.kind).toBe("rest")
  })
})

describe("TerminalConfirm decider", () => {
  it.effect("is the operating-system user unless the app names one", () =>
    Effect.gen(function*() {
      const desk = makeDesk()
      const error = yield* Effect.flip(confirmWith(desk, ["r", "not mine"], {}).run("Hello"))
      expect(error).toMatchObject({ _tag: "@graded/core/ToolError/Rejected", by: os.userInfo().username })
      expect(TerminalConfirm.osUser()).toBe(os.userInfo().username)
      const named = yield* Effect.flip(confirmWith(desk, ["r", "no"], { by: "sso:alice@example.com" }).run("Hello"))
      expect(named).toMatchObject({ by: "sso:alice@example.com" })
    }))
})
