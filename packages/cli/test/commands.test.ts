// The command line, run in this process (inProcess.ts) on the support desk
// example; smoke.test.ts starts it as a user does.
import { mkdtempSync, readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"
import { graded as run } from "./inProcess.js"

const here = path.dirname(fileURLToPath(import.meta.url))
const desk = path.resolve(here, "../../../examples/support-desk")

const graded = (...args: Array<string>) => run(args, { cwd: desk })
const m = ["-m", "src/graded.config.ts"]
// effect/cli colors its help where it detects a terminal that can show colors.
// eslint-disable-next-line no-control-regex -- \u001b starts the ANSI color codes it strips
const plain = (text: string) => text.replace(/\u001b\[[0-9;]*m/g, "")

describe("graded", () => {
  it("list: each tool with whether it is offered and why not", async () => {
    const { code, out } = await graded("list", ...m, "--autonomous")
    expect(code).toBe(0)
    expect(out).toContain("kb.search             read   offered")
    expect(out).toContain("chat.sendMessage      send   not offered: chat.sendMessage (send) needs SendCapability")
    const human = await graded("list", ...m)
    expect(human.out).toMatch(/chat\.sendMessage\s+send\s+offered/)
  })

  it("schemas: the OpenAI definitions, with wire names", async () => {
    const { code, out } = await graded("schemas", ...m, "--autonomous")
    expect(code).toBe(0)
    const definitions = JSON.parse(out)
    expect(definitions.map((d: { name: string }) => d.name)).toEqual([
      "kb__search",
      "conversation__current",
      "customer__lookup"
    ])
    expect(definitions.every((d: { strict: boolean }) => d.strict)).toBe(true)
  })

  it("plan: runs the quick-ticket flow a person started, and audits every step", async () => {
    const audit = path.join(mkdtempSync(path.join(tmpdir(), "graded-")), "plan.jsonl")
    const { code, out } = await graded("plan", "quick-ticket", ...m, "--audit", audit)
    expect(code).toBe(0)
    expect(JSON.parse(out)).toEqual({ ok: true, data: { id: "T-1200" } })
    const steps = readFileSync(audit, "utf8").trim().split("\n").map((l) => JSON.parse(l)).filter((e) =>
      e.type === "step" && e.status === "completed"
    )
    expect(steps.map((e) => `${e.index}:${e.step}`)).toEqual([
      "1:open the form",
      "2:read the conversation",
      "3:look up the customer",
      "4:write the summary",
      "5:fill the fields",
      "6:validate",
      "7:submit"
    ])
    const readable = await graded("audit", audit)
    expect(readable.code).toBe(0)
    expect(readable.out).toContain("human cli:")
    expect(readable.out).toContain("plan quick-ticket, step 7 (submit, write): completed")
  })

  it("says clearly what is wrong: bad JSON, an unknown plan, a module without a toolkit", async () => {
    const [json, plan, module, refused] = await Promise.all([
      graded("invoke", "kb.search", "{query", ...m),
      graded("plan", "nope", ...m),
      graded("list", "-m", "src/tools.ts"),
      graded("invoke", "kb.serch", "{}", ...m)
    ])
    expect(json.code).toBe(1)
    expect(json.err).toContain("The input is not JSON")
    expect(plan.code).toBe(1)
    expect(plan.err).toContain("There is no plan named nope (plans: quick-ticket)")
    expect(module.code).toBe(1)
    expect(module.err).toContain("must export a toolkit")
    expect(refused.code).toBe(1)
    expect(JSON.parse(refused.out)).toMatchObject({ ok: false, code: "unknown-tool" })
  })

  it("takes the module before the command (as a package script passes it) or after it; the later one wins", async () => {
    const [before, after, overridden, overriding] = await Promise.all([
      graded("--module", "src/graded.config.ts", "list", "--autonomous"),
      graded("list", "--autonomous", "--module", "src/graded.config.ts"),
      graded("-m", "src/tools.ts", "list", ...m),
      graded(...m, "list", "-m", "src/tools.ts")
    ])
    for (const run of [before, after, overridden]) {
      expect(run.code).toBe(0)
      expect(run.out).toContain("kb.search             read   offered")
    }
    expect(overriding.code).toBe(1)
    expect(overriding.err).toContain("src/tools.ts must export a toolkit")
  })

  it("--help prints the usage and an example, for the command and for each subcommand", async () => {
    const expected = {
      list: "$ graded list --autonomous --page ticket",
      invoke: "$ graded invoke kb.search '{\"query\":\"invoice\"}'",
      plan: "$ graded plan quick-ticket --audit audit.jsonl",
      schemas: "$ graded schemas --autonomous",
      audit: "$ graded audit audit.jsonl",
      decide: "$ graded decide p-3 edit",
      runs: "$ graded runs --status waiting --json",
      resume: "$ graded resume run-1",
      cancel: "$ graded cancel run-1 --reason \"the customer called\""
    }
    const [top, ...subs] = await Promise.all([
      graded("--help"),
      ...Object.keys(expected).map((name) => graded(name, "--help"))
    ])
    expect(top?.code).toBe(0)
    const help = plain(top?.out ?? "")
    expect(help).toContain("USAGE")
    expect(help).toContain("COMMANDS")
    expect(help).toContain("EXAMPLES")
    for (const example of Object.values(expected)) expect(help).toContain(example)
    Object.entries(expected).forEach(([name, example], i) => {
      const sub = subs[i]
      expect(sub?.code, name).toBe(0)
      const text = plain(sub?.out ?? "")
      expect(text, name).toContain(`$ graded ${name}`)
      expect(text, name).toContain("EXAMPLE")
      expect(text, name).toContain(example)
    })
  })

  it("an unknown command, an unknown option or a missing argument: what is wrong and exit code 2, no stack of JSON", async () => {
    const [unknown, option, missing] = await Promise.all([
      graded("frob"),
      graded("list", ...m, "--frob"),
      graded("invoke", ...m)
    ])
    expect(unknown.code).toBe(2)
    expect(unknown.err).toContain(`Unknown subcommand "frob" for "graded"`)
    expect(unknown.err).toContain("Usage: graded [-m module] <command> [options]")
    for (
      const name of ["list", "invoke", "plan", "schemas", "audit", "pending", "decide", "runs", "resume", "cancel"]
    ) {
      expect(unknown.err).toMatch(new RegExp(`^  ${name} +\\S`, "m"))
    }
    expect(option.code).toBe(2)
    expect(option.err).toContain("Unrecognized flag: --frob in command graded list")
    expect(missing.code).toBe(2)
    expect(missing.err).toContain("Missing required argument: tool")
    for (const run of [unknown, option, missing]) {
      expect(run.out).toBe("")
      expect(run.err).not.toContain("_tag")
      expect(run.err).not.toMatch(/^\s+at /m)
    }
  })

  it("a send with no terminal to answer is rejected, never sent", async () => {
    const { code, out } = await graded("invoke", "chat.sendMessage", "{\"text\":\"Hi\"}", ...m)
    expect(code).toBe(1)
    // The card and the question came first; the result is the JSON after them.
    expect(out).toContain("Approve, edit or reject? [a/e/r]")
    expect(JSON.parse(out.slice(out.indexOf("{\n  \"ok\"")))).toMatchObject({ ok: false, code: "rejected" })
  })
})
