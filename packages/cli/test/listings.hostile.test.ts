// What `graded pending` and `graded decide` show a person when the stored
// fields are hostile, in a real pseudo-terminal. The stores are seeded by
// fixtures/hostile.config.ts (public API only); GRADED_HOSTILE picks the seed.
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, describe, expect, it } from "vitest"
import { built } from "../../../test/built.js"
import { killAll, spawn } from "./pty.js"

const here = path.dirname(fileURLToPath(import.meta.url))
// The built command and module: plain node runs them, with no compile at each start.
const bin = built("packages/cli/src/main.ts")
const m = ["-m", built("packages/cli/test/fixtures/hostile.config.ts")]

afterAll(() => killAll())

const run = (seed: string, args: ReadonlyArray<string>) =>
  spawn(process.execPath, [bin, ...m, ...args], { cwd: path.join(here, "fixtures"), env: { GRADED_HOSTILE: seed } })

// Characters a terminal draws as nothing: tag characters, soft hyphen,
// Mongolian vowel separator, interlinear annotation controls.
const invisible = /[\u{E0000}-\u{E007F}\u00AD\u180E\uFFF9-\uFFFB]/u

describe("the CLI's listings and cards, with hostile stored fields", { timeout: 120_000 }, () => {
  it("pending: a payload with Unicode tag characters (invisible text) shows them as escapes", async () => {
    const { code, screen } = await run("tags", ["pending"]).exited
    expect(code).toBe(0)
    expect(screen).toContain("Your refund is on its way")
    // What the person reads must hold what runs: no invisible character drawn raw.
    expect(screen).not.toMatch(invisible)
  })

  it("decide: the card for a payload with tag characters flags it and shows them", async () => {
    const cli = run("tags", ["decide", "p-1", "approve"])
    const screen = await cli.waitFor("Approve, edit or reject? [a/e/r]")
    cli.type("r")
    await cli.waitFor("Reason:")
    cli.type("no")
    await cli.exited
    expect(screen).toContain("the payload holds characters that hide or reorder text")
    expect(screen).not.toMatch(invisible)
  })

  it("pending --json: one proposal too deep to encode fails only that item", async () => {
    const { screen } = await run("deep", ["pending", "--json"]).exited
    expect(screen).toContain("first, a normal one")
    expect(screen).toContain("last, a normal one")
  })

  it("decide done: a stored decider with a line break cannot print a line of its own", async () => {
    for (const decision of ["done", "approve"]) {
      const { screen } = await run("rejected-by", ["decide", "p-1", decision]).exited
      expect(screen).toContain("mallory")
      expect(screen.split("\n").some((line) => line.startsWith("PROP-FORGED"))).toBe(false)
    }
  })

  it("pending: OSC 8 links, OSC 52 clipboard, cursor-up/erase in payload and actor stay visible text", async () => {
    const { code, screen } = await run("osc", ["pending"]).exited
    expect(code).toBe(0)
    const lines = screen.split("\n")
    expect(lines.some((line) => line.startsWith("FORGED"))).toBe(false)
    expect(screen).toContain("\\u001b]52;c;")
    expect(screen).toContain("\\u001b]8;;https://evil.example")
    expect(screen).toContain("agent:bot\\u001B[2K\\u000DFORGED ACTOR")
    expect(lines[0]?.startsWith("p-1")).toBe(true)
  })
})
