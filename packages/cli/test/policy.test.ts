// `graded manifest` and `graded review`, the command line run in this process
// (inProcess.ts) on the modules in fixtures/: a policy that passes the four questions and one two
// of whose tools fail them.
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"
import { Manifest, Policy } from "@graded/policy"
import { clean, withFlaws } from "./fixtures/policyDesk.js"
import { graded as run } from "./inProcess.js"

const here = path.dirname(fileURLToPath(import.meta.url))
const fixtures = path.resolve(here, "fixtures")

const graded = (...args: Array<string>) => run(args, { cwd: fixtures })

describe("graded manifest and graded review", () => {
  it("manifest: a table of every tool; --json prints exactly Manifest.json of the module's policy", async () => {
    const [table, json] = await Promise.all([
      graded("-m", "policy-flawed.config.ts", "manifest"),
      graded("manifest", "-m", "policy-flawed.config.ts", "--json")
    ])
    expect(table.code).toBe(0)
    const lines = table.out.trimEnd().split("\n")
    expect(lines[0]).toMatch(
      /^tool\s+wire\s+grade\s+roles\s+tags\s+side effects\s+guidelines\s+forbidden by\s+production\s+test tenant$/
    )
    expect(lines.find((line) => line.startsWith("credit.score"))).toMatch(
      /^credit\.score\s+credit__score\s+read\s+credit-officer\s+pii, credit-bureau\s+records an inquiry at the credit bureau\s+credit-scores\s+-\s+on\s+on$/
    )
    expect(lines.find((line) => line.startsWith("account.note"))).toContain("off (review: Q3 side effect not audited)")
    expect(lines.find((line) => line.startsWith("account.search"))).toContain("off (review: Q1 excess input)")
    expect(json.code).toBe(0)
    // The bytes a reviewer diffs: the same as the library's, rows sorted by tool.
    expect(json.out).toBe(Manifest.json(Policy.manifest(withFlaws)))
    expect(JSON.parse(json.out).map((row: { tool: string }) => row.tool)).toEqual([
      "account.note",
      "account.search",
      "credit.score",
      "kb.search",
      "transfer.send"
    ])
  })

  it("review: each finding names the tool and the question; exit 1 on findings, 0 without", async () => {
    const [flawed, good, json] = await Promise.all([
      graded("-m", "policy-flawed.config.ts", "review"),
      graded("-m", "policy.config.ts", "review"),
      graded("-m", "policy-flawed.config.ts", "review", "--json")
    ])
    expect(flawed.code).toBe(1)
    expect(flawed.out).toContain("2 findings on 2 tools:")
    expect(flawed.out).toContain("account.search: question 1 (excess input): account.search admits fields")
    expect(flawed.out).toContain("account.note: question 3 (side effect not audited): account.note is a write tool")
    expect(flawed.out).not.toContain("credit.score:")
    expect(good.code).toBe(0)
    expect(good.out).toContain("No findings: every tool passes the four questions.")
    expect(json.code).toBe(1)
    expect(JSON.parse(json.out)).toEqual(Policy.review(withFlaws))
    expect(Policy.review(clean)).toEqual([])
  })

  it("manifest --check: the review and the conflict checks; exit 1 on any error, 0 on warnings alone", async () => {
    const [flawed, good, conflict, warning, json] = await Promise.all([
      graded("-m", "policy-flawed.config.ts", "manifest", "--check"),
      graded("-m", "policy.config.ts", "manifest", "--check"),
      graded("-m", "policy-conflict.config.ts", "manifest", "--check"),
      graded("-m", "policy-warning.config.ts", "manifest", "--check"),
      graded("-m", "policy-conflict.config.ts", "manifest", "--check", "--json")
    ])
    expect(flawed.code).toBe(1)
    expect(flawed.out).toContain("account.search: question 1 (excess input)")
    expect(good.code).toBe(0)
    expect(good.out).toContain("No findings: every tool passes the four questions.")
    // Every tool passes the review, but two guidelines disagree about transfers at equal priority.
    expect(conflict.code).toBe(1)
    expect(conflict.out).toContain("No findings: every tool passes the four questions.")
    expect(conflict.out).toContain("error conflict: transfers, no-transfers-on-new-accounts (transfer.send)")
    // A guideline for a role the module does not declare is a warning: it is printed, and passes.
    expect(warning.code).toBe(0)
    expect(warning.out).toContain("unreachable")
    expect(warning.out).toContain("ceo-transfers")
    expect(json.code).toBe(1)
    const parsed = JSON.parse(json.out)
    expect(parsed.review).toEqual([])
    expect(parsed.conflicts).toEqual([
      expect.objectContaining({ kind: "conflict", severity: "error", tool: "transfer.send" })
    ])
  })

  it("a module without a policy is told so (exit 2); a policy not made by Policy.make is refused (exit 1)", async () => {
    const [manifest, review, bad] = await Promise.all([
      graded("-m", "nostore.config.ts", "manifest"),
      graded("-m", "nostore.config.ts", "review"),
      graded("-m", "policy-bad.config.ts", "manifest")
    ])
    expect(manifest.code).toBe(2)
    expect(manifest.err).toContain("nostore.config.ts exports no policy: graded manifest reads the one it exports")
    expect(review.code).toBe(2)
    expect(review.err).toContain("exports no policy: graded review reads")
    expect(bad.code).toBe(1)
    expect(bad.err).toContain("policy-bad.config.ts: \"policy\" must be a policy made by Policy.make")
    expect(`${manifest.out}${bad.out}`).toBe("")
  })
})
