import { describe, expect, it } from "vitest"
import { isReserved } from "../src/internal/reservedNames.js"

describe("graded's own decider names, reserved in single-user mode", () => {
  it("are reserved in any case, compatibility form or with invisible characters inside", () => {
    for (
      const name of [
        "web-confirm",
        "Web-Confirm",
        "WEB-CONFIRM",
        "RULE:auto",
        "Rule:x",
        "MCP:claude",
        "ｍｃｐ:x",
        "rule\u200B:x",
        "\u00ADweb-confirm",
        "  mcp:x  "
      ]
    ) {
      expect([name, isReserved(name)]).toEqual([name, true])
    }
  })

  it("leave a person's own name alone", () => {
    for (const name of ["alice", "web confirm", "ruler", "mcp-fan", "Rulé: x"]) {
      expect([name, isReserved(name)]).toEqual([name, false])
    }
  })
})
