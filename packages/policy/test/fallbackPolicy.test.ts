import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { Agent, Audit, ScriptedModel, Toolkit } from "@graded/core"
import { Fallback, Policy } from "@graded/policy"
import { guidelines, makeDesk } from "./creditDesk.js"

const { call, calls, text } = ScriptedModel

describe("Policy with a fallback", () => {
  it.effect("when no guideline matches, the fallback's read tools run, counted and queued; past the quota, the fixed answer", () =>
    Effect.gen(function*() {
      const desk = makeDesk()
      const policy = Policy.make(guidelines, {
        toolkit: desk.toolkit,
        fallback: {
          tools: ["kb.search"],
          perTrace: 1,
          perTenantPerDay: 10,
          answer: "A colleague will get back to you."
        }
      })
      const audit = Audit.memory()
      const shown: Array<ReadonlyArray<string>> = []
      const model = ScriptedModel.layer([
        (
          request
        ) => (shown.push(request.tools.map((tool) => tool.name)),
          calls(call("kb.search", { query: "opening hours" }, "c1"), call("kb.search", { query: "holidays" }, "c2"))),
        text("Here is what I found.")
      ])
      const result = yield* Agent.run({
        toolkit: Toolkit.readOnly(desk.toolkit),
        prompt: "When are you open?",
        context: { role: "visitor", tenant: "acme", traceId: "t-1" }
      }).pipe(Effect.provide(Layer.mergeAll(model, Policy.layer(policy), audit.layer)))
      // Only the fallback tool is offered to a context no guideline matches.
      expect(shown[0]).toEqual(["kb__search"])
      expect(desk.ran.searches).toBe(1)
      expect(result.calls[1]).toMatchObject({ ok: false, error: { code: "refused" } })
      expect(result.calls[1]?.ok === false && result.calls[1].error.message).toContain(
        "A colleague will get back to you."
      )
      expect(audit.entries.find((entry) => entry.type === "refused")).toMatchObject({
        tool: "kb.search",
        gate: "policy:fallback-quota"
      })
      const store = yield* Fallback.Store
      const cases = yield* store.cases()
      expect(cases.map((c) => [c.traceId, c.tenant, c.tool, c.overQuota])).toEqual([
        ["t-1", "acme", "kb.search", false],
        ["t-1", "acme", "kb.search", true]
      ])
    }).pipe(Effect.provide(Fallback.memory)))

  it.effect("without a store in scope, the fallback does not run", () =>
    Effect.gen(function*() {
      const desk = makeDesk()
      const policy = Policy.make(guidelines, {
        toolkit: desk.toolkit,
        fallback: { tools: ["kb.search"], perTrace: 1, perTenantPerDay: 10, answer: "No." }
      })
      const result = yield* Agent.run({
        toolkit: Toolkit.readOnly(desk.toolkit),
        prompt: "?",
        context: { role: "visitor" }
      }).pipe(Effect.provide(Layer.merge(
        ScriptedModel.layer([calls(call("kb.search", { query: "x" })), text("ok")]),
        Policy.layer(policy)
      )))
      expect(result.calls[0]).toMatchObject({ ok: false, error: { code: "refused" } })
      expect(desk.ran.searches).toBe(0)
    }))

  it("the fallback runs read tools only", () => {
    const desk = makeDesk()
    expect(() =>
      Policy.make(guidelines, {
        toolkit: desk.toolkit,
        fallback: { tools: ["ticket.submit"], perTrace: 1, perTenantPerDay: 1, answer: "No." }
      })
    ).toThrow("the fallback may run read tools only; ticket.submit is a write tool")
  })
})
