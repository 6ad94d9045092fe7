import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { run } from "../src/demo.js"

describe("support-desk demo", () => {
  it.effect("answers with read tools, sends once after confirmation, and refuses the rest", () =>
    Effect.gen(function*() {
      const lines: Array<string> = []
      const { outbox, result, second, ticket } = yield* run({ log: (line) => lines.push(line) })
      expect(result.stopped).toBe("answer")
      expect(result.answer).toContain("T-1031")
      // The model reached for ticket.submit; it was refused and nothing was filed.
      expect(lines).toContain(
        "  [agent] REFUSED ticket.submit at the offered gate: there is no tool named ticket.submit"
      )
      // The only ticket is the quick-ticket plan's, started by Alice's shortcut.
      expect(outbox.tickets).toEqual([{ id: ticket.id, subject: "Invoice shows the old VAT number again" }])
      expect(outbox.form).toMatchObject({ customer: "Mei Lin", plan: "Business" })
      expect(lines).toContain("  [human] plan quick-ticket, step 7 (submit, write): completed")
      // Exactly one message went out: the one Alice approved.
      expect(outbox.messages).toHaveLength(1)
      expect(outbox.messages[0]?.text).toContain("reissued your invoice")
      expect(second._tag).toBe("Failure")
      expect(lines.some((line) => line.includes("agent:alice rejected chat.sendMessage"))).toBe(true)
      // Internal notes and e-mail addresses never reached the model.
      const toModel = result.messages.filter((m) => m.role === "tool").map((m) => m.content).join("\n")
      expect(toModel).not.toContain("finance approval")
      expect(toModel).not.toContain("mei.lin@example.com")
    }))
})
