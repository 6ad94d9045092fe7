import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Schema } from "effect"
import { Audit, HumanConfirm, Registry, Tool, Toolkit } from "@graded/core"
import { Condition, Guideline } from "@graded/policy"

const makeTickets = () => {
  const filed: Array<string> = []
  const SubmitTicket = Tool.write("ticket.submit", {
    title: "Submit a ticket",
    description: "File a ticket.",
    input: Schema.Struct({ subject: Schema.String, priority: Schema.Literals(["low", "high"]) }),
    output: Schema.String,
    run: ({ subject }) => Effect.sync(() => (filed.push(subject), `T-${filed.length}`))
  })
  const Transfer = Tool.send("transfer.send", {
    title: "Transfer",
    description: "Move money.",
    input: Schema.Struct({ amount: Schema.Number }),
    payload: Schema.Struct({ amount: Schema.Number }),
    output: Schema.Boolean,
    prepare: (input) => Effect.succeed(input),
    deliver: () => Effect.succeed(true)
  })
  return { filed, SubmitTicket, Transfer, toolkit: Toolkit.make(SubmitTicket, Transfer) }
}

describe("Guideline.autoApprove", () => {
  it.effect("approves the calls its condition admits, audited as the rule; the human is asked for the rest", () =>
    Effect.gen(function*() {
      const { filed, SubmitTicket, toolkit } = makeTickets()
      const rule = Guideline.autoApprove("low-priority-tickets", {
        description: "Low-priority tickets from support are filed without asking.",
        tool: SubmitTicket,
        when: Condition.and(Condition.equals("input.priority", "low"), Condition.role("support"))
      })
      const ui = HumanConfirm.scripted([HumanConfirm.reject("agent:alice", "not now")])
      const audit = Audit.memory()
      const layer = Layer.merge(HumanConfirm.layer(ui, { autoApprove: [rule] }), audit.layer)
      const registry = Registry.make(toolkit)
      const low = yield* registry.invoke("ticket.submit", { subject: "printer", priority: "low" }, { role: "support" })
        .pipe(Effect.provide(layer))
      const high = yield* registry.invoke("ticket.submit", { subject: "outage", priority: "high" }, { role: "support" })
        .pipe(Effect.provide(layer))
      expect(low.ok).toBe(true)
      expect(high).toMatchObject({ ok: false, code: "rejected" })
      expect(filed).toEqual(["printer"])
      expect(ui.seen.map((view) => view.payload)).toEqual([{ subject: "outage", priority: "high" }])
      expect(
        audit.entries.filter((entry) => entry.type === "decided").map((entry) => entry.type === "decided" && entry.by)
      )
        .toEqual(["rule:low-priority-tickets", "agent:alice"])
    }))

  it("refuses a send tool (its type check cast away) and a bad rule at construction", () => {
    const { SubmitTicket, Transfer } = makeTickets()
    expect(() =>
      Guideline.autoApprove("sends", {
        description: "x",
        tool: Transfer as unknown as typeof SubmitTicket,
        when: Condition.always
      })
    ).toThrow("transfer.send is a send tool, and a send always asks a human")
    expect(() =>
      Guideline.autoApprove("no description", { description: "", tool: SubmitTicket, when: Condition.always })
    )
      .toThrow("the id must be a plain name")
    expect(() => Guideline.autoApprove("empty", { description: " ", tool: SubmitTicket, when: Condition.always }))
      .toThrow("the description is missing")
  })
})
