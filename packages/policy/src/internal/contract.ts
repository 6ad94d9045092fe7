import { Result } from "effect"
import type { Tool } from "@graded/core"
import type { Condition } from "../Condition.js"
import type { Contract, Precondition } from "../Contract.js"
import { fromData } from "./condition.js"

const idPattern = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,99}$/

export class InvalidContract extends TypeError {
  override readonly name = "InvalidContract"
  constructor(readonly subject: string, readonly issue: string) {
    super(`${subject}: ${issue}`)
  }
}

export const precondition = (id: string, when: Condition, message: string): Precondition => {
  if (typeof id !== "string" || !idPattern.test(id)) {
    throw new InvalidContract(`precondition ${JSON.stringify(String(id))}`, "the id must be a plain name")
  }
  const condition = fromData(when)
  if (Result.isFailure(condition)) {
    throw new InvalidContract(`precondition ${id}`, `its condition is not valid: ${condition.failure}`)
  }
  if (typeof message !== "string" || message.trim().length === 0) {
    throw new InvalidContract(`precondition ${id}`, "the message a user sees when it fails is missing")
  }
  return Object.freeze({ id, when, message })
}

export const make = (
  tool: Tool.Any,
  options: {
    readonly preconditions?: ReadonlyArray<Precondition> | undefined
    readonly failures?: ReadonlyArray<string> | undefined
  }
): Contract => {
  const name = typeof tool === "object" && tool !== null && typeof tool.name === "string" ? tool.name : undefined
  if (name === undefined) throw new InvalidContract("contract", "it needs a graded tool")
  const preconditions = options.preconditions ?? []
  const ids = new Set<string>()
  for (const item of preconditions) {
    // Re-checked: a precondition written as a literal skips the constructor.
    precondition(item.id, item.when, item.message)
    if (ids.has(item.id)) throw new InvalidContract(`contract for ${name}`, `precondition ${item.id} appears twice`)
    ids.add(item.id)
  }
  const failures = options.failures ?? []
  if (failures.some((tag) => typeof tag !== "string" || tag.length === 0)) {
    throw new InvalidContract(`contract for ${name}`, "failures must be error tags")
  }
  return Object.freeze({
    tool: name,
    preconditions: Object.freeze([...preconditions]),
    failures: Object.freeze([...failures])
  })
}
