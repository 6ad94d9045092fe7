import { Result } from "effect"
import type { Condition } from "../Condition.js"
import type { Any, Options } from "../Guideline.js"
import { fromData as conditionFromData } from "./condition.js"

const idPattern = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,99}$/

export class InvalidGuideline extends TypeError {
  override readonly name = "InvalidGuideline"
  constructor(readonly guideline: string, readonly issue: string) {
    super(`guideline ${JSON.stringify(guideline)}: ${issue}`)
  }
}

const names = (guideline: string, field: string, value: unknown): ReadonlyArray<string> => {
  if (value === undefined) return []
  if (!Array.isArray(value) || value.some((name) => typeof name !== "string" || name.length === 0)) {
    throw new InvalidGuideline(guideline, `${field} must be a list of names`)
  }
  return Object.freeze([...new Set(value as ReadonlyArray<string>)])
}

export const make = (id: string, options: Options<string, boolean>): Any => {
  if (typeof id !== "string" || !idPattern.test(id)) {
    throw new InvalidGuideline(String(id), "the id must be a plain name: letters, digits, and . _ : - inside")
  }
  if (typeof options !== "object" || options === null) throw new InvalidGuideline(id, "options are missing")
  if (typeof options.description !== "string" || options.description.trim().length === 0) {
    throw new InvalidGuideline(id, "the description is missing: say what the guideline is for")
  }
  const when = conditionFromData(options.when)
  if (Result.isFailure(when)) throw new InvalidGuideline(id, `its condition is not valid: ${when.failure}`)
  const tools = names(id, "tools", options.tools)
  const forbids = names(id, "forbids", options.forbids)
  if (tools.length === 0 && forbids.length === 0) {
    throw new InvalidGuideline(id, "it authorizes and forbids nothing: name tools or forbids")
  }
  const both = tools.filter((tool) => forbids.includes(tool))
  if (both.length > 0) throw new InvalidGuideline(id, `it both authorizes and forbids ${both.join(", ")}`)
  const priority = options.priority ?? 0
  if (typeof priority !== "number" || !Number.isFinite(priority)) {
    throw new InvalidGuideline(id, "the priority must be a finite number")
  }
  const requires = names(id, "requires", options.requires)
  const excludes = names(id, "excludes", options.excludes)
  if (requires.includes(id)) throw new InvalidGuideline(id, "it requires itself")
  if (excludes.includes(id)) throw new InvalidGuideline(id, "it excludes itself")
  if (options.autonomous !== undefined && typeof options.autonomous !== "boolean") {
    throw new InvalidGuideline(id, "autonomous must be true or false")
  }
  return Object.freeze({
    id,
    description: options.description,
    when: options.when as Condition,
    tools,
    forbids,
    priority,
    requires,
    excludes,
    autonomous: options.autonomous === true
  })
}

export const fromData = (data: unknown): Result.Result<Any, string> => {
  if (typeof data !== "object" || data === null || typeof (data as { id?: unknown }).id !== "string") {
    return Result.fail("a guideline is an object with an id")
  }
  try {
    const { id, ...options } = data as { id: string } & Options<string, boolean>
    return Result.succeed(make(id, options))
  } catch (error) {
    return Result.fail(error instanceof Error ? error.message : String(error))
  }
}

export const toData = (guideline: Any): unknown => ({
  id: guideline.id,
  description: guideline.description,
  when: guideline.when,
  tools: [...guideline.tools],
  ...(guideline.forbids.length > 0 ? { forbids: [...guideline.forbids] } : {}),
  ...(guideline.priority !== 0 ? { priority: guideline.priority } : {}),
  ...(guideline.requires.length > 0 ? { requires: [...guideline.requires] } : {}),
  ...(guideline.excludes.length > 0 ? { excludes: [...guideline.excludes] } : {}),
  ...(guideline.autonomous ? { autonomous: true } : {})
})
