import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { Tool, Toolkit } from "@graded/core"
import { Condition, Guideline, Manifest, Policy } from "@graded/policy"
import { contracts, guidelines, makeDesk } from "./creditDesk.js"

// The credit desk, with a tool no guideline names and a write that fails the review.
const setup = (order: ReadonlyArray<Guideline.Any> = guidelines, testTenants?: ReadonlyArray<string>) => {
  const desk = makeDesk()
  const Archive = Tool.read("account.archive", {
    title: "Archived statements",
    description: "Old statements.",
    input: Schema.Struct({ customer: Schema.String }),
    output: Schema.Array(Schema.String),
    run: () => Effect.succeed([])
  })
  const Note = Tool.write("account.note", {
    title: "Add a note",
    description: "Adds a note to the account.",
    input: Schema.Struct({ customer: Schema.String, text: Schema.String }),
    output: Schema.Boolean,
    run: () => Effect.succeed(true)
  })
  const toolkit = Toolkit.make(...desk.toolkit.tools, Archive, Note)
  const notes = Guideline.make("notes", {
    description: "Agents and officers note what they did.",
    when: Condition.or(Condition.role("support"), Condition.and(Condition.role("credit-officer"), Condition.always)),
    tools: ["account.note"]
  })
  return Policy.make([...order, notes], { toolkit, contracts: contracts(desk), testTenants })
}

describe("Manifest", () => {
  it("every tool with its grade, roles, tags, side effects, guidelines, and where it is on", () => {
    const rows = Manifest.make(setup(guidelines, ["sandbox"]))
    expect(rows.map((row) => row.tool)).toEqual([
      "account.archive",
      "account.balance",
      "account.note",
      "credit.score",
      "kb.search",
      "loan.offer",
      "ticket.submit",
      "transfer.send"
    ])
    const row = (tool: string) => rows.find((r) => r.tool === tool)!
    expect(row("credit.score")).toEqual({
      tool: "credit.score",
      wire: "credit__score",
      grade: "read",
      roles: ["credit-officer"],
      tags: ["pii", "credit-bureau"],
      sideEffects: ["records an inquiry at the credit bureau"],
      guidelines: ["credit-scores"],
      forbiddenBy: [],
      production: "on",
      testTenant: "on"
    })
    // A dependency narrows the roles: loan-offers reads a fact, but requires credit-scores.
    expect(row("loan.offer").roles).toEqual(["credit-officer"])
    expect(row("kb.search").roles).toEqual(["credit-officer", "support"])
    expect(row("transfer.send")).toMatchObject({ forbiddenBy: ["frozen-accounts"], guidelines: ["transfers"] })
    // Referenced by no guideline: off in production, on in a test tenant.
    expect(row("account.archive")).toMatchObject({
      roles: [],
      guidelines: [],
      production: "off (no guideline)",
      testTenant: "on"
    })
    // Authorized, but it fails the review (a write without side effects).
    expect(row("account.note")).toMatchObject({
      roles: ["credit-officer", "support"],
      guidelines: ["notes"],
      production: "off (review: Q3 side effect not audited)",
      testTenant: "on"
    })
    expect(Policy.manifest(setup(guidelines, ["sandbox"]))).toEqual(rows)
  })

  it("says what the manifest claims: off in production is not offered there, on in a test tenant is", () => {
    const policy = setup(guidelines, ["sandbox"])
    const context = { role: "support" }
    const production = Policy.evaluate(policy, context)
    const sandbox = Policy.evaluate(policy, { ...context, tenant: "sandbox" })
    for (const row of Manifest.make(policy)) {
      if (row.production.startsWith("off")) expect(production.offered, row.tool).not.toContain(row.tool)
    }
    expect(sandbox.offered).toEqual(expect.arrayContaining(["account.archive", "account.note"]))
  })

  it("roles: any when a condition does not pin the role; a test tenant is off when the policy has none", () => {
    const desk = makeDesk()
    const policy = Policy.make([
      Guideline.make("search", { description: "Anyone searches.", when: Condition.always, tools: ["kb.search"] }),
      Guideline.make("not-support", {
        description: "Everyone but support.",
        when: Condition.not(Condition.role("support")),
        tools: ["account.balance"]
      }),
      Guideline.make("never", { description: "Nobody.", when: Condition.or(), tools: ["loan.offer"] })
    ], { toolkit: desk.toolkit, contracts: contracts(desk) })
    const rows = Manifest.make(policy)
    const row = (tool: string) => rows.find((r) => r.tool === tool)!
    expect(row("kb.search").roles).toBe("any")
    expect(row("account.balance").roles).toBe("any")
    expect(row("loan.offer").roles).toEqual([])
    expect(row("credit.score")).toMatchObject({ production: "off (no guideline)", testTenant: "off (no test tenant)" })
    expect(Manifest.table(rows).split("\n").find((line) => line.startsWith("kb.search"))).toMatch(
      /^kb\.search\s+kb__search\s+read\s+any\s+-\s+-\s+search\s+-\s+on\s+on$/
    )
  })

  it("JSON is stable: the same bytes for guidelines given in another order; fixed keys, sorted, a trailing newline", () => {
    const forward = Manifest.json(Manifest.make(setup(guidelines, ["sandbox"])))
    const backward = Manifest.json(Manifest.make(setup([...guidelines].reverse(), ["sandbox"])))
    expect(backward).toBe(forward)
    expect(forward.endsWith("]\n")).toBe(true)
    const parsed = JSON.parse(forward) as Array<Record<string, unknown>>
    expect(Object.keys(parsed[0]!)).toEqual([
      "tool",
      "wire",
      "grade",
      "roles",
      "tags",
      "sideEffects",
      "guidelines",
      "forbiddenBy",
      "production",
      "testTenant"
    ])
    expect(forward).toContain("\n  {\n    \"tool\": \"account.archive\",\n    \"wire\": \"account__archive\",")
    // Rows given in any order print sorted.
    const rows = Manifest.make(setup(guidelines, ["sandbox"]))
    expect(Manifest.json([...rows].reverse())).toBe(forward)
    expect(Manifest.table([...rows].reverse())).toBe(Manifest.table(rows))
  })

  it("the table is aligned: a header, a rule, one line per tool, each column starting at the same place", () => {
    const lines = Manifest.table(Manifest.make(setup(guidelines, ["sandbox"]))).split("\n")
    expect(lines).toHaveLength(10)
    expect(lines[0]).toMatch(/^tool\s+wire\s+grade\s+roles\s+tags\s+side effects\s+guidelines\s+forbidden by/)
    const column = lines[0]!.indexOf("grade")
    for (const line of lines.slice(2)) expect(line.slice(column, column + 5)).toMatch(/^(read |write|send )$/)
    expect(lines.find((line) => line.startsWith("transfer.send"))).toContain(
      "moves money out of the customer's account"
    )
  })

  it("a value not made by Policy.make is refused with a clear error", () => {
    expect(() => Manifest.make({} as Policy.Policy)).toThrow("this policy was not made by Policy.make")
    expect(Policy.isPolicy({})).toBe(false)
    expect(Policy.isPolicy(setup())).toBe(true)
  })
})
