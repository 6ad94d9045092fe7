// What lets a rule stand in for a human: only for a write, only for the one
// tool object the rule was made for, only when its predicate answers exactly
// `true` for a copy of the payload. A send is never approved here, whatever a
// cast put in a rule: the grade is read from the request and the tool itself.
//
// A rule's predicate is kept here, keyed by the frozen rule value, so a value
// shaped like a rule (a spread, a hand-made object) approves nothing.
// Who may import this: graded's own modules only (HumanConfirm).
import { Effect, Result, Schema } from "effect"
import type { Context } from "../Invocation.js"
import type { Any as AnyTool } from "../Tool.js"
import type { Request } from "./capability.js"

export interface Rule {
  readonly id: string
  readonly tool: AnyTool
  readonly approves: (input: unknown, context: Context) => unknown
}

const rules = new WeakMap<object, Rule>()

export const register = <T extends object>(value: T, rule: Rule): T => {
  rules.set(Object.freeze(value), Object.freeze({ ...rule }))
  return value
}

export const ruleOf = (value: unknown): Rule | undefined =>
  typeof value === "object" && value !== null ? rules.get(value) : undefined

export const idPattern = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,99}$/

// The rules of a layer by the tool object each approves, in the order given.
export type Index = ReadonlyMap<AnyTool, ReadonlyArray<Rule>>

export const index = (list: ReadonlyArray<Rule>): Index => {
  const byTool = new Map<AnyTool, Array<Rule>>()
  for (const rule of list) {
    const forTool = byTool.get(rule.tool)
    if (forTool === undefined) byTool.set(rule.tool, [rule])
    else forTool.push(rule)
  }
  return byTool
}

// The first rule of `index` that approves this request, or undefined: then
// the human is asked. `shown` is the payload encoded for the human; each
// predicate gets its own decoded copy of it, so a predicate that changes its
// argument changes neither what runs nor what the next rule sees.
export const firstMatch = (
  index: Index,
  request: Request,
  shown: unknown,
  context: Context
): Effect.Effect<Rule | undefined> =>
  Effect.suspend(() => {
    if (request.grade !== "write" || request.tool.grade !== "write") return Effect.succeed(undefined)
    const candidates = index.get(request.tool)
    if (candidates === undefined) return Effect.succeed(undefined)
    const decode = Schema.decodeUnknownResult(request.schema)
    const failures: Array<string> = []
    for (const rule of candidates) {
      const copy = decode(shown)
      if (Result.isFailure(copy)) break
      const facts = watchedFacts(context.facts)
      let answer: unknown
      try {
        answer = rule.approves(copy.success, Object.freeze({ ...context, facts: facts.view }))
      } catch (error) {
        failures.push(`rule ${rule.id} threw (${error instanceof Error ? error.message : String(error)})`)
        continue
      }
      if (facts.absent.size > 0) {
        failures.push(`rule ${rule.id} read a fact never recorded (${[...facts.absent].join(", ")})`)
        continue
      }
      if (answer === true) return Effect.succeed(rule)
    }
    // A rule that throws, or asks for a fact nobody recorded, is said in the
    // log, and the human decides as if it had not matched.
    return failures.length === 0 ? Effect.succeed(undefined) : Effect.as(
      Effect.logWarning(`HumanConfirm: ${failures.join("; ")}; the human is asked about ${request.tool.name}`),
      undefined
    )
  })

// The facts a predicate reads, always an object (so `facts?.[k]` goes through
// it), noting each name asked for that was never recorded. A plain predicate
// sees an absent fact as `undefined`, and `facts["account.frozen"] !== true`
// would pass for an account never looked up: a rule that read one fails closed.
const watchedFacts = (facts: Context["facts"]) => {
  const absent = new Set<string>()
  const recorded: Record<string, unknown> = Object.freeze(Object.assign(Object.create(null), facts))
  const note = (key: string | symbol) => {
    if (typeof key === "string" && !Object.hasOwn(recorded, key)) absent.add(key)
  }
  const view = new Proxy(recorded, {
    get: (target, key) => (note(key), Reflect.get(target, key)),
    has: (target, key) => (note(key), Reflect.has(target, key)),
    getOwnPropertyDescriptor: (target, key) => (note(key), Reflect.getOwnPropertyDescriptor(target, key))
  }) as NonNullable<Context["facts"]>
  return { view, absent }
}

/** The decider of a call a rule approved (HumanConfirm.ruleBy). */
export const ruleBy = <const Id extends string>(id: Id): `rule:${Id}` => `rule:${id}`
