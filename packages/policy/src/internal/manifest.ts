// The permission manifest: every tool with its grade, the roles its
// guidelines admit, its tags and side effects, the guidelines that authorize
// and forbid it, and whether it is on in production and in a test tenant.
// Everything sorted, so that the JSON diffs cleanly in review.
import { Wire } from "@graded/core"
import type { Condition } from "../Condition.js"
import type { Any as Guideline } from "../Guideline.js"
import type { Compiled } from "./policy.js"
import type { Finding } from "./review.js"

export interface Row {
  readonly tool: string
  readonly wire: string
  readonly grade: "read" | "write" | "send"
  readonly roles: ReadonlyArray<string> | "any"
  readonly tags: ReadonlyArray<string>
  readonly sideEffects: ReadonlyArray<string>
  readonly guidelines: ReadonlyArray<string>
  readonly forbiddenBy: ReadonlyArray<string>
  readonly production: string
  readonly testTenant: string
}

type Roles = ReadonlySet<string> | "any"

const intersect = (a: Roles, b: Roles): Roles =>
  a === "any" ? b : b === "any" ? a : new Set([...a].filter((role) => b.has(role)))

const union = (a: Roles, b: Roles): Roles => a === "any" || b === "any" ? "any" : new Set([...a, ...b])

// The roles a condition can hold for: a superset ("any" when it does not
// pin the role to a list, as under a `not`).
const rolesOf = (condition: Condition): Roles => {
  switch (condition.op) {
    case "equals":
      return condition.path !== "role" ? "any" : new Set(typeof condition.value === "string" ? [condition.value] : [])
    case "in":
      return condition.path !== "role"
        ? "any"
        : new Set(condition.values.filter((value): value is string => typeof value === "string"))
    case "and":
      return condition.all.reduce<Roles>((roles, part) => intersect(roles, rolesOf(part)), "any")
    case "or":
      return condition.any.reduce<Roles>((roles, part) => union(roles, rolesOf(part)), new Set())
    default:
      return "any"
  }
}

const sorted = (values: Iterable<string>) => [...values].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))

export const make = (compiled: Compiled, findings: ReadonlyArray<Finding>): ReadonlyArray<Row> => {
  // A guideline matches only when those it requires match too.
  const memo = new Map<string, Roles>()
  const guidelineRoles = (guideline: Guideline, visiting: Set<string>): Roles => {
    const known = memo.get(guideline.id)
    if (known !== undefined) return known
    if (visiting.has(guideline.id)) return new Set()
    visiting.add(guideline.id)
    let roles = rolesOf(guideline.when)
    for (const id of guideline.requires) {
      const required = compiled.byId.get(id)
      if (required !== undefined) roles = intersect(roles, guidelineRoles(required, visiting))
    }
    visiting.delete(guideline.id)
    memo.set(guideline.id, roles)
    return roles
  }
  const failed = new Map<string, Set<string>>()
  for (const finding of findings) {
    const set = failed.get(finding.tool) ?? new Set()
    set.add(`Q${finding.question} ${finding.title}`)
    failed.set(finding.tool, set)
  }
  const testTenants = compiled.testTenants.size > 0
  const rows = compiled.tools.map((tool): Row => {
    const authorizers = compiled.authorizers.get(tool.name) ?? []
    const roles = authorizers.reduce<Roles>(
      (all, guideline) => union(all, guidelineRoles(guideline, new Set())),
      new Set()
    )
    const off: Array<string> = []
    if (authorizers.length === 0) off.push("no guideline")
    const review = failed.get(tool.name)
    if (review !== undefined) off.push(`review: ${sorted(review).join(", ")}`)
    const production = off.length === 0 ? "on" : `off (${off.join("; ")})`
    return {
      tool: tool.name,
      wire: Wire.toWire(tool.name),
      grade: tool.grade,
      roles: roles === "any" ? "any" : sorted(roles),
      tags: [...(tool.tags ?? [])],
      sideEffects: [...(tool.sideEffects ?? [])],
      guidelines: sorted(authorizers.map((guideline) => guideline.id)),
      forbiddenBy: sorted((compiled.forbidders.get(tool.name) ?? []).map((guideline) => guideline.id)),
      production,
      testTenant: off.length === 0 || testTenants ? "on" : "off (no test tenant)"
    }
  })
  return rows.sort((a, b) => (a.tool < b.tool ? -1 : a.tool > b.tool ? 1 : 0))
}

const ordered = (row: Row): Row => ({
  tool: row.tool,
  wire: row.wire,
  grade: row.grade,
  roles: row.roles === "any" ? "any" : [...row.roles],
  tags: [...row.tags],
  sideEffects: [...row.sideEffects],
  guidelines: [...row.guidelines],
  forbiddenBy: [...row.forbiddenBy],
  production: row.production,
  testTenant: row.testTenant
})

const byTool = (rows: ReadonlyArray<Row>) => [...rows].sort((a, b) => (a.tool < b.tool ? -1 : a.tool > b.tool ? 1 : 0))

export const json = (rows: ReadonlyArray<Row>): string => `${JSON.stringify(byTool(rows).map(ordered), null, 2)}\n`

const list = (values: ReadonlyArray<string> | "any") =>
  values === "any" ? "any" : values.length === 0 ? "-" : values.join(", ")

const headers = [
  "tool",
  "wire",
  "grade",
  "roles",
  "tags",
  "side effects",
  "guidelines",
  "forbidden by",
  "production",
  "test tenant"
] as const

export const table = (rows: ReadonlyArray<Row>): string => {
  const cells = byTool(rows).map((row) => [
    row.tool,
    row.wire,
    row.grade,
    list(row.roles),
    list(row.tags),
    list(row.sideEffects),
    list(row.guidelines),
    list(row.forbiddenBy),
    row.production,
    row.testTenant
  ])
  const widths = headers.map((header, i) => Math.max(header.length, ...cells.map((line) => line[i]!.length)))
  const line = (values: ReadonlyArray<string>) =>
    values.map((value, i) => (i === values.length - 1 ? value : value.padEnd(widths[i]!))).join("  ")
  return [line(headers), line(widths.map((width) => "-".repeat(width))), ...cells.map(line)].join("\n")
}
