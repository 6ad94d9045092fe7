import { describe, expect, it } from "@effect/vitest"
import { Arbitrary, Schema } from "effect"
import { Wire } from "@graded/core"
import { propertyRuns } from "../../../test/propertyRuns.js"

const segment = Arbitrary.schema(
  Schema.String.check(Schema.isPattern(/^[A-Za-z0-9]{1,6}(?:[-_][A-Za-z0-9]{1,6}){0,2}$/))
)
const validName = Arbitrary.map(Arbitrary.array(segment, { minLength: 2, maxLength: 4 }), (parts) => parts.join("."))

describe("Wire", () => {
  it("maps names to wire names that OpenAI accepts, and back", () => {
    expect(Wire.toWire("kb.search")).toBe("kb__search")
    expect(Wire.fromWire("kb__search")).toBe("kb.search")
    expect(Wire.toWire("quick-ticket.fill_customer")).toBe("quick-ticket__fill_customer")
  })

  it.prop("is one to one on every valid name", [validName], ([name]) => {
    // The generated names follow the rule (some are too long for the wire).
    expect(Wire.checkName(name)).not.toBe(Wire.invalidNameMessage(name))
    const wire = Wire.toWire(name)
    expect(Wire.fromWire(wire)).toBe(name)
    if (wire.length <= Wire.maxWireLength) expect(wire).toMatch(Wire.wirePattern)
  }, { arbitrary: { runs: propertyRuns(500) } })

  it.prop("two different valid names never share a wire name", [validName, validName], ([a, b]) => {
    if (a !== b) expect(Wire.toWire(a)).not.toBe(Wire.toWire(b))
  }, { arbitrary: { runs: propertyRuns(500) } })

  it("names what is wrong with a bad name", () => {
    for (
      const name of ["kb..search", "a__b", "a_.b", "kb", ".kb.search", "kb.search.", "kb.sea rch", "kb.-x", "kb.x--y"]
    ) {
      expect(Wire.checkName(name)).toBe(Wire.invalidNameMessage(name))
    }
    const long = `${"a".repeat(40)}.${"b".repeat(23)}`
    expect(long.length).toBe(64)
    expect(Wire.checkName(long)).toBe(Wire.tooLongMessage(long))
    expect(Wire.checkName(`${"a".repeat(40)}.${"b".repeat(22)}`)).toBeUndefined()
  })
})
