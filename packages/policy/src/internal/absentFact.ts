// Review question 5: a guideline that authorizes a write or send and can
// authorize it while a fact its condition reads was never recorded. The
// evaluator is three-valued (a comparison over an absent fact is unknown, and
// unknown never authorizes), so such a guideline holds there only through
// another branch (`or(role = "manager", facts.account.frozen = false)`):
// the fact does not guard the tool in that context, and the finding names it.
// A forbid needs no question: over an absent fact it stands (policy.ts).
import { Grade, type Toolkit } from "@graded/core"
import type { Declared } from "../Check.js"
import type { Condition, Path } from "../Condition.js"
import type { Any } from "../Guideline.js"
import { describeSolution, domains, solve } from "./check.js"
import { describe, paths } from "./condition.js"
import { type Finding, titles } from "./review.js"

const never: Condition = Object.freeze({ op: "or", any: [] })
const always: Condition = Object.freeze({ op: "always" })

// The condition as the evaluator reads it with `fact` absent, for the
// question "can it hold?": each leaf over the fact decided against holding
// (false where it counts for, true under a `not`).
const withAbsent = (condition: Condition, fact: Path, positive = true): Condition => {
  switch (condition.op) {
    case "equals":
    case "in":
    case "has":
      return condition.path === fact ? positive ? never : always : condition
    case "and":
      return { op: "and", all: condition.all.map((part) => withAbsent(part, fact, positive)) }
    case "or":
      return { op: "or", any: condition.any.map((part) => withAbsent(part, fact, positive)) }
    case "not":
      return { op: "not", condition: withAbsent(condition.condition, fact, !positive) }
    default:
      return condition
  }
}

export const openOnAbsentFacts = (
  guidelines: ReadonlyArray<Any>,
  toolkit: Toolkit.Any,
  declared: Declared | undefined
): ReadonlyArray<Finding> => {
  const closed = domains(declared)
  const guarded = new Set(toolkit.tools.filter((tool) => Grade.isConfirmable(tool.grade)).map((tool) => tool.name))
  const findings: Array<Finding> = []
  for (const guideline of guidelines) {
    const tools = guideline.tools.filter((name) => guarded.has(name))
    if (tools.length === 0) continue
    for (const fact of paths(guideline.when).filter((path) => path.startsWith("facts."))) {
      const found = solve(withAbsent(guideline.when, fact), closed)
      if (found === undefined) continue
      for (const tool of tools) {
        findings.push({
          tool,
          question: 5,
          title: titles[5],
          message: `guideline ${guideline.id} authorizes ${tool} (${describe(guideline.when)}) with ${fact} never ` +
            `recorded, in ${describeSolution(found)}: require the fact in every branch that authorizes it ` +
            `(and(..., ${fact} = <the value that allows it>))`
        })
      }
    }
  }
  return findings
}
