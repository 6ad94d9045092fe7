// The permission graph and its evaluation. Compiled once: for each tool, the
// guidelines that authorize or forbid it, and the guidelines whose matching
// can change its fate (through `requires` and `excludes`). Evaluated each
// turn, deterministically, against the invocation context: data conditions
// first; a `text` condition only from answers a model gave for this turn.
import { Grade, type Tool, type Toolkit } from "@graded/core"
import type { Condition, Subject } from "../Condition.js"
import type { Contract } from "../Contract.js"
import type { Any as Guideline } from "../Guideline.js"
import { describe, evaluate, hasText, valueAt } from "./condition.js"

export class InvalidPolicy extends TypeError {
  override readonly name = "InvalidPolicy"
  constructor(readonly guideline: string | undefined, readonly issue: string) {
    super(guideline === undefined ? `policy: ${issue}` : `policy: guideline ${guideline} ${issue}`)
  }
}

/** Why a tool is left out, as a kind: the audit's gate is `policy:<kind>`. */
export type Kind =
  | "no-guideline"
  | "no-match"
  | "role"
  | "page"
  | "feature"
  | "consent"
  | "tenant"
  | "fact"
  | "dependency"
  | "excluded"
  | "overshadowed"
  | "forbidden"
  | "precondition"
  | "review"
  | "fallback"

export interface Left {
  readonly kind: Kind
  readonly reason: string
  /** The guidelines that would have authorized it. */
  readonly needed: ReadonlyArray<string>
}

export interface Evaluation {
  readonly offered: ReadonlyArray<string>
  readonly left: ReadonlyMap<string, Left>
  /** The guidelines in force, in precedence order, and how each matched. */
  readonly active: ReadonlyArray<{ readonly id: string; readonly via: "data" | "model" }>
  /** No guideline matched: the fallback tools, if any, are what is offered. */
  readonly fallback: boolean
}

export interface FallbackTools {
  readonly tools: ReadonlyArray<string>
}

export interface Compiled {
  readonly guidelines: ReadonlyArray<Guideline>
  readonly byId: ReadonlyMap<string, Guideline>
  /** Precedence: higher priority first, then id. */
  readonly order: ReadonlyArray<Guideline>
  readonly authorizers: ReadonlyMap<string, ReadonlyArray<Guideline>>
  readonly forbidders: ReadonlyMap<string, ReadonlyArray<Guideline>>
  readonly relevant: ReadonlyMap<string, ReadonlyArray<Guideline>>
  readonly tools: ReadonlyArray<Tool.Any>
  readonly contracts: ReadonlyMap<string, Contract>
  readonly testTenants: ReadonlySet<string>
  readonly fallback: FallbackTools | undefined
  /** Tools the four-question review failed, and why: not offered outside a test tenant. */
  readonly unreviewed: ReadonlyMap<string, string>
  readonly texts: boolean
}

const precedence = (a: Guideline, b: Guideline) => b.priority - a.priority || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)

export const compile = (
  guidelines: ReadonlyArray<Guideline>,
  options: {
    readonly toolkit: Toolkit.Any
    readonly contracts?: ReadonlyArray<Contract> | undefined
    readonly testTenants?: ReadonlyArray<string> | undefined
    readonly fallback?: FallbackTools | undefined
    readonly unreviewed?: ReadonlyMap<string, string> | undefined
  }
): Compiled => {
  const toolkit = options.toolkit
  const byId = new Map<string, Guideline>()
  for (const guideline of guidelines) {
    if (typeof guideline !== "object" || guideline === null || typeof guideline.id !== "string") {
      throw new InvalidPolicy(undefined, "every guideline must be made with Guideline.make")
    }
    if (byId.has(guideline.id)) throw new InvalidPolicy(guideline.id, "appears twice")
    byId.set(guideline.id, guideline)
  }
  const authorizers = new Map<string, Array<Guideline>>()
  const forbidders = new Map<string, Array<Guideline>>()
  for (const tool of toolkit.tools) {
    authorizers.set(tool.name, [])
    forbidders.set(tool.name, [])
  }
  const order = [...guidelines].sort(precedence)
  for (const guideline of order) {
    for (const name of guideline.tools) {
      const tool = toolkit.get(name)
      if (tool === undefined) throw new InvalidPolicy(guideline.id, `names ${name}, which is not in the toolkit`)
      // A guideline cannot lift a grade: only a human's confirmation can.
      if (guideline.autonomous && Grade.isConfirmable(tool.grade)) {
        throw new InvalidPolicy(
          guideline.id,
          `is autonomous but authorizes ${name} (${tool.grade}): a guideline cannot lift a grade; only HumanConfirm can`
        )
      }
      authorizers.get(name)!.push(guideline)
    }
    for (const name of guideline.forbids) {
      if (toolkit.get(name) === undefined) {
        throw new InvalidPolicy(guideline.id, `forbids ${name}, which is not in the toolkit`)
      }
      forbidders.get(name)!.push(guideline)
    }
    for (const other of [...guideline.requires, ...guideline.excludes]) {
      if (!guidelines.some((g) => g.id === other)) {
        throw new InvalidPolicy(guideline.id, `names guideline ${other}, which is not in the policy`)
      }
    }
  }
  const contracts = new Map<string, Contract>()
  for (const contract of options.contracts ?? []) {
    if (toolkit.get(contract.tool) === undefined) {
      throw new InvalidPolicy(undefined, `a contract names ${contract.tool}, which is not in the toolkit`)
    }
    if (contracts.has(contract.tool)) throw new InvalidPolicy(undefined, `${contract.tool} has two contracts`)
    contracts.set(contract.tool, contract)
  }
  const fallback = options.fallback
  for (const name of fallback?.tools ?? []) {
    const tool = toolkit.get(name)
    if (tool === undefined) {
      throw new InvalidPolicy(undefined, `the fallback names ${name}, which is not in the toolkit`)
    }
    if (Grade.isConfirmable(tool.grade)) {
      throw new InvalidPolicy(undefined, `the fallback may run read tools only; ${name} is a ${tool.grade} tool`)
    }
  }
  // Which guidelines can change a tool's fate: its authorizers and
  // forbidders, what they require, and what excludes any of those.
  const excluders = new Map<string, Array<Guideline>>()
  for (const guideline of order) {
    for (const excluded of guideline.excludes) {
      const list = excluders.get(excluded) ?? []
      list.push(guideline)
      excluders.set(excluded, list)
    }
  }
  const relevant = new Map<string, ReadonlyArray<Guideline>>()
  for (const tool of toolkit.tools) {
    const found = new Set<Guideline>()
    const queue = [...authorizers.get(tool.name)!, ...forbidders.get(tool.name)!]
    while (queue.length > 0) {
      const guideline = queue.pop()!
      if (found.has(guideline)) continue
      found.add(guideline)
      for (const id of guideline.requires) queue.push(byId.get(id)!)
      for (const excluder of excluders.get(guideline.id) ?? []) queue.push(excluder)
    }
    relevant.set(tool.name, order.filter((guideline) => found.has(guideline)))
  }
  return {
    guidelines,
    byId,
    order,
    authorizers,
    forbidders,
    relevant,
    tools: toolkit.tools,
    contracts,
    testTenants: new Set(options.testTenants ?? []),
    fallback,
    unreviewed: options.unreviewed ?? new Map(),
    texts: guidelines.some((guideline) => hasText(guideline.when))
  }
}

/** Why one guideline is not in force, when it is not. */
type Standing =
  | { readonly active: true; readonly via: "data" | "model" }
  | {
    readonly active: false
    readonly kind: Kind
    readonly why: string
    /** The fact it reads that was never recorded: it authorizes nothing, and its forbids stand. */
    readonly unknown?: string
  }

const kindOf = (failed: Condition | undefined): Kind => {
  if (failed === undefined) return "no-match"
  if (failed.op === "equals" || failed.op === "in" || failed.op === "has") {
    switch (failed.path) {
      case "role":
        return "role"
      case "page":
        return "page"
      case "features":
        return "feature"
      case "consents":
        return "consent"
      case "tenant":
        return "tenant"
    }
    if (failed.path.startsWith("facts.")) return "fact"
  }
  return "no-match"
}

// Conditions are frozen data: each is described once.
const described = new WeakMap<Condition, string>()
const describeOnce = (condition: Condition): string => {
  let text = described.get(condition)
  if (text === undefined) described.set(condition, text = describe(condition))
  return text
}

const shown = (value: unknown): string =>
  value === undefined ? "unknown" : Array.isArray(value) ? `[${value.map((v) => JSON.stringify(v)).join(", ")}]`
    : JSON.stringify(value)

const whyNot = (failed: Condition | undefined, subject: Subject): string => {
  if (failed === undefined) return "its condition does not hold"
  if (failed.op === "equals" || failed.op === "in" || failed.op === "has") {
    return `${describeOnce(failed)} does not hold (${failed.path} is ${shown(valueAt(subject, failed.path))})`
  }
  if (failed.op === "text") return `${describe(failed)} was not matched`
  return `${describe(failed)} does not hold`
}

/** Which guidelines are in force among `candidates` (in precedence order). */
export const standings = (
  candidates: ReadonlyArray<Guideline>,
  compiled: Compiled,
  subject: Subject,
  texts: ReadonlyMap<string, boolean>
): Map<string, Standing> => {
  const own = new Map<string, Standing>()
  const matchText = (text: string) => texts.get(text) === true
  const ownStanding = (guideline: Guideline): Standing => {
    let standing = own.get(guideline.id)
    if (standing === undefined) {
      const result = evaluate(guideline.when, subject, matchText)
      standing = result.holds
        ? {
          active: true,
          via: hasText(guideline.when) && !evaluate(guideline.when, subject, undefined).holds ? "model" : "data"
        }
        : {
          active: false,
          kind: kindOf(result.failed),
          why: whyNot(result.failed, subject),
          ...(result.truth === "unknown" && result.failed !== undefined && "path" in result.failed
            ? { unknown: result.failed.path }
            : {})
        }
      own.set(guideline.id, standing)
    }
    return standing
  }
  // Dependency: matched only when each required guideline matched too.
  const matched = new Map<string, Standing>()
  const visiting = new Set<string>()
  const matchOf = (guideline: Guideline): Standing => {
    const known = matched.get(guideline.id)
    if (known !== undefined) return known
    if (visiting.has(guideline.id)) {
      return { active: false, kind: "dependency", why: "its requirements form a cycle" }
    }
    visiting.add(guideline.id)
    let standing = ownStanding(guideline)
    if (standing.active || standing.unknown !== undefined) {
      for (const id of guideline.requires) {
        const required = matchOf(compiled.byId.get(id)!)
        if (required.active) continue
        if (required.unknown === undefined) {
          // A requirement that does not match settles it, whatever the unknown fact.
          standing = standing.active
            ? { active: false, kind: "dependency", why: `it requires guideline ${id}, which did not match` }
            : { active: false, kind: standing.kind, why: standing.why }
          break
        }
        // A requirement that reads a fact never recorded leaves this one unknown too.
        if (standing.active) standing = { ...required, why: `it requires guideline ${id}: ${required.why}` }
      }
    }
    visiting.delete(guideline.id)
    matched.set(guideline.id, standing)
    return standing
  }
  // Exclusion, in precedence order: a guideline excluded by one already in
  // force does not count; one that comes into force takes out those it excludes.
  const result = new Map<string, Standing>()
  const active: Array<Guideline> = []
  for (const guideline of candidates) {
    const standing = matchOf(guideline)
    if (!standing.active) {
      result.set(guideline.id, standing)
      continue
    }
    const by = active.find((other) => other.excludes.includes(guideline.id))
    if (by !== undefined) {
      result.set(guideline.id, { active: false, kind: "excluded", why: `guideline ${by.id} excludes it` })
      continue
    }
    for (const id of guideline.excludes) {
      const index = active.findIndex((other) => other.id === id)
      if (index >= 0) {
        active.splice(index, 1)
        result.set(id, { active: false, kind: "excluded", why: `guideline ${guideline.id} excludes it` })
      }
    }
    active.push(guideline)
    result.set(guideline.id, standing)
  }
  return result
}

const isTestTenant = (compiled: Compiled, subject: Subject) =>
  subject.tenant !== undefined && compiled.testTenants.has(subject.tenant)

// A forbid that stands because a fact it reads was never recorded says so.
const unknownWhy = (standing: Standing | undefined): string =>
  standing !== undefined && !standing.active && standing.unknown !== undefined
    ? `: ${standing.unknown} was never recorded, and a forbid stands until it is`
    : ""

/** One tool's fate, given the standings of its relevant guidelines. */
const fate = (
  tool: Tool.Any,
  compiled: Compiled,
  subject: Subject,
  standing: ReadonlyMap<string, Standing>
): Left | undefined => {
  const name = tool.name
  const isActive = (guideline: Guideline) => standing.get(guideline.id)?.active === true
  const authorizers = compiled.authorizers.get(name)!
  const forbidders = compiled.forbidders.get(name)!
  const authorizing = authorizers.filter(isActive)
  // Fail closed: a forbid whose condition reads a fact never recorded stands
  // over what is authorized (what is not is refused as not authorized).
  const forbidding = forbidders.filter((guideline) => {
    const s = standing.get(guideline.id)
    return s !== undefined && (s.active || authorizing.length > 0 && s.unknown !== undefined)
  })
  const needed = authorizers.map((guideline) => guideline.id)
  if (forbidding.length > 0) {
    const top = forbidding[0]!
    if (authorizing.length === 0 || authorizing[0]!.priority <= top.priority) {
      return authorizing.length > 0
        ? {
          kind: "overshadowed",
          reason: `${name} is authorized by guideline ${authorizing[0]!.id} but overshadowed by guideline ${top.id} ` +
            `(priority ${top.priority}), which forbids it${unknownWhy(standing.get(top.id))}`,
          needed
        }
        : {
          kind: "forbidden",
          reason: `guideline ${top.id} forbids ${name} here${unknownWhy(standing.get(top.id))}`,
          needed
        }
    }
  }
  const testTenant = isTestTenant(compiled, subject)
  if (authorizing.length === 0) {
    // A tool no guideline names is off in production and on in a test tenant.
    if (authorizers.length === 0) {
      return testTenant ? undefined : {
        kind: "no-guideline",
        reason: `no guideline authorizes ${name}: it is off outside a test tenant`,
        needed
      }
    }
    const first = authorizers[0]!
    const why = standing.get(first.id) as Extract<Standing, { active: false }> | undefined
    return {
      kind: why?.kind ?? "no-match",
      reason: `${name} needs guideline ${first.id} (${describeOnce(first.when)}): ${why?.why ?? "it does not match"}`,
      needed
    }
  }
  const contract = compiled.contracts.get(name)
  if (contract !== undefined) {
    for (const precondition of contract.preconditions) {
      const result = evaluate(precondition.when, subject, undefined)
      if (!result.holds) {
        return {
          kind: "precondition",
          reason: `${name}: precondition ${precondition.id} failed: ${
            whyNot(result.failed, subject)
          }. ${precondition.message}`,
          needed
        }
      }
    }
  }
  const unreviewed = compiled.unreviewed.get(name)
  if (unreviewed !== undefined && !testTenant) {
    return { kind: "review", reason: `${name} failed the contract review: ${unreviewed}`, needed }
  }
  return undefined
}

/** The candidate set for a context: every tool's fate, from all guidelines. */
export const evaluateAll = (
  compiled: Compiled,
  subject: Subject,
  texts: ReadonlyMap<string, boolean> = new Map()
): Evaluation => {
  const standing = standings(compiled.order, compiled, subject, texts)
  const active = compiled.order.flatMap((guideline) => {
    const s = standing.get(guideline.id)
    return s !== undefined && s.active ? [{ id: guideline.id, via: s.via }] : []
  })
  const fallback = active.length === 0 && compiled.fallback !== undefined
  const offered: Array<string> = []
  const left = new Map<string, Left>()
  for (const tool of compiled.tools) {
    const result = fate(tool, compiled, subject, standing)
    if (result === undefined) offered.push(tool.name)
    else if (fallback && compiled.fallback!.tools.includes(tool.name) && result.kind !== "forbidden") {
      // No guideline matched: a general read tool may run, counted and queued for review.
      offered.push(tool.name)
    } else left.set(tool.name, result)
  }
  return { offered, left, active, fallback }
}

/** One tool's fate only, from the guidelines that can change it: for a call. */
export const decide = (
  compiled: Compiled,
  tool: Tool.Any,
  subject: Subject,
  texts: ReadonlyMap<string, boolean>
): Left | undefined => {
  const relevant = compiled.relevant.get(tool.name)
  if (relevant === undefined) {
    return { kind: "no-guideline", reason: `${tool.name} is not in this policy's toolkit`, needed: [] }
  }
  return fate(tool, compiled, subject, standings(relevant, compiled, subject, texts))
}

/** The text conditions whose answer would change an evaluation: asked of a model before evaluating. */
export const textsIn = (compiled: Compiled): ReadonlyArray<string> => {
  const found = new Set<string>()
  const visit = (condition: Condition): void => {
    switch (condition.op) {
      case "text":
        found.add(condition.text)
        return
      case "and":
        return condition.all.forEach(visit)
      case "or":
        return condition.any.forEach(visit)
      case "not":
        return visit(condition.condition)
      default:
        return
    }
  }
  for (const guideline of compiled.guidelines) visit(guideline.when)
  return [...found]
}
