import { describe, expect, it } from "@effect/vitest"
import { Result } from "effect"
import { Condition } from "@graded/policy"

const nested = (depth: number, wrap: (inner: unknown) => unknown) => {
  let value: unknown = { op: "always" }
  for (let i = 0; i < depth; i++) value = wrap(value)
  return value
}

// Conditions come as data (a file, a review queue): any data gets an answer.
describe("Condition.fromData on hostile data", () => {
  it("a condition nested 100,000 deep answers Left, never throws", () => {
    const data = nested(100_000, (condition) => ({ op: "not", condition }))
    let result: Result.Result<Condition.Condition, string> | undefined
    expect(() => {
      result = Condition.fromData(data)
    }).not.toThrow()
    expect(result).toEqual(Result.fail("the condition is nested too deeply to read"))
  })
})
