// Red team, terminal and CLI surface: what a hostile model, web client, audit
// file or payload tries against what a person reads in a terminal (`graded
// audit`, the confirm card), who is recorded as deciding, and a script that
// answers through a pipe. Each row names the attack and the outcome a person
// must get; the rows that concern the screen run `graded` in a real
// pseudo-terminal and read what it shows (@xterm/headless), not only the bytes.
// The model's attacks on the loop are packages/core/test/RedTeam.test.ts; the
// web page's are packages/confirm/test/RedTeam.web.test.ts.
import type { HumanConfirm } from "@graded/core"
import { TerminalConfirm } from "@graded/confirm"
import { spawn as spawnChild } from "node:child_process"
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, describe, expect, it } from "vitest"
import { built } from "../../../test/built.js"
import { redTeam } from "../../../test/redTeam.js"
import { killAll, type Session, spawn } from "./pty.js"

const report = redTeam("terminal and CLI")

const here = path.dirname(fileURLToPath(import.meta.url))
// The built command, modules and card program: plain node runs them, with no compile at each start.
const bin = built("packages/cli/src/main.ts")
const cards = built("packages/cli/test/fixtures/cards.ts")
const desk = path.resolve(here, "../../../examples/support-desk")
const dir = mkdtempSync(path.join(os.tmpdir(), "graded-redteam-"))
const m = ["-m", built("examples/support-desk/src/graded.config.ts")]

afterAll(() => {
  killAll()
  rmSync(dir, { recursive: true, force: true })
})

// Anything that can move the cursor, erase, reorder or hide text on a screen.
const unsafe =
  // eslint-disable-next-line no-control-regex -- finding control characters is the point
  /[\u0000-\u0008\u000B-\u001F\u007F-\u009F\u2028\u2029\u061C\u200B-\u200F\u202A-\u202E\u2060-\u2069\uFEFF]/

// The erase-line, cursor-up and carriage-return sequence that, printed raw,
// wipes the line before it and writes a line of its own.
const erase = "\u001B[2K\r\u001B[1A\u001B[2K\r"
const fakeDelivered = "2026-11-30T12:00:00.000Z  t-0  human cli:alice  DELIVERED chat.sendMessage, confirmed by alice"

// A sentence spelled in tag characters (U+E0020-E007F), which draw as nothing.
const tagged = (sentence: string) => [...sentence].map((c) => String.fromCodePoint(0xE0000 + c.charCodeAt(0))).join("")
const taggedEscaped = (sentence: string) =>
  [...sentence].map((c) => `\\uDB40\\u${(0xDC00 + c.charCodeAt(0)).toString(16).toUpperCase()}`).join("")

// --- soft wraps: what a terminal 80 or 120 columns wide draws of a long line --

const widths = [80, 120] as const
// Padding that puts `forged` at the left edge of a row at both widths, for a
// field that starts `at` columns into its line: a terminal that wraps the line
// itself draws `forged` where a row of its own would start.
const padded = (at: number, forged: string) => `${"x".repeat(240 - (at % 240))}${forged}`
// A card's or a listing's lines as they were before they were cut into rows
// at the terminal's width: each row continued behind `↳` joined back.
const unwrapped = (text: string) => text.replace(/\n(?:│ +| *)↳ /g, "")
// A row the terminal drew, blank ones left out.
const rowsOf = (session: Session) => session.rows().filter((row) => row.trim() !== "")

// --- graded audit, in a pseudo-terminal ----------------------------------

const entry = (at: string, event: Record<string, unknown>) =>
  JSON.stringify({ at, traceId: "t-1", actor: "agent:bot", autonomous: true, ...event })

const auditEntries = [
  entry("2026-11-30T12:00:01.000Z", {
    type: "refused",
    tool: `kb.search${erase}${fakeDelivered}\n`,
    gate: "offered",
    reason: `no tool named kb.search${erase}${fakeDelivered}`
  }),
  entry("2026-11-30T12:00:02.000Z", {
    type: "decided",
    tool: "chat.sendMessage",
    by: `mallory${erase}alice`,
    decision: "rejected",
    edited: false,
    reason: `spam\n${fakeDelivered}`
  }),
  entry("2026-11-30T12:00:03.000Z", {
    type: "round-limit",
    rounds: 4,
    pending: [`chat.sendMessage\r${fakeDelivered}`]
  }),
  JSON.stringify({
    at: `2026-11-30T12:00:04.000Z${erase}`,
    traceId: `t-2\n${fakeDelivered}`,
    actor: `agent:bot\r${fakeDelivered}`,
    autonomous: false,
    type: "answered",
    rounds: 1
  }),
  entry("2026-11-30T12:00:05.000Z", {
    type: "delivered",
    tool: "chat.sendMessage",
    by: "alice\u202Efdp.exe\u200B"
  }),
  entry("2026-11-30T12:00:06.000Z", {
    type: "refused",
    tool: "chat.sendMessage",
    gate: "autonomous",
    reason: "y".repeat(1_000_000)
  }),
  entry("2026-11-30T12:00:07.000Z", {
    type: "decided",
    tool: "chat.sendMessage",
    by: "alice",
    decision: "rejected",
    edited: false,
    reason: `spam${tagged("APPROVE IT")}\u200B`
  })
]

let auditRun: Promise<{ code: number; screen: string }> | undefined
const auditScreen = () => {
  if (auditRun === undefined) {
    const file = path.join(dir, "forged.jsonl")
    writeFileSync(file, `${auditEntries.join("\n")}\n`)
    auditRun = spawn(process.execPath, [bin, "audit", file], { cwd: desk, cols: 160 }).exited
  }
  return auditRun
}
// Each entry's line, its rows after the first (behind `↳`, cut at the terminal's width) joined back to it.
const auditLines = async () => {
  const { code, screen } = await auditScreen()
  expect(code).toBe(0)
  return unwrapped(screen).split("\n").filter((line) => line !== "")
}

// --- graded invoke, in a pseudo-terminal and through a pipe -----------------

// Waits for graded's own question: a line that starts with it (a payload's copy sits behind the card's gutter).
const question = async (session: Session, text: string) => {
  const deadline = Date.now() + 60_000
  let ended = false
  void session.exited.then(() => void (ended = true))
  for (;;) {
    const screen = await session.waitFor(text)
    if (screen.split("\n").some((line) => line.startsWith(text))) return screen
    if (ended || Date.now() > deadline) throw new Error(`no line starts with "${text}". The screen:\n${screen}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

// `graded invoke chat.sendMessage` with this text, shown in a pseudo-terminal and rejected with `reason`.
const invokeCard = async (text: string, reason: string, cols = 200) => {
  const audit = path.join(dir, `invoke-${Math.random().toString(36).slice(2)}.jsonl`)
  const cli = spawn(process.execPath, [
    bin,
    "invoke",
    "chat.sendMessage",
    JSON.stringify({ text }),
    ...m,
    "--audit",
    audit
  ], {
    cwd: desk,
    cols
  })
  const card = await question(cli, "Approve, edit or reject? [a/e/r]")
  const rows = rowsOf(cli)
  cli.type("r")
  await question(cli, "Reason:")
  cli.type(reason)
  const done = await cli.exited
  return {
    card,
    rows,
    done,
    audit: readFileSync(audit, "utf8").trim().split("\n").map((line) => JSON.parse(line))
  }
}

// Runs a command with its standard input a pipe that carries `input`, then closes.
const piped = (file: string, args: ReadonlyArray<string>, input: string, cwd: string, uid?: number) =>
  new Promise<{ out: string; err: string; code: number | null }>((resolve, reject) => {
    const child = spawnChild(file, [...args], { cwd, ...(uid !== undefined ? { uid, gid: uid } : {}) })
    let out = ""
    let err = ""
    child.stdout.on("data", (chunk) => void (out += chunk))
    child.stderr.on("data", (chunk) => void (err += chunk))
    child.on("error", reject)
    child.on("close", (code) => resolve({ out, err, code }))
    child.stdin.end(input)
  })

const outcomes = (stderr: string) =>
  stderr.split("\n").filter((line) => line.startsWith("{")).map((line) => JSON.parse(line))

const cardsProgram = (count: number) => [process.execPath, [cards, String(count)]] as const

// --- graded pending and decide, on a store of their own ---------------------

const fixtures = path.resolve(here, "fixtures")
const proposalStore = () => {
  const at = mkdtempSync(path.join(dir, "proposals-"))
  const env = { GRADED_TEST_DB: path.join(at, "graded.db"), GRADED_TEST_DELIVERED: path.join(at, "delivered.jsonl") }
  const graded = (args: ReadonlyArray<string>, cols = 200) =>
    spawn(process.execPath, [bin, "-m", built("packages/cli/test/fixtures/proposals.config.ts"), ...args], {
      cwd: fixtures,
      env,
      cols
    })
  const propose = async (text: string) => {
    const { code, screen } = await graded(["invoke", "chat.sendMessage.propose", JSON.stringify({ text })]).exited
    expect(code).toBe(0)
    return /"proposal": "([^"]+)"/.exec(screen)![1]!
  }
  const delivered = () => existsSync(env.GRADED_TEST_DELIVERED) ? readFileSync(env.GRADED_TEST_DELIVERED, "utf8") : ""
  return { graded, propose, delivered }
}

// --- the card, rendered -------------------------------------------------

const view = (payload: unknown): HumanConfirm.View => ({
  tool: "chat.sendMessage",
  grade: "send",
  title: "Send a chat message",
  description: "Send a message to the customer.",
  payload,
  actor: "agent:bot",
  traceId: undefined,
  schema: undefined,
  check: () => {
    throw new Error("not used")
  }
})

// --- the table ------------------------------------------------------------

interface Attack {
  readonly surface:
    | "graded audit"
    | "graded pending"
    | "graded invoke"
    | "confirm card"
    | "who decides"
    | "piped input"
    | "typed input"
  readonly attack: string
  readonly expected: string
  /** Why the row cannot run on this machine, if it cannot. */
  readonly skip?: string | undefined
  readonly run: () => Promise<void>
}

const attacks: ReadonlyArray<Attack> = [
  {
    surface: "graded audit",
    attack:
      "a model's tool name and reason carry CR, LF, erase-line and cursor-up to wipe the REFUSED line and print a fake DELIVERED one",
    expected: "one line per entry; the REFUSED line stays, the escapes show as text",
    run: async () => {
      const lines = await auditLines()
      expect(lines).toHaveLength(auditEntries.length)
      for (const line of lines) expect(line.startsWith("2026-11-30T12:00:0")).toBe(true)
      expect(lines.filter((line) => line.includes("DELIVERED")).every((line) => !line.startsWith(fakeDelivered)))
        .toBe(true)
      const refused = lines[0] ?? ""
      expect(refused).toContain("REFUSED kb.search\\u001B[2K\\u000D\\u001B[1A\\u001B[2K\\u000D2026-11-30T12:00:00.000Z")
      expect(refused).toContain("… at the offered gate: no tool named kb.search\\u001B[2K")
    }
  },
  {
    surface: "graded audit",
    attack: "a web client's `by` and `reason` carry a line break and erase sequences to forge a decision line",
    expected: "the decision stays one line, under the decider's escaped name",
    run: async () => {
      const line = (await auditLines())[1] ?? ""
      expect(line).toContain(
        "mallory\\u001B[2K\\u000D\\u001B[1A\\u001B[2K\\u000Dalice rejected chat.sendMessage: spam\\n2026"
      )
    }
  },
  {
    surface: "graded audit",
    attack: "a pending tool name in a round-limit entry carries a carriage return",
    expected: "the name is shown escaped on the round-limit line",
    run: async () => {
      const line = (await auditLines())[2] ?? ""
      expect(line).toContain("stopped at the round limit (4); not run: chat.sendMessage\\u000D2026")
    }
  },
  {
    surface: "graded audit",
    attack: "an audit file's own fields (time, trace id, actor) carry escapes and line breaks",
    expected: "each is escaped; the entry is one line",
    run: async () => {
      const line = (await auditLines())[3] ?? ""
      expect(line).toContain("2026-11-30T12:00:04.000Z\\u001B[2K\\u000D")
      expect(line).toContain("t-2\\n2026-11-30")
      expect(line).toContain("human agent:bot\\u000D2026")
      expect(line).toContain("the model answered after 1 round(s)")
    }
  },
  {
    surface: "graded audit",
    attack: "a decider's name holds a right-to-left override and a zero-width space (`alice<RLO>fdp.exe`)",
    expected: "shown as visible \\u202E and \\u200B badges, nothing reordered",
    run: async () => {
      const line = (await auditLines())[4] ?? ""
      expect(line).toContain("DELIVERED chat.sendMessage, confirmed by alice\\u202Efdp.exe\\u200B")
      expect(line).not.toMatch(unsafe)
    }
  },
  {
    surface: "graded audit",
    attack: "a 1,000,000-character reason floods the screen",
    expected: "cut at 1,000 characters, saying how many more there were",
    run: async () => {
      const line = (await auditLines())[5] ?? ""
      expect(line).toContain(`${"y".repeat(1_000)}… (999000 more characters)`)
      expect(line.length).toBeLessThan(1_200)
    }
  },
  {
    surface: "graded audit",
    attack: "a reason and a decider's reason spell a sentence in tag characters, with a zero-width space",
    expected: "every tag character and the zero-width space shows as an escape",
    run: async () => {
      const line = (await auditLines())[6] ?? ""
      expect(line).toContain(`alice rejected chat.sendMessage: spam${taggedEscaped("APPROVE IT")}\\u200B`)
      expect(line).not.toMatch(/[\u{E0000}-\u{E007F}\u200B]/u)
    }
  },
  {
    surface: "graded audit",
    attack:
      "reasons and an error padded so that a terminal 80 or 120 columns wide wraps a fake DELIVERED entry onto the left edge",
    expected: "each entry's rows after its first are behind `↳`: as many entry rows as entries, one DELIVERED",
    run: async () => {
      const at = (n: number) => `2026-11-30T12:00:0${n}.000Z`
      const line = (n: number) => `${at(n)}  t-1  agent agent:bot  `
      const entries = [
        entry(at(1), {
          type: "refused",
          tool: "chat.sendMessage",
          gate: "autonomous",
          reason: padded(`${line(1)}REFUSED chat.sendMessage at the autonomous gate: `.length, fakeDelivered)
        }),
        entry(at(2), {
          type: "decided",
          tool: "chat.sendMessage",
          by: "alice",
          decision: "rejected",
          edited: false,
          reason: padded(`${line(2)}alice rejected chat.sendMessage: `.length, fakeDelivered)
        }),
        entry(at(3), { type: "delivered", tool: "chat.sendMessage", by: "alice" }),
        entry(at(4), {
          type: "failed",
          tool: "chat.sendMessage",
          error: padded(`${line(4)}chat.sendMessage failed: `.length, fakeDelivered)
        })
      ]
      const file = path.join(dir, "wrapped.jsonl")
      writeFileSync(file, `${entries.join("\n")}\n`)
      for (const cols of widths) {
        const session = spawn(process.execPath, [bin, "audit", file], { cwd: desk, cols })
        expect((await session.exited).code).toBe(0)
        const rows = rowsOf(session)
        expect(rows.filter((row) => /^2026-11-30T12:00:0\d\.000Z {2}/.test(row)), rows.join("\n")).toHaveLength(4)
        expect(rows.filter((row) => /^\S+ {2}\S+ {2}\S+ \S+ {2}DELIVERED /.test(row))).toHaveLength(1)
        expect(rows.filter((row) => !/^2026-11-30T12:00:0\d/.test(row)).every((row) => row.startsWith("  ↳ ")))
          .toBe(true)
      }
    }
  },
  {
    surface: "graded pending",
    attack:
      "payloads padded so that a terminal 80 or 120 columns wide wraps a fake proposal header onto the left edge, and a 50,000-character payload",
    expected:
      "as many headers as proposals at both widths, the wrapped parts behind `↳`; the large payload is cut at 1,000 characters, saying how many more",
    run: async () => {
      const store = proposalStore()
      const forged = "p-99  chat.sendMessage (send)  Send a chat message"
      const at = "  payload: {\"to\":\"customer:42\",\"text\":\"".length
      for (let i = 0; i < 4; i++) await store.propose(`${padded(at, forged)} ${i}`)
      await store.propose("z".repeat(50_000))
      for (const cols of widths) {
        const session = store.graded(["pending"], cols)
        const { code, screen } = await session.exited
        expect(code).toBe(0)
        const rows = rowsOf(session)
        const headers = rows.filter((row) => /^\S+ {2}chat\.sendMessage \(send\) {2}Send a chat message/.test(row))
        expect(headers, rows.join("\n")).toHaveLength(5)
        expect(unwrapped(screen)).toMatch(/^ {2}payload: \{"to":"customer:42","text":"z+… \(\d+ more characters\)$/m)
        expect(screen.length).toBeLessThan(5 * 2_000)
      }
    }
  },
  {
    surface: "graded invoke",
    attack:
      "a tool name with a right-to-left override, a zero-width space and an erase-line escape, echoed in the error",
    expected: "the printed result shows them as escapes, and still parses as JSON with the same value",
    run: async () => {
      const name = "kb.se\u202Earch\u200B\u001B[2K"
      const run = await piped(process.execPath, [bin, "invoke", name, "{}", ...m], "", desk)
      expect(run.code).toBe(1)
      expect(run.out).not.toMatch(unsafe)
      const result = JSON.parse(run.out)
      expect(result).toMatchObject({ ok: false, code: "unknown-tool" })
      expect(result.error).toContain("kb.se")
    }
  },
  {
    surface: "confirm card",
    attack: "the payload's text is `invoice<RLO>fdp.exe<ZWSP>`, to read as invoice.exe…pdf",
    expected: "visible \\u202E and \\u200B badges, and the card is flagged; nothing sent without a decision",
    run: async () => {
      const { card, done, audit } = await invokeCard("invoice\u202Efdp.exe\u200B", "looks wrong")
      expect(card).toContain("\"text\": \"invoice\\u202Efdp.exe\\u200B\"")
      expect(card).toContain(
        "⚠ the payload holds characters that hide or reorder text, shown as escapes: \\u202E \\u200B"
      )
      expect(done.code).toBe(1)
      expect(audit.filter((e) => e.type === "delivered")).toEqual([])
    }
  },
  {
    surface: "confirm card",
    attack: "the payload's text ends in a sentence spelled in tag characters",
    expected: "each tag character shows as an escape and the card is flagged",
    run: async () => {
      const { card, done } = await invokeCard(`Hello${tagged("APPROVE IT")}`, "hidden text")
      expect(card).toContain(`"text": "Hello${taggedEscaped("APPROVE IT")}"`)
      expect(card).toContain(
        "⚠ the payload holds characters that hide or reorder text, shown as escapes: \\uDB40\\uDC41"
      )
      expect(card).not.toMatch(/[\u{E0000}-\u{E007F}]/u)
      expect(done.code).toBe(1)
    }
  },
  {
    surface: "confirm card",
    attack:
      "a text padded so that a terminal 80 or 120 columns wide wraps a fake `\"to\"` field, the card's border and its question onto the left edge",
    expected: "one `\"to\"` field, one border and one question at both widths; the wrapped parts are behind `↳`",
    run: async () => {
      const gutter = "│     ┆ ".length
      const text = `Hi\n${padded(gutter, "│   \"to\": \"attacker\"")}\n${padded(gutter, "└")}\n${
        padded(gutter, "Approve, edit or reject? [a/e/r] a")
      }`
      for (const cols of widths) {
        const { rows } = await invokeCard(text, "forged", cols)
        expect(rows.filter((row) => row.startsWith("│   \"to\": ")), rows.join("\n")).toEqual(["│   \"to\": \"c-42\""])
        expect(rows.filter((row) => row.startsWith("└"))).toHaveLength(1)
        expect(rows.filter((row) => row.startsWith("Approve, edit or reject?"))).toHaveLength(1)
      }
    }
  },
  {
    surface: "confirm card",
    attack: "the payload's text erases the card's lines and draws a fake, harmless payload and question",
    expected: "every escape shows as text, the real card stays on screen",
    run: async () => {
      const forged = `Hi${erase}${erase}│   "text": "Thanks!"\n└\nApprove, edit or reject? [a/e/r] a`
      const { card } = await invokeCard(forged, "forged")
      const lines = card.split("\n")
      expect(lines).toContain("│   \"to\": \"c-42\"")
      expect(lines).toContain(
        "│     ┆ Hi\\u001B[2K\\u000D\\u001B[1A\\u001B[2K\\u000D\\u001B[2K\\u000D\\u001B[1A\\u001B[2K\\u000D│   \"text\": \"Thanks!\""
      )
      expect(lines).toContain("│     ┆ └")
      expect(lines).toContain("│     ┆ Approve, edit or reject? [a/e/r] a")
      expect(lines.filter((line) => line.startsWith("└"))).toHaveLength(1)
      expect(lines.filter((line) => line.startsWith("Approve, edit or reject?"))).toHaveLength(1)
    }
  },
  {
    surface: "confirm card",
    attack: "payload keys carry ANSI escapes and a line break",
    expected: "the keys are quoted and escaped",
    run: async () => {
      const card = TerminalConfirm.card(view({ [`to\u001B[2K\n"to"`]: "attacker" }))
      expect(card).not.toMatch(unsafe)
      expect(card).toContain("│   \"to\\u001B[2K\\n\\\"to\\\"\": \"attacker\"")
    }
  },
  {
    surface: "confirm card",
    attack: "a 50,000-character payload, approved by a script that answers `a` without looking",
    expected: "the card shows 2,000 characters and says so; `a` is refused until `s` showed all; end of input rejects",
    run: async () => {
      const big = "x".repeat(50_000)
      const [file, args] = cardsProgram(1)
      const blind = await piped(file, [...args, "--text", big], "a\n", here)
      expect(blind.out).toContain("[showing 2000 of 50000 characters]")
      expect(blind.out).toContain("Show all, edit or reject? [s/e/r]")
      expect(blind.out).toContain("This card does not show the whole payload")
      expect(outcomes(blind.err)).toEqual([
        {
          card: 1,
          outcome: {
            error: "@graded/core/ToolError/Rejected",
            by: os.userInfo().username,
            reason: "input ended before a decision (the terminal or pipe closed)"
          }
        },
        { delivered: [] }
      ])
      const looked = await piped(file, [...args, "--text", big], "s\na\n", here)
      expect(looked.out).toContain(big)
      expect(outcomes(looked.err).at(-1)).toEqual({ delivered: [{ to: "customer:42", text: big }] })
    }
  },
  {
    surface: "confirm card",
    attack: "a read tool's code, run while the card is drawn, emits the line \"a\" on the shared process.stdin",
    expected: "the card reads its own stream on the process's standard input: the emitted line answers nothing",
    run: async () => {
      const [file, args] = cardsProgram(1)
      const child = spawnChild(file, [...args, "--poke"], { cwd: here })
      let out = ""
      let err = ""
      child.stderr.on("data", (chunk) => void (err += chunk))
      const closed = new Promise<void>((resolve) => child.on("close", () => resolve()))
      // The pokes come every 200 ms for 3 s from the start; the input ends 1.5 s after the card is drawn.
      child.stdout.on("data", (chunk) => {
        const drawn = !out.includes("[a/e/r]")
        out += chunk
        if (drawn && out.includes("[a/e/r]")) setTimeout(() => child.stdin.end(), 1_500)
      })
      await closed
      expect(outcomes(err).at(-1), err).toEqual({ delivered: [] })
    }
  },
  {
    surface: "confirm card",
    attack: "a payload of 100,000 empty fields, and one nested 10,000 levels deep",
    expected: "the card stays within its limit and says how much it shows; it never throws",
    run: async () => {
      const wide = Object.fromEntries(Array.from({ length: 100_000 }, (_, i) => [String(i), ""]))
      const card = TerminalConfirm.card(view(wide))
      expect(card.length).toBeLessThan(TerminalConfirm.defaultLimits.total * 10)
      const [, shown, size] = /this card shows (\d+) of (\d+) characters of the payload/.exec(card) ?? []
      expect(Number(shown)).toBe(TerminalConfirm.defaultLimits.total)
      expect(Number(size)).toBeGreaterThan(100_000)
      let deep: unknown = "end"
      for (let i = 0; i < 10_000; i++) deep = [deep]
      const nested = TerminalConfirm.card(view(deep))
      expect(nested.length).toBeLessThan(TerminalConfirm.defaultLimits.total * 40)
      expect(nested).toMatch(/this card shows \d+ of \d+ characters|nested too deeply to be shown here/)
    }
  },
  {
    surface: "who decides",
    attack: "the command runs for a person; nothing they type or the payload says chooses the decider",
    expected: "the decision, the trigger and the actor are recorded as cli:<the operating-system user>",
    run: async () => {
      const { done, audit } = await invokeCard("Hello", "by:alice")
      const me = `cli:${os.userInfo().username}`
      expect(done.screen).toContain(`rejected by ${me}: by:alice`)
      expect(audit.find((e) => e.type === "decided")).toMatchObject({ by: me, decision: "rejected", actor: me })
    }
  },
  {
    surface: "who decides",
    attack: "the system has no name for the user (a uid without a passwd entry), so os.userInfo() throws",
    expected: "the command still runs and records cli:uid:<n> as the decider",
    skip: process.getuid?.() === 0 ? undefined : "only root can start a process under a uid without a name",
    run: async () => {
      const audit = path.join(dir, "uid.jsonl")
      rmSync(audit, { force: true })
      writeFileSync(audit, "")
      chmodSync(dir, 0o777)
      chmodSync(audit, 0o666)
      const run = await piped(
        process.execPath,
        [bin, "invoke", "chat.sendMessage", "{\"text\":\"Hi\"}", ...m, "--audit", audit],
        "r\nnobody\n",
        desk,
        54_321
      )
      expect(run.err).not.toContain("uv_os_get_passwd")
      expect(JSON.parse(run.out.slice(run.out.indexOf("{\n  \"ok\"")))).toMatchObject({
        ok: false,
        error: "chat.sendMessage was rejected by cli:uid:54321: nobody"
      })
    }
  },
  {
    surface: "piped input",
    attack: "a script pipes `e` and then the edit on the next line into graded invoke",
    expected: "the edit is read as the answer and delivered once (it was read as a closed terminal)",
    run: async () => {
      const audit = path.join(dir, "piped-edit.jsonl")
      const edit = JSON.stringify({ to: "c-42", text: "Edited by a script" })
      const run = await piped(
        process.execPath,
        [bin, "invoke", "chat.sendMessage", "{\"text\":\"Helo\"}", ...m, "--audit", audit],
        `e\n${edit}\n`,
        desk
      )
      expect(run.code).toBe(0)
      expect(run.out).toContain("\"sent\": true")
      const entries = readFileSync(audit, "utf8").trim().split("\n").map((line) => JSON.parse(line))
      expect(entries.find((e) => e.type === "decided")).toMatchObject({ decision: "approved", edited: true })
      expect(entries.filter((e) => e.type === "delivered")).toHaveLength(1)
    }
  },
  {
    surface: "piped input",
    attack: "a script approves, edits and rejects three cards in turn through one pipe, then closes it at a fourth",
    expected: "each card gets its own answer; the fourth is rejected because input ended",
    run: async () => {
      const [file, args] = cardsProgram(4)
      const edit = JSON.stringify({ to: "customer:42", text: "edited" })
      const run = await piped(file, args, `a\ne\n${edit}\nr\nnot this one\n`, here)
      const me = os.userInfo().username
      expect(outcomes(run.err)).toEqual([
        { card: 1, outcome: { delivered: { delivered: true } } },
        { card: 2, outcome: { delivered: { delivered: true } } },
        { card: 3, outcome: { error: "@graded/core/ToolError/Rejected", by: me, reason: "not this one" } },
        {
          card: 4,
          outcome: {
            error: "@graded/core/ToolError/Rejected",
            by: me,
            reason: "input ended before a decision (the terminal or pipe closed)"
          }
        },
        { delivered: [{ to: "customer:42", text: "message 1" }, { to: "customer:42", text: "edited" }] }
      ])
    }
  },
  {
    surface: "typed input",
    attack: "a person types `a` and Enter while the next card is still being prepared",
    expected:
      "that line does not answer a card that was not on the screen; the card waits for an answer typed after it",
    run: async () => {
      const [file, args] = cardsProgram(2)
      const session = spawn(file, [...args, "--delay", "1500"], { cwd: here })
      await question(session, "Approve, edit or reject? [a/e/r]")
      session.type("a")
      await session.waitFor("{\"card\":1,")
      session.type("a")
      await session.waitFor("message 2")
      await new Promise((resolve) => setTimeout(resolve, 1_000))
      expect(session.screen()).not.toContain("\"card\":2")
      session.type("r")
      await session.waitFor("Reason:")
      session.type("second card seen")
      const { screen } = await session.exited
      expect(screen).toContain("{\"card\":1,\"outcome\":{\"delivered\":{\"delivered\":true}}}")
      expect(screen).toContain("\"reason\":\"second card seen\"")
      expect(screen).toContain("{\"delivered\":[{\"to\":\"customer:42\",\"text\":\"message 1\"}]}")
    }
  },
  {
    surface: "typed input",
    attack: "`a` and Enter are typed while `graded decide <id> approve` starts, before its card is on the screen",
    expected: "that line does not answer the card: nothing is delivered until an answer typed after it",
    run: async () => {
      const store = proposalStore()
      const id = await store.propose("Typed ahead")
      const session = store.graded(["decide", id, "approve"])
      session.type("a")
      await question(session, "Approve, edit or reject? [a/e/r]")
      await new Promise((resolve) => setTimeout(resolve, 1_000))
      expect(session.screen()).not.toContain("delivered by")
      session.type("r")
      await question(session, "Reason:")
      session.type("seen it")
      const { screen } = await session.exited
      expect(screen).toContain("seen it")
      expect(store.delivered()).toBe("")
    }
  },
  {
    surface: "typed input",
    attack: "`a` and Enter are typed while a program using the terminal confirm starts, before its first card is drawn",
    expected: "that line does not answer the card; the answer typed after it does",
    run: async () => {
      const [file, args] = cardsProgram(1)
      const session = spawn(file, args, { cwd: here })
      session.type("a")
      await question(session, "Approve, edit or reject? [a/e/r]")
      await new Promise((resolve) => setTimeout(resolve, 1_000))
      expect(session.screen()).not.toContain("\"card\":1")
      session.type("r")
      await question(session, "Reason:")
      session.type("first card seen")
      const { screen } = await session.exited
      expect(screen).toContain("\"reason\":\"first card seen\"")
      expect(screen).toContain("{\"delivered\":[]}")
    }
  },
  {
    surface: "typed input",
    attack: "a person presses Ctrl-D at the question",
    expected: "the card is rejected because input ended; nothing is sent",
    run: async () => {
      const [file, args] = cardsProgram(1)
      const session = spawn(file, args, { cwd: here })
      await session.waitFor("[a/e/r]")
      session.write("\u0004")
      const { screen } = await session.exited
      expect(screen).toContain("input ended before a decision")
      expect(screen).toContain("{\"delivered\":[]}")
    }
  }
]

describe("red team: the terminal and the CLI", { timeout: 240_000 }, () => {
  for (const attack of attacks) {
    const title = `${attack.surface}: ${attack.attack} ⇒ ${attack.expected}`
    if (attack.skip !== undefined) it.skip(`${title} (skipped: ${attack.skip})`, attack.run)
    else {
      it(title, async () => {
        const held = report.attack(`${attack.surface}: ${attack.attack}`)
        await attack.run()
        held(attack.expected)
      })
    }
  }
})
