// The desk with its two specialists: the autonomous agent asks the
// researcher; the supervised one asks the billing specialist for a refund,
// which waits for Alice with the exact refund and the path to it.
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { HumanConfirm, ScriptedModel } from "@graded/core"
import * as Desk from "../src/desk.js"
import { answer, handle, layer, type Refunds } from "../src/specialists.js"

const { call, calls, text } = ScriptedModel

describe("the desk's specialists", () => {
  it.effect("the autonomous agent calls the read-only researcher; the answer comes from its own run", () =>
    Effect.gen(function*() {
      const ui = HumanConfirm.scripted([])
      const result = yield* answer("What was Mei's VAT problem last time?").pipe(
        Effect.provide(layer(
          Desk.empty(),
          ScriptedModel.layer([
            calls(call("agent.researcher", { question: "past VAT problem", customerId: "c-42" })),
            calls(call("customer.lookup", { customerId: "c-42" })),
            text("T-1031: wrong VAT number, corrected in billing settings."),
            text("Last time the VAT number was corrected in billing settings (T-1031).")
          ]),
          ui
        ))
      )
      expect(result.calls[0]).toMatchObject({
        ok: true,
        tool: "agent.researcher",
        output: "T-1031: wrong VAT number, corrected in billing settings."
      })
      expect(result.answer).toContain("T-1031")
      expect(ui.seen).toEqual([])
    }))

  const refundScript = [
    calls(call("agent.billing", { customerId: "c-42", request: "refund the 30 EUR double charge" })),
    calls(call("customer.lookup", { customerId: "c-42" })),
    calls(call("refund.issue", { customerId: "c-42", amount: 30, reason: "double charge" })),
    (request: { readonly messages: ReadonlyArray<{ readonly role: string; readonly content?: unknown }> }) =>
      text(
        request.messages.some((m) => m.role === "tool" && String(m.content).includes("\"refunded\":30"))
          ? "Refunded 30 EUR."
          : "The refund was not approved."
      ),
    text("Done.")
  ] as ReadonlyArray<ScriptedModel.Turn>

  it.effect("the billing specialist's refund waits for Alice: her card shows the exact refund and who asked", () =>
    Effect.gen(function*() {
      const refunds: Refunds = { issued: [] }
      const ui = HumanConfirm.scripted([HumanConfirm.approve("agent:alice")])
      const result = yield* handle("Mei was charged twice; refund her 30 EUR.", refunds).pipe(
        Effect.provide(layer(Desk.empty(), ScriptedModel.layer(refundScript), ui))
      )
      expect(ui.seen).toHaveLength(1)
      expect(ui.seen[0]).toMatchObject({
        tool: "refund.issue",
        path: ["agent.billing"],
        payload: { customerId: "c-42", amount: 30, reason: "double charge" }
      })
      expect(refunds.issued.map(({ amount, customerId }) => ({ amount, customerId }))).toEqual([
        { customerId: "c-42", amount: 30 }
      ])
      expect(result.calls[0]).toMatchObject({ ok: true, tool: "agent.billing", output: "Refunded 30 EUR." })
    }))

  it.effect("Alice rejects: no refund is issued, and the specialist says so", () =>
    Effect.gen(function*() {
      const refunds: Refunds = { issued: [] }
      const ui = HumanConfirm.scripted([HumanConfirm.reject("agent:alice", "already refunded by bank")])
      const result = yield* handle("Refund her 30 EUR.", refunds).pipe(
        Effect.provide(layer(Desk.empty(), ScriptedModel.layer(refundScript), ui))
      )
      expect(refunds.issued).toEqual([])
      expect(result.calls[0]).toMatchObject({ ok: true, output: "The refund was not approved." })
    }))
})
