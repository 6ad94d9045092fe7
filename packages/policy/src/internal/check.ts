import type { Condition, Path, Scalar, Subject } from "../Condition.js"
import type { Any } from "../Guideline.js"
import type { Declared, Finding } from "../Check.js"
import { describe, evaluate } from "./condition.js"

/** Thrown where the declared vocabulary is not lists of values. */
export class InvalidDeclared extends TypeError {
  override readonly name = "InvalidDeclared"
  constructor(readonly field: string, readonly issue: string) {
    super(`declared ${field}: ${issue}`)
  }
}

const isScalar = (value: unknown): value is Scalar =>
  typeof value === "string" || typeof value === "number" || typeof value === "boolean"

const scalars = (field: string, value: unknown): ReadonlyArray<Scalar> | undefined => {
  if (value === undefined) return undefined
  if (!Array.isArray(value) || !value.every(isScalar)) {
    throw new InvalidDeclared(field, "must be a list of strings, numbers or booleans")
  }
  return value
}

/** The declared vocabulary as closed domains by path. */
export const domains = (declared: Declared | undefined): Map<string, ReadonlySet<Scalar>> => {
  const found = new Map<string, ReadonlySet<Scalar>>()
  if (declared === undefined) return found
  if (typeof declared !== "object" || declared === null) throw new InvalidDeclared("vocabulary", "must be an object")
  const lists: ReadonlyArray<[string, Path]> = [
    ["roles", "role"],
    ["pages", "page"],
    ["tenants", "tenant"],
    ["features", "features"],
    ["consents", "consents"]
  ]
  for (const [field, path] of lists) {
    const values = scalars(field, (declared as Record<string, unknown>)[field])
    if (values !== undefined) found.set(path, new Set(values))
  }
  const facts: unknown = declared.facts
  if (facts !== undefined) {
    if (typeof facts !== "object" || facts === null || Array.isArray(facts)) {
      throw new InvalidDeclared("facts", "must be an object of lists, by fact name")
    }
    for (const [name, values] of Object.entries(facts)) {
      found.set(`facts.${name}`, new Set(scalars(`facts.${name}`, values)))
    }
  }
  return found
}

// ---------------------------------------------------------------------------
// The solver. A formula reads variables: one per scalar path (its candidate
// values), one boolean per (list path, literal) for `has`, one boolean per
// distinct `text`. Backtracking assigns them in order of first appearance;
// after each assignment the formula is evaluated three-valued (Kleene), which
// prunes a branch as soon as it is false and stops as soon as it is true.
// A candidate solution is checked once more with the real evaluator.

const LIST = Symbol("list")
type Value = Scalar | undefined | typeof LIST

const FALSE = 0
const TRUE = 1
const UNKNOWN = 2
type Truth = 0 | 1 | 2

type Node =
  | { readonly k: "const"; readonly v: Truth }
  | { readonly k: "scalar"; readonly v: number; readonly test: (value: Value) => boolean }
  | { readonly k: "member"; readonly shape: number; readonly v: number }
  | { readonly k: "bool"; readonly v: number }
  | { readonly k: "and"; readonly parts: ReadonlyArray<Node> }
  | { readonly k: "or"; readonly parts: ReadonlyArray<Node> }
  | { readonly k: "not"; readonly part: Node }

type Var =
  | { readonly kind: "scalar"; readonly path: Path; readonly candidates: ReadonlyArray<Value> }
  | {
    readonly kind: "member"
    readonly path: Path
    readonly value: string
    readonly candidates: ReadonlyArray<boolean>
  }
  | { readonly kind: "text"; readonly text: string; readonly candidates: ReadonlyArray<boolean> }

const listPaths = new Set<string>(["features", "consents"])
const nonListPaths = new Set<string>(["role", "page", "tenant", "actor", "autonomous"])

const TRUE_NODE: Node = { k: "const", v: TRUE }
const FALSE_NODE: Node = { k: "const", v: FALSE }

interface Compiled {
  readonly root: Node
  readonly vars: ReadonlyArray<Var>
}

const compile = (formula: Condition, closed: Map<string, ReadonlySet<Scalar>>): Compiled => {
  // First pass: what each path is compared with, and which paths hold lists.
  const order: Array<string> = []
  const ordered = new Set<string>()
  const literals = new Map<string, Set<Scalar>>()
  const members = new Map<string, Set<string>>()
  const seen = (key: string) => {
    if (!ordered.has(key)) {
      ordered.add(key)
      order.push(key)
    }
  }
  const scan = (part: Condition): void => {
    switch (part.op) {
      case "equals":
      case "in": {
        if (listPaths.has(part.path)) return
        seen(part.path)
        const held = literals.get(part.path) ?? new Set()
        for (const value of part.op === "equals" ? [part.value] : part.values) held.add(value)
        literals.set(part.path, held)
        return
      }
      case "has": {
        if (nonListPaths.has(part.path)) return
        seen(part.path)
        const held = members.get(part.path) ?? new Set()
        held.add(part.value)
        members.set(part.path, held)
        return
      }
      case "text":
        return seen(`\0text:${part.text}`)
      case "and":
        return part.all.forEach(scan)
      case "or":
        return part.any.forEach(scan)
      case "not":
        return scan(part.condition)
      default:
        return
    }
  }
  scan(formula)

  const vars: Array<Var> = []
  const scalarVar = new Map<string, number>()
  const memberVar = new Map<string, number>()
  const textVar = new Map<string, number>()
  for (const key of order) {
    if (key.startsWith("\0text:")) {
      const text = key.slice("\0text:".length)
      textVar.set(text, vars.length)
      vars.push({ kind: "text", text, candidates: [false, true] })
      continue
    }
    const path = key as Path
    const domain = closed.get(path)
    const isList = listPaths.has(path)
    if (!isList) {
      const candidates: Array<Value> = []
      if (path === "autonomous") candidates.push(false, true)
      else {
        // Absent behaves as any value no condition names: the fresh "other".
        // A declared role, page or tenant is always one of its values; a
        // declared fact may not be recorded yet.
        if (domain === undefined || path.startsWith("facts.")) candidates.push(undefined)
        for (const value of literals.get(path) ?? []) {
          if (domain === undefined || domain.has(value)) candidates.push(value)
        }
        for (const value of domain ?? []) if (!candidates.includes(value)) candidates.push(value)
        if (members.has(path)) candidates.push(LIST)
      }
      scalarVar.set(path, vars.length)
      vars.push({ kind: "scalar", path, candidates })
    }
    for (const value of members.get(path) ?? []) {
      if (domain !== undefined && !domain.has(value)) continue
      memberVar.set(`${path}\0${value}`, vars.length)
      vars.push({ kind: "member", path, value, candidates: [false, true] })
    }
  }

  const build = (part: Condition): Node => {
    switch (part.op) {
      case "always":
        return TRUE_NODE
      case "equals":
      case "in": {
        if (listPaths.has(part.path)) return FALSE_NODE
        const wanted = part.op === "equals" ? [part.value] : part.values
        return {
          k: "scalar",
          v: scalarVar.get(part.path)!,
          test: (value) => value !== undefined && value !== LIST && wanted.includes(value)
        }
      }
      case "has": {
        if (nonListPaths.has(part.path)) return FALSE_NODE
        const v = memberVar.get(`${part.path}\0${part.value}`)
        if (v === undefined) return FALSE_NODE
        return { k: "member", shape: listPaths.has(part.path) ? -1 : scalarVar.get(part.path)!, v }
      }
      case "text":
        return { k: "bool", v: textVar.get(part.text)! }
      case "and":
        return { k: "and", parts: part.all.map(build) }
      case "or":
        return { k: "or", parts: part.any.map(build) }
      case "not":
        return { k: "not", part: build(part.condition) }
    }
  }
  return { root: build(formula), vars }
}

const UNSET = Symbol("unset")

const truth = (node: Node, values: ReadonlyArray<unknown>): Truth => {
  switch (node.k) {
    case "const":
      return node.v
    case "scalar": {
      const value = values[node.v]
      return value === UNSET ? UNKNOWN : node.test(value as Value) ? TRUE : FALSE
    }
    case "member": {
      if (node.shape !== -1) {
        const shape = values[node.shape]
        if (shape === UNSET) return UNKNOWN
        if (shape !== LIST) return FALSE
      }
      const value = values[node.v]
      return value === UNSET ? UNKNOWN : value === true ? TRUE : FALSE
    }
    case "bool": {
      const value = values[node.v]
      return value === UNSET ? UNKNOWN : value === true ? TRUE : FALSE
    }
    case "and": {
      let result: Truth = TRUE
      for (const part of node.parts) {
        const t = truth(part, values)
        if (t === FALSE) return FALSE
        if (t === UNKNOWN) result = UNKNOWN
      }
      return result
    }
    case "or": {
      let result: Truth = FALSE
      for (const part of node.parts) {
        const t = truth(part, values)
        if (t === TRUE) return TRUE
        if (t === UNKNOWN) result = UNKNOWN
      }
      return result
    }
    case "not": {
      const t = truth(node.part, values)
      return t === UNKNOWN ? UNKNOWN : t === TRUE ? FALSE : TRUE
    }
  }
}

/** A solution: a context, and the natural-language conditions a model would have to match in it. */
export interface Solution {
  readonly subject: Subject
  readonly texts: ReadonlyArray<string>
}

const setInput = (input: Record<string, unknown>, keys: ReadonlyArray<string>, value: unknown): void => {
  let at: Record<string, unknown> = input
  for (const key of keys.slice(0, -1)) {
    const next = at[key]
    if (next === undefined) at = at[key] = {}
    else if (typeof next === "object" && next !== null && !Array.isArray(next)) at = next as Record<string, unknown>
    else return // a scalar already sits there; the check with the real evaluator decides
  }
  const last = keys[keys.length - 1]!
  if (!Object.hasOwn(at, last)) at[last] = value
}

const toSubject = (vars: ReadonlyArray<Var>, values: ReadonlyArray<unknown>): Solution => {
  const subject: {
    -readonly [K in keyof Subject]: Subject[K]
  } = {}
  const lists = new Map<string, Array<string>>()
  const facts: Record<string, Scalar | Array<string>> = {}
  const input: Record<string, unknown> = {}
  const texts: Array<string> = []
  const listAt = (path: string) => {
    const list = lists.get(path) ?? []
    lists.set(path, list)
    return list
  }
  for (const [i, v] of vars.entries()) {
    const value = values[i]
    if (value === UNSET) continue
    if (v.kind === "text") {
      if (value === true) texts.push(v.text)
      continue
    }
    if (v.kind === "member") {
      if (value === true) listAt(v.path).push(v.value)
      continue
    }
    if (value === undefined) continue
    if (value === LIST) {
      listAt(v.path)
      continue
    }
    switch (v.path) {
      case "role":
      case "page":
      case "tenant":
      case "actor":
        subject[v.path] = String(value)
        break
      case "autonomous":
        if (value === true) subject.autonomous = true
        break
      default:
        if (v.path.startsWith("facts.")) facts[v.path.slice("facts.".length)] = value as Scalar
        else setInput(input, v.path.split(".").slice(1), value)
    }
  }
  for (const [path, list] of lists) {
    if (path === "features" || path === "consents") subject[path] = list
    else if (path.startsWith("facts.")) facts[path.slice("facts.".length)] = list
    else setInput(input, path.split(".").slice(1), list)
  }
  if (Object.keys(facts).length > 0) subject.facts = facts as Record<string, Scalar>
  if (Object.keys(input).length > 0) subject.input = input
  return { subject, texts }
}

/** A context in which `formula` holds given the declared domains, or undefined when there is none. */
export const solve = (formula: Condition, closed: Map<string, ReadonlySet<Scalar>>): Solution | undefined => {
  const { root, vars } = compile(formula, closed)
  const values: Array<unknown> = vars.map(() => UNSET)
  const verified = (): Solution | undefined => {
    const solution = toSubject(vars, values)
    const matched = new Set(solution.texts)
    return evaluate(formula, solution.subject, (text) => matched.has(text)).holds ? solution : undefined
  }
  const search = (i: number): Solution | undefined => {
    const t = truth(root, values)
    if (t === FALSE) return undefined
    if (t === TRUE) {
      const found = verified()
      if (found !== undefined || i >= vars.length) return found
    }
    if (i >= vars.length) return undefined
    for (const candidate of vars[i]!.candidates) {
      values[i] = candidate
      const found = search(i + 1)
      if (found !== undefined) return found
    }
    values[i] = UNSET
    return undefined
  }
  return search(0)
}

// ---------------------------------------------------------------------------
// Words.

const show = (value: unknown): string => JSON.stringify(value)

/** A context in words: `role = "support", consents has "credit-check"`. */
export const describeSolution = ({ subject, texts }: Solution): string => {
  const parts: Array<string> = []
  for (const key of ["role", "page", "tenant", "actor"] as const) {
    if (subject[key] !== undefined) parts.push(`${key} = ${show(subject[key])}`)
  }
  if (subject.autonomous === true) parts.push("autonomous")
  for (const key of ["features", "consents"] as const) {
    for (const value of subject[key] ?? []) parts.push(`${key} has ${show(value)}`)
  }
  for (const [name, value] of Object.entries(subject.facts ?? {})) {
    parts.push(
      Array.isArray(value) ? `facts.${name} = [${value.map(show).join(", ")}]` : `facts.${name} = ${show(value)}`
    )
  }
  const walk = (prefix: string, value: unknown): void => {
    if (typeof value === "object" && value !== null && !Array.isArray(value)) {
      for (const [key, inner] of Object.entries(value)) walk(`${prefix}.${key}`, inner)
    } else parts.push(`${prefix} = ${show(value)}`)
  }
  if (subject.input !== undefined) walk("input", subject.input)
  for (const text of texts) parts.push(`a model matches ${show(text)}`)
  return parts.length === 0 ? "any context" : parts.join(", ")
}

// ---------------------------------------------------------------------------
// The check.

const sameSet = (a: ReadonlyArray<string>) => [...new Set(a)].sort().join("\0")

export const run = (guidelines: ReadonlyArray<Any>, declared?: Declared): ReadonlyArray<Finding> => {
  if (!Array.isArray(guidelines)) throw new InvalidDeclared("guidelines", "must be a list of guidelines")
  const closed = domains(declared)
  const findings: Array<Finding> = []
  const byId = new Map<string, Any>()
  for (const guideline of guidelines) if (!byId.has(guideline.id)) byId.set(guideline.id, guideline)
  const known = [...byId.values()]
  const q = (id: string) => show(id)

  // missing: requires/excludes naming an unknown guideline.
  for (const g of known) {
    for (const [field, names] of [["requires", g.requires], ["excludes", g.excludes]] as const) {
      for (const name of names) {
        if (byId.has(name)) continue
        findings.push({
          kind: "missing",
          severity: "error",
          guidelines: [g.id, name],
          message: `${q(g.id)} ${field} ${q(name)}, which is not a guideline of this policy${
            field === "requires" ? ` (so ${q(g.id)} can never match)` : ""
          }`
        })
      }
    }
  }

  // cycle: strongly connected components of the requires graph (Tarjan).
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: Array<string> = []
  const onStack = new Set<string>()
  let counter = 0
  const inCycle = new Set<string>()
  const connect = (id: string): void => {
    index.set(id, counter)
    low.set(id, counter++)
    stack.push(id)
    onStack.add(id)
    for (const next of byId.get(id)!.requires) {
      if (!byId.has(next)) continue
      if (!index.has(next)) {
        connect(next)
        low.set(id, Math.min(low.get(id)!, low.get(next)!))
      } else if (onStack.has(next)) low.set(id, Math.min(low.get(id)!, index.get(next)!))
    }
    if (low.get(id) !== index.get(id)) return
    const component: Array<string> = []
    let popped: string
    do {
      popped = stack.pop()!
      onStack.delete(popped)
      component.push(popped)
    } while (popped !== id)
    if (component.length === 1 && !byId.get(id)!.requires.includes(id)) return
    const members = new Set(component)
    // One cycle through the component, in the order the requirements run.
    const path = [id]
    const visited = new Set([id])
    const walk = (at: string): boolean => {
      for (const next of byId.get(at)!.requires) {
        if (next === id) return true
        if (!members.has(next) || visited.has(next)) continue
        visited.add(next)
        path.push(next)
        if (walk(next)) return true
        path.pop()
      }
      return false
    }
    walk(id)
    for (const member of component) inCycle.add(member)
    findings.push({
      kind: "cycle",
      severity: "error",
      guidelines: path,
      message: `requirements run in a circle: ${[...path, id].map(q).join(" requires ")}${
        component.length > path.length ? ` (and ${component.length - path.length} more in the same loop)` : ""
      }; none of them can be matched first`
    })
  }
  for (const g of known) if (!index.has(g.id)) connect(g.id)

  // Effective conditions: own `when` and every required guideline's, transitively
  // (a requirement that is unknown or closes a cycle is reported above and
  // left out here). Memoized as the set of guidelines whose `when` must hold.
  const closures = new Map<string, ReadonlyArray<Any>>()
  const closure = (g: Any): ReadonlyArray<Any> => {
    const memo = closures.get(g.id)
    if (memo !== undefined) return memo
    const found = new Map<string, Any>()
    const visit = (at: Any): void => {
      if (found.has(at.id)) return
      found.set(at.id, at)
      for (const name of at.requires) {
        const next = byId.get(name)
        if (next === undefined) continue
        const done = closures.get(name)
        if (done !== undefined) {
          for (const inner of done) found.set(inner.id, inner)
        } else visit(next)
      }
    }
    visit(g)
    const result = [...found.values()]
    closures.set(g.id, result)
    return result
  }
  const conditionOf = (members: Iterable<Any>, extra: ReadonlyArray<Condition> = []): Condition => {
    const all = [...members].map((m) => m.when)
    return { op: "and", all: [...all, ...extra] }
  }

  // unreachable: an effective condition that can never hold.
  const reachable = new Map<string, boolean>()
  for (const g of known) {
    const solution = solve(conditionOf(closure(g)), closed)
    reachable.set(g.id, solution !== undefined)
  }
  for (const g of known) {
    if (reachable.get(g.id)) continue
    const own = solve(g.when, closed) !== undefined
    const blocking = g.requires.filter((name) => byId.has(name) && reachable.get(name) === false)
    findings.push({
      kind: "unreachable",
      severity: "warning",
      guidelines: own && blocking.length > 0 ? [g.id, ...blocking] : [g.id],
      message: !own
        ? `${q(g.id)} can never match: ${describe(g.when)} holds in no context${vocabulary(g.when, closed)}`
        : blocking.length > 0
        ? `${q(g.id)} can never match: it requires ${blocking.map(q).join(", ")}, which can never match`
        : `${q(g.id)} can never match: its condition (${describe(g.when)}) and those of the guidelines it requires (${
          closure(g).filter((m) => m.id !== g.id).map((m) => q(m.id)).join(", ")
        }) never hold together`
    })
  }

  const push = (index: Map<string, Array<Any>>, key: string, g: Any) => {
    const list = index.get(key)
    if (list === undefined) index.set(key, [g])
    else list.push(g)
  }

  // Who excludes whom.
  const excluders = new Map<string, Array<Any>>()
  for (const g of known) for (const name of g.excludes) push(excluders, name, g)
  const excludes = (a: Any, b: Any) => a.excludes.includes(b.id) || b.excludes.includes(a.id)

  // A quick, sound filter before solving: the values a guideline's effective
  // condition pins a path to through its top-level `equals` and `in` parts
  // (role = "support" and ...). Two guidelines pinning one path to disjoint
  // values never match together, so most pairs never reach the solver.
  const pins = new Map<string, Map<string, ReadonlySet<Scalar>>>()
  const pinned = (g: Any): Map<string, ReadonlySet<Scalar>> => {
    const memo = pins.get(g.id)
    if (memo !== undefined) return memo
    const found = new Map<string, ReadonlySet<Scalar>>()
    const visit = (part: Condition): void => {
      if (part.op === "and") return part.all.forEach(visit)
      if (part.op !== "equals" && part.op !== "in") return
      const values = part.op === "equals" ? [part.value] : part.values
      const before = found.get(part.path)
      found.set(part.path, new Set(before === undefined ? values : values.filter((value) => before.has(value))))
    }
    for (const member of closure(g)) visit(member.when)
    pins.set(g.id, found)
    return found
  }
  const disjoint = (a: Any, b: Any): boolean => {
    const left = pinned(a)
    for (const [path, values] of pinned(b)) {
      const other = left.get(path)
      if (other !== undefined && ![...values].some((value) => other.has(value))) return true
    }
    return false
  }

  // Both match, and no third guideline that excludes one of them matches.
  const together = (a: Any, b: Any): Solution | undefined => {
    if (!reachable.get(a.id) || !reachable.get(b.id) || disjoint(a, b)) return undefined
    const members = new Map<string, Any>()
    for (const m of closure(a)) members.set(m.id, m)
    for (const m of closure(b)) members.set(m.id, m)
    const quiet: Array<Condition> = []
    for (const x of [...(excluders.get(a.id) ?? []), ...(excluders.get(b.id) ?? [])]) {
      if (x.id === a.id || x.id === b.id) continue
      quiet.push({ op: "not", condition: conditionOf(closure(x)) })
    }
    return solve(conditionOf(members.values(), quiet), closed)
  }

  // conflict: compare only guidelines that share a tool.
  const authorizers = new Map<string, Array<Any>>()
  const forbidders = new Map<string, Array<Any>>()
  for (const g of known) {
    for (const tool of g.tools) push(authorizers, tool, g)
    for (const tool of g.forbids) push(forbidders, tool, g)
  }
  const pairs = new Map<string, Solution | undefined | null>()
  for (const [tool, forbidding] of forbidders) {
    for (const a of authorizers.get(tool) ?? []) {
      for (const b of forbidding) {
        if (a.id === b.id || excludes(a, b)) continue
        const key = `${a.id}\0${b.id}`
        let solution = pairs.get(key)
        if (solution === undefined && !pairs.has(key)) {
          solution = together(a, b) ?? null
          pairs.set(key, solution)
        }
        if (solution === null || solution === undefined) continue
        const where = describeSolution(solution)
        const stated = `${q(a.id)} (priority ${a.priority}) authorizes ${tool} and ${
          q(b.id)
        } (priority ${b.priority}) forbids it; both match when ${where}`
        const equal = a.priority === b.priority
        findings.push({
          kind: "conflict",
          severity: equal ? "error" : "warning",
          guidelines: [a.id, b.id],
          tool,
          example: solution.subject,
          ...(solution.texts.length > 0 ? { texts: solution.texts } : {}),
          message: equal
            ? `${stated}. Unresolved: at equal priority forbidding wins at run time, so ${tool} is withheld there; give one a higher priority or exclude one to say which decides`
            : a.priority > b.priority
            ? `${stated}. ${q(a.id)} has the higher priority and wins: ${tool} is offered there`
            : `${stated}. ${q(b.id)} has the higher priority and wins: ${tool} is withheld there`
        })
      }
    }
  }

  // near-duplicate: identical tool sets, conditions that can hold together.
  const groups = new Map<string, Array<Any>>()
  for (const g of known) {
    const key = `${sameSet(g.tools)}\u0001${sameSet(g.forbids)}`
    push(groups, key, g)
  }
  for (const group of groups.values()) {
    for (let i = 0; i < group.length; i++) {
      for (let j = i + 1; j < group.length; j++) {
        const a = group[i]!
        const b = group[j]!
        if (excludes(a, b)) continue
        const solution = together(a, b)
        if (solution === undefined) continue
        const what = [
          ...(a.tools.length > 0 ? [`authorize ${[...a.tools].sort().join(", ")}`] : []),
          ...(a.forbids.length > 0 ? [`forbid ${[...a.forbids].sort().join(", ")}`] : [])
        ].join(" and ")
        findings.push({
          kind: "near-duplicate",
          severity: "warning",
          guidelines: [a.id, b.id],
          example: solution.subject,
          ...(solution.texts.length > 0 ? { texts: solution.texts } : {}),
          message: `${q(a.id)} and ${q(b.id)} both ${what}, and both match when ${
            describeSolution(solution)
          }: merge them into one guideline (conditions joined with or)`
        })
      }
    }
  }

  const rank = { missing: 0, cycle: 1, conflict: 2, unreachable: 3, "near-duplicate": 4 } as const
  return findings
    .map((finding, at) => ({ finding, at }))
    .sort((x, y) =>
      (x.finding.severity === y.finding.severity ? 0 : x.finding.severity === "error" ? -1 : 1) ||
      rank[x.finding.kind] - rank[y.finding.kind] || x.at - y.at
    )
    .map(({ finding }) => finding)
}

// Which declared vocabulary a condition leaves, for an unreachable guideline's message.
const vocabulary = (condition: Condition, closed: Map<string, ReadonlySet<Scalar>>): string => {
  const outside: Array<string> = []
  const visit = (part: Condition): void => {
    switch (part.op) {
      case "equals":
      case "in":
      case "has": {
        const domain = closed.get(part.path)
        if (domain === undefined) return
        const values = part.op === "in" ? part.values : [part.value]
        for (const value of values) {
          if (!domain.has(value)) {
            outside.push(`${part.path} ${show(value)} is not declared (declared: ${[...domain].map(show).join(", ")})`)
          }
        }
        return
      }
      case "and":
        return part.all.forEach(visit)
      case "or":
        return part.any.forEach(visit)
      case "not":
        return visit(part.condition)
      default:
        return
    }
  }
  visit(condition)
  return outside.length === 0 ? "" : `; ${[...new Set(outside)].join("; ")}`
}

/** Findings as text for a terminal: one block a finding, errors first, and a count. */
export const format = (findings: ReadonlyArray<Finding>): string => {
  if (findings.length === 0) return "No conflicts, cycles, missing or unreachable guidelines, or near-duplicates.\n"
  const lines: Array<string> = []
  for (const finding of findings) {
    lines.push(
      `${finding.severity} ${finding.kind}: ${finding.guidelines.join(", ")}${
        finding.tool !== undefined ? ` (${finding.tool})` : ""
      }`
    )
    lines.push(`  ${finding.message}`)
  }
  const errors = findings.filter((f) => f.severity === "error").length
  const warnings = findings.length - errors
  lines.push("")
  lines.push(`${errors} error${errors === 1 ? "" : "s"}, ${warnings} warning${warnings === 1 ? "" : "s"}`)
  return `${lines.join("\n")}\n`
}
