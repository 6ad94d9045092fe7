// The four-question contract review. Each tool of a toolkit is asked:
//   1. does its input admit fields it does not need (arbitrary fields, or a
//      sensitive field of a tag it does not carry)?
//   2. is every precondition evaluable from the context (no text, every fact
//      recorded by some tool or declared)?
//   3. are its side effects audited (a write or send declares them)?
//   4. does every failure have a fixed message?
// A composed contract (a plan's steps in order) is asked the same, with the
// facts of question 2 recorded by an earlier step.
import { SchemaAST } from "effect"
import { Grade, type Tool, type Toolkit } from "@graded/core"
import type { Condition } from "../Condition.js"
import type { Contract } from "../Contract.js"
import { hasText, paths } from "./condition.js"

export type Question = 1 | 2 | 3 | 4 | 5

export const titles = {
  1: "excess input",
  2: "precondition not evaluable",
  3: "side effect not audited",
  4: "failure without a fixed message",
  5: "guard open on an absent fact"
} as const

export type Title = (typeof titles)[Question]

export interface Finding {
  readonly tool: string
  readonly question: Question
  readonly title: Title
  readonly message: string
  /** For a composed contract: the plan, and the step (counted from 1). */
  readonly plan?: string | undefined
  readonly step?: number | undefined
}

export interface Options {
  readonly contracts?: ReadonlyArray<Contract> | undefined
  readonly sensitive?: Readonly<Record<string, ReadonlyArray<string>>> | undefined
  readonly facts?: ReadonlyArray<string> | undefined
  readonly requiredTags?: Readonly<Record<string, ReadonlyArray<string>>> | undefined
}

export class InvalidReview extends TypeError {
  override readonly name = "InvalidReview"
  constructor(readonly issue: string) {
    super(`review: ${issue}`)
  }
}

export const defaultSensitive: Readonly<Record<string, ReadonlyArray<string>>> = Object.freeze({
  pii: Object.freeze([
    "ssn",
    "socialSecurityNumber",
    "nationalId",
    "taxId",
    "passport",
    "passportNumber",
    "driversLicense",
    "dateOfBirth",
    "dob",
    "password",
    "cardNumber",
    "creditCardNumber",
    "cvv",
    "iban",
    "accountNumber",
    "homeAddress"
  ])
})

// `card_number`, `CardNumber` and `cardNumber` are one name.
const normalize = (name: string) => name.toLowerCase().replace(/[^a-z0-9]/g, "")

const finding = (tool: string, question: Question, message: string): Finding =>
  Object.freeze({ tool, question, title: titles[question], message })

// ---- question 1: the input's shape ------------------------------------------

interface Shape {
  /** Where arbitrary fields are admitted, and why. */
  readonly open: Array<string>
  /** Every field name, with where it is. */
  readonly fields: Array<{ readonly name: string; readonly at: string }>
}

// Effect 4's AST: a node is the decoded side, its `encoding` links lead to
// what is decoded from; checks sit on the node itself. Both sides are read:
// whichever admits arbitrary fields is where the model can put them.
const shapeOf = (ast: SchemaAST.AST): Shape => {
  const shape: Shape = { open: [], fields: [] }
  const seen = new Set<SchemaAST.AST>()
  const visit = (node: SchemaAST.AST, at: string): void => {
    if (seen.has(node)) return
    seen.add(node)
    for (const link of node.encoding ?? []) visit(link.to, at)
    switch (node._tag) {
      case "Unknown":
        shape.open.push(`${at} is unknown (any value, any fields)`)
        return
      case "Any":
        shape.open.push(`${at} is any (any value, any fields)`)
        return
      case "ObjectKeyword":
        shape.open.push(`${at} is any object (any fields)`)
        return
      case "Objects":
        if (node.indexSignatures.length > 0) shape.open.push(`${at} is a record (it admits fields of any name)`)
        for (const index of node.indexSignatures) visit(index.type, `${at}[*]`)
        for (const property of node.propertySignatures) {
          const name = String(property.name)
          shape.fields.push({ name, at: `${at}.${name}` })
          visit(property.type, `${at}.${name}`)
        }
        return
      case "Arrays":
        node.elements.forEach((element, i) => visit(element, `${at}[${i}]`))
        node.rest.forEach((rest) => visit(rest, `${at}[*]`))
        return
      case "Union":
        return node.types.forEach((type) => visit(type, at))
      case "Suspend":
        return visit(node.thunk(), at)
      case "Declaration":
        return node.typeParameters.forEach((type) => visit(type, at))
      default:
        return
    }
  }
  visit(ast, "input")
  return shape
}

const excessInput = (
  tool: Tool.Any,
  sensitive: Readonly<Record<string, ReadonlyArray<string>>>
): ReadonlyArray<Finding> => {
  const shape = shapeOf(tool.input.ast)
  const found: Array<Finding> = shape.open.map((where) =>
    finding(
      tool.name,
      1,
      `${tool.name} admits fields it does not declare: ${where}; declare each field it needs (a Schema.Struct)`
    )
  )
  const carried = new Set(tool.tags ?? [])
  // Which tags make each sensitive name acceptable.
  const tagsOf = new Map<string, Array<string>>()
  for (const [tag, names] of Object.entries(sensitive)) {
    for (const name of names) {
      const key = normalize(name)
      tagsOf.set(key, [...(tagsOf.get(key) ?? []), tag])
    }
  }
  for (const field of shape.fields) {
    const tags = tagsOf.get(normalize(field.name))
    if (tags === undefined || tags.some((tag) => carried.has(tag))) continue
    found.push(finding(
      tool.name,
      1,
      `${tool.name} takes ${field.at}, a sensitive field (${tags.join(", ")}), but does not carry the tag ${
        tags.join(" or ")
      }: drop the field, or tag the tool so its calls are audited as such`
    ))
  }
  return found
}

// ---- question 2: preconditions evaluable from context ------------------------

const notEvaluable = (
  tool: string,
  contract: Contract | undefined,
  recorded: (fact: string) => string | undefined
): ReadonlyArray<Finding> => {
  const found: Array<Finding> = []
  for (const precondition of contract?.preconditions ?? []) {
    const when: Condition = precondition.when
    if (hasText(when)) {
      found.push(finding(
        tool,
        2,
        `${tool}: precondition ${precondition.id} has a text condition, which only a model can judge; ` +
          "a precondition is checked by the system, from data"
      ))
    }
    for (const path of paths(when)) {
      if (path.startsWith("input.")) {
        found.push(finding(
          tool,
          2,
          `${tool}: precondition ${precondition.id} reads ${path}, but preconditions are evaluated on the ` +
            "context, before any input exists"
        ))
      } else if (path.startsWith("facts.")) {
        const why = recorded(path.slice("facts.".length))
        if (why !== undefined) {
          found.push(finding(tool, 2, `${tool}: precondition ${precondition.id} reads ${path}, ${why}`))
        }
      }
    }
  }
  return found
}

// ---- question 3: side effects audited ---------------------------------------

const declares = (list: ReadonlyArray<string> | undefined) =>
  Array.isArray(list) && list.some((item) => typeof item === "string" && item.trim().length > 0)

const notAudited = (
  tool: Tool.Any,
  requiredTags: Readonly<Record<string, ReadonlyArray<string>>>
): ReadonlyArray<Finding> => {
  const found: Array<Finding> = []
  if (Grade.isConfirmable(tool.grade) && !declares(tool.sideEffects)) {
    found.push(finding(
      tool.name,
      3,
      `${tool.name} is a ${tool.grade} tool and declares no sideEffects: say what a call changes, so that every ` +
        "audit entry of it says so"
    ))
  }
  const carried = new Set(tool.tags ?? [])
  const missing = (Object.hasOwn(requiredTags, tool.name) ? requiredTags[tool.name]! : []).filter((tag) =>
    !carried.has(tag)
  )
  if (missing.length > 0) {
    found.push(finding(
      tool.name,
      3,
      `${tool.name} must carry the tag${missing.length > 1 ? "s" : ""} ${missing.join(", ")}: its calls are ` +
        "audited under the tags it carries"
    ))
  }
  return found
}

// ---- question 4: every failure has a fixed message ---------------------------

const withoutMessage = (tool: Tool.Any, contract: Contract | undefined): ReadonlyArray<Finding> => {
  const found: Array<Finding> = []
  const messages = tool.failureMessages ?? {}
  for (const tag of contract?.failures ?? []) {
    const message = Object.hasOwn(messages, tag) ? messages[tag] : undefined
    if (typeof message !== "string" || message.trim().length === 0) {
      found.push(finding(
        tool.name,
        4,
        `${tool.name} may fail with ${tag}, and its failureMessages have no fixed text for it: a user would see ` +
          "whatever the error says"
      ))
    }
  }
  for (const precondition of contract?.preconditions ?? []) {
    if (typeof precondition.message !== "string" || precondition.message.trim().length === 0) {
      found.push(
        finding(tool.name, 4, `${tool.name}: precondition ${precondition.id} has no message for when it fails`)
      )
    }
  }
  return found
}

// ---- the review --------------------------------------------------------------

// Bad options are named, not spread: a string given as `sensitive` is not a list of tags.
const checkOptions = (options: Options): void => {
  if (typeof options !== "object" || options === null) throw new InvalidReview("the options must be an object")
  const names = (field: string, value: unknown) => {
    if (!Array.isArray(value) || value.some((name) => typeof name !== "string" || name.length === 0)) {
      throw new InvalidReview(`${field} must be a list of names`)
    }
  }
  const record = (field: string, value: unknown) => {
    if (value === undefined) return
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
      throw new InvalidReview(`${field} must be an object of lists, by name`)
    }
    for (const [key, list] of Object.entries(value)) names(`${field}.${key}`, list)
  }
  record("sensitive", options.sensitive)
  record("requiredTags", options.requiredTags)
  if (options.facts !== undefined) names("facts", options.facts)
  if (options.contracts !== undefined && !Array.isArray(options.contracts)) {
    throw new InvalidReview("contracts must be a list of contracts (Contract.make)")
  }
  for (const contract of options.contracts ?? []) {
    if (
      typeof contract !== "object" || contract === null || typeof contract.tool !== "string" ||
      !Array.isArray(contract.preconditions) || !Array.isArray(contract.failures)
    ) throw new InvalidReview("contracts must be made with Contract.make")
  }
}

// Strict for a review run on its own; a policy's compilation names a
// duplicate contract itself.
const contractsOf = (contracts: ReadonlyArray<Contract> | undefined, strict: boolean) => {
  const byTool = new Map<string, Contract>()
  for (const contract of contracts ?? []) {
    if (byTool.has(contract.tool)) {
      if (strict) throw new InvalidReview(`${contract.tool} has two contracts`)
      continue
    }
    byTool.set(contract.tool, contract)
  }
  return byTool
}

const factsOf = (tool: Tool.Any): ReadonlyArray<string> =>
  typeof tool.facts === "object" && tool.facts !== null ? Object.keys(tool.facts) : []

const byOrder = (a: Finding, b: Finding) => a.question - b.question

/** Reviews one tool; `recorded` says why a fact is not evaluable, or undefined when it is. */
const reviewTool = (
  tool: Tool.Any,
  contract: Contract | undefined,
  options: Options,
  recorded: (fact: string) => string | undefined
): Array<Finding> =>
  [
    ...excessInput(tool, { ...defaultSensitive, ...options.sensitive }),
    ...notEvaluable(tool.name, contract, recorded),
    ...notAudited(tool, options.requiredTags ?? {}),
    ...withoutMessage(tool, contract)
  ].sort(byOrder)

/** The review of a toolkit, contracts for tools it lacks ignored (the policy names them). */
export const reviewToolkit = (
  toolkit: Toolkit.Any,
  options: Options,
  strict = false
): ReadonlyArray<Finding> => {
  checkOptions(options)
  const contracts = contractsOf(options.contracts, strict)
  const known = new Set([...toolkit.tools.flatMap(factsOf), ...(options.facts ?? [])])
  const recorded = (fact: string) =>
    known.has(fact) ? undefined : "a fact no tool of the toolkit records and none declared (options.facts)"
  return Object.freeze(toolkit.tools.flatMap((tool) => reviewTool(tool, contracts.get(tool.name), options, recorded)))
}

export const run = (toolkit: Toolkit.Any, options: Options = {}): ReadonlyArray<Finding> => {
  checkOptions(options)
  for (const contract of options.contracts ?? []) {
    if (toolkit.get(contract.tool) === undefined) {
      throw new InvalidReview(`a contract names ${contract.tool}, which is not in the toolkit`)
    }
  }
  return reviewToolkit(toolkit, options, true)
}

export const plan = (
  plan: { readonly name: string; readonly writes: ReadonlyArray<string> },
  toolkit: Toolkit.Any,
  options: Options & { readonly steps: ReadonlyArray<Tool.Any | string> }
): ReadonlyArray<Finding> => {
  if (typeof plan !== "object" || plan === null || typeof plan.name !== "string" || !Array.isArray(plan.writes)) {
    throw new InvalidReview("it needs a plan made by Plan.make")
  }
  if (!Array.isArray(options?.steps) || options.steps.length === 0) {
    throw new InvalidReview(`plan ${plan.name}: name its steps, in order (options.steps)`)
  }
  const steps = options.steps.map((step, i) => {
    const name = typeof step === "string" ? step : typeof step === "object" && step !== null ? step.name : undefined
    const tool = typeof name === "string" ? toolkit.get(name) : undefined
    if (tool === undefined) {
      throw new InvalidReview(`plan ${plan.name}: step ${i + 1} names ${String(name)}, which is not in the toolkit`)
    }
    return tool
  })
  for (const write of plan.writes) {
    if (!steps.some((tool) => tool.name === write)) {
      throw new InvalidReview(
        `plan ${plan.name} declares the write tool ${write}, which is not among its steps: list every step`
      )
    }
  }
  checkOptions(options)
  const contracts = contractsOf(options.contracts, true)
  const declared = new Set(options.facts ?? [])
  const found: Array<Finding> = []
  steps.forEach((tool, i) => {
    const earlier = new Set(steps.slice(0, i).flatMap(factsOf))
    const recorded = (fact: string) => {
      if (earlier.has(fact) || declared.has(fact)) return undefined
      const later = steps.findIndex((other, j) => j >= i && factsOf(other).includes(fact))
      return later >= 0
        ? `a fact recorded only by step ${later + 1} (${steps[later]!.name}), not before step ${i + 1}`
        : "a fact no earlier step records and none declared (options.facts)"
    }
    for (const item of reviewTool(tool, contracts.get(tool.name), options, recorded)) {
      found.push(Object.freeze({
        ...item,
        plan: plan.name,
        step: i + 1,
        message: `plan ${plan.name}, step ${i + 1}: ${item.message}`
      }))
    }
  })
  return Object.freeze(found)
}

export const format = (findings: ReadonlyArray<Finding>): string => {
  if (findings.length === 0) return "No findings: every tool passes the four questions."
  const lines = findings.map((item) => `${item.tool}: question ${item.question} (${item.title}): ${item.message}`)
  const tools = new Set(findings.map((item) => item.tool)).size
  return [
    `${findings.length} finding${findings.length === 1 ? "" : "s"} on ${tools} tool${tools === 1 ? "" : "s"}:`,
    ...lines.map((line) => `  ${line}`)
  ].join("\n")
}

/** Why each tool failed, as one line per tool: what the policy keeps it out of production for. */
export const unreviewed = (findings: ReadonlyArray<Finding>): ReadonlyMap<string, string> => {
  const byTool = new Map<string, Array<Finding>>()
  for (const item of findings) byTool.set(item.tool, [...(byTool.get(item.tool) ?? []), item])
  return new Map(
    [...byTool].map(([tool, items]) => [
      tool,
      items.map((item) => `question ${item.question} (${item.title}): ${item.message}`).join("; ")
    ])
  )
}
