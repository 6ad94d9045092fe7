import { spawnSync } from "node:child_process"
import { mkdtempSync, readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"

const here = path.dirname(fileURLToPath(import.meta.url))
const bin = path.resolve(here, "../bin/graded.mjs")
const desk = path.resolve(here, "../../../examples/support-desk")

const graded = (...args: Array<string>) => {
  // A hang fails the test instead of blocking it: spawnSync stops vitest's own timers.
  const result = spawnSync("node", [bin, ...args], { cwd: desk, encoding: "utf8", input: "", timeout: 30_000 })
  return { out: result.stdout, err: result.stderr, code: result.status }
}
const m = ["-m", "src/graded.config.ts"]

describe("graded", () => {
  it("list: each tool with whether it is offered and why not", () => {
    const { code, out } = graded("list", ...m, "--autonomous")
    expect(code).toBe(0)
    expect(out).toContain("kb.search             read   offered")
    expect(out).toContain("chat.sendMessage      send   not offered: chat.sendMessage (send) needs SendCapability")
    const human = graded("list", ...m)
    expect(human.out).toMatch(/chat\.sendMessage\s+send\s+offered/)
  })

  it("schemas: the OpenAI definitions, with wire names", () => {
    const { code, out } = graded("schemas", ...m, "--autonomous")
    expect(code).toBe(0)
    const definitions = JSON.parse(out)
    expect(definitions.map((d: { name: string }) => d.name)).toEqual(["kb__search", "conversation__current", "customer__lookup"])
    expect(definitions.every((d: { strict: boolean }) => d.strict)).toBe(true)
  })

  it("plan: runs the quick-ticket flow a person started, and audits every step", () => {
    const audit = path.join(mkdtempSync(path.join(tmpdir(), "graded-")), "plan.jsonl")
    const { code, out } = graded("plan", "quick-ticket", ...m, "--audit", audit)
    expect(code).toBe(0)
    expect(JSON.parse(out)).toEqual({ ok: true, data: { id: "T-1200" } })
    const steps = readFileSync(audit, "utf8").trim().split("\n").map((l) => JSON.parse(l)).filter((e) => e.type === "step" && e.status === "completed")
    expect(steps.map((e) => `${e.index}:${e.step}`)).toEqual([
      "1:open the form",
      "2:read the conversation",
      "3:look up the customer",
      "4:write the summary",
      "5:fill the fields",
      "6:validate",
      "7:submit"
    ])
    const readable = graded("audit", audit)
    expect(readable.code).toBe(0)
    expect(readable.out).toContain("human cli:")
    expect(readable.out).toContain("plan quick-ticket, step 7 (submit, write): completed")
  })

  it("says clearly what is wrong: bad JSON, an unknown plan, a module without a toolkit", () => {
    const json = graded("invoke", "kb.search", "{query", ...m)
    expect(json.code).toBe(1)
    expect(json.err).toContain("The input is not JSON")
    const plan = graded("plan", "nope", ...m)
    expect(plan.code).toBe(1)
    expect(plan.err).toContain("There is no plan named nope (plans: quick-ticket)")
    const module = graded("list", "-m", "src/tools.ts")
    expect(module.code).toBe(1)
    expect(module.err).toContain("must export a toolkit")
    const refused = graded("invoke", "kb.serch", "{}", ...m)
    expect(refused.code).toBe(1)
    expect(JSON.parse(refused.out)).toMatchObject({ ok: false, code: "unknown-tool" })
  })

  it("a send with no terminal to answer is rejected, never sent", () => {
    const { code, out } = graded("invoke", "chat.sendMessage", "{\"text\":\"Hi\"}", ...m)
    expect(code).toBe(1)
    // The card and the question came first; the result is the JSON after them.
    expect(out).toContain("Approve, edit or reject? [a/e/r]")
    expect(JSON.parse(out.slice(out.indexOf("{\n  \"ok\"")))).toMatchObject({ ok: false, code: "rejected" })
  })
})
