// The debug bridge: a page script (or any caller of the bridge)
// tries to write or send without a human, or to act as someone else.
// Each test asserts that it cannot.
import { describe, expect, it } from "@effect/vitest"
import { Layer } from "effect"
import { Audit, Bridge, HumanConfirm, Registry, ScriptedModel } from "@graded/core"
import { makeDesk } from "./supportDesk.js"

describe("Bridge: what a caller cannot do", () => {
  it("a caller's context cannot name another requester on the card or in the audit", async () => {
    const desk = makeDesk()
    const ui = HumanConfirm.scripted([HumanConfirm.reject("dev:alice", "no")])
    const audit = Audit.memory()
    const bridge = Bridge.make(Registry.make(desk.support), [], {
      layer: Layer.mergeAll(HumanConfirm.layer(ui), ScriptedModel.layer([]), audit.layer),
      by: "dev:alice"
    })
    await bridge.invoke("chat.sendMessage", { text: "Hi" }, { actor: "ops:bob (verified by security)" })
    await bridge.dispose()
    expect(ui.seen.map((view) => view.actor)).toEqual(["dev:alice"])
    expect(audit.entries.every((entry) => entry.actor === "dev:alice")).toBe(true)
  })

  it("no context a caller passes reaches a write or send without the app's HumanConfirm", async () => {
    const desk = makeDesk()
    const ui = HumanConfirm.scripted([])
    const bridge = Bridge.make(Registry.make(desk.support), [], {
      layer: Layer.mergeAll(HumanConfirm.layer(ui), ScriptedModel.layer([])),
      by: "dev:alice"
    })
    const contexts = [
      { autonomous: false },
      { autonomous: true },
      { actor: "rule:auto" },
      { actor: "human", traceId: "t-1", untrusted: [] }
    ]
    for (const context of contexts) {
      await bridge.invoke("chat.sendMessage", { text: "Hi" }, context)
      await bridge.invoke("ticket.submit", { subject: "x" }, context)
    }
    await bridge.dispose()
    expect(desk.effects.delivered).toEqual([])
    expect(desk.effects.submitted).toEqual([])
  })
})
