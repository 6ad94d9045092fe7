import { execFile } from "node:child_process"
import { existsSync, mkdtempSync, readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"
import { built } from "../../../test/built.js"

// Real processes, each with its own connection to one SQLite file: the race is between them.
const here = path.dirname(fileURLToPath(import.meta.url))
const fixtures = path.resolve(here, "fixtures")
const main = built("packages/cli/src/main.ts")
const config = built("packages/cli/test/fixtures/proposals.config.ts")

const store = () => {
  const dir = mkdtempSync(path.join(tmpdir(), "graded-race-"))
  const env = {
    ...process.env,
    GRADED_TEST_DB: path.join(dir, "graded.db"),
    GRADED_TEST_DELIVERED: path.join(dir, "delivered.jsonl")
  }
  const graded = (args: ReadonlyArray<string>, input = "") =>
    new Promise<{ out: string; err: string; code: number | null }>((resolve) => {
      const child = execFile(
        process.execPath,
        [main, "-m", config, ...args],
        { cwd: fixtures, env, encoding: "utf8", timeout: 120_000 },
        (error, out, err) =>
          resolve({ out, err, code: error === null ? 0 : typeof error.code === "number" ? error.code : null })
      )
      child.stdin?.end(input)
    })
  const delivered = (): Array<unknown> =>
    existsSync(env.GRADED_TEST_DELIVERED)
      ? readFileSync(env.GRADED_TEST_DELIVERED, "utf8").trim().split("\n").map((line) => JSON.parse(line))
      : []
  return { graded, delivered }
}

describe("graded decide from several processes at once", { timeout: 240_000 }, () => {
  it("three decide approve processes racing on one proposal deliver once; the others say it was decided", async () => {
    const { delivered, graded } = store()
    const proposed = await graded(["invoke", "chat.sendMessage.propose", JSON.stringify({ text: "once" })])
    expect(proposed.code).toBe(0)
    const id = JSON.parse(proposed.out).data.proposal as string
    const results = await Promise.all([1, 2, 3].map(() => graded(["decide", id, "approve"], "a\n")))
    expect(delivered()).toHaveLength(1)
    expect(results.filter((r) => r.code === 0)).toHaveLength(1)
    for (const r of results) expect(r.err).not.toMatch(/unexpectedly|RangeError|SqlError/)
  })
})
