import { afterEach, describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Schema } from "effect"
import { Bridge, HumanConfirm, Plan, Registry, ScriptedModel } from "@graded/core"
import { makeDesk } from "./supportDesk.js"

const setup = (decisions: Parameters<typeof HumanConfirm.scripted>[0] = []) => {
  const desk = makeDesk()
  const ui = HumanConfirm.scripted(decisions)
  const FileIt = Plan.make("file-it", {
    input: Schema.Struct({ subject: Schema.String }),
    writes: [desk.SubmitTicket],
    steps: ({ subject }, step) =>
      Effect.gen(function*() {
        yield* step.validate("check", subject !== "", "the subject is empty")
        return yield* step.write("submit", desk.SubmitTicket, { subject })
      })
  })
  const bridge = Bridge.expose(Registry.make(desk.support), [FileIt], {
    layer: Layer.merge(HumanConfirm.layer(ui), ScriptedModel.layer([])),
    by: "dev:alice",
    name: "__gradedTest"
  })
  return { ...desk, ui, bridge }
}

describe("Bridge", () => {
  // expose puts the bridge on globalThis: taken off again, as other files share this worker's globals.
  afterEach(() => {
    delete (globalThis as Record<string, unknown>).__gradedTest
  })

  it("sits on globalThis and lists what is offered", async () => {
    const { bridge } = setup()
    expect((globalThis as Record<string, unknown>).__gradedTest).toBe(bridge)
    const listing = await bridge.list({ autonomous: true })
    expect(listing.map((entry) => [entry.name, entry.offered])).toEqual([
      ["kb.search", true],
      ["ticket.submit", false],
      ["chat.sendMessage", false]
    ])
    expect(bridge.plans()).toEqual(["file-it"])
    await bridge.dispose()
  })

  it("invokes through every gate: reads run, sends ask the app's HumanConfirm", async () => {
    const { bridge, effects, ui } = setup([HumanConfirm.approve("dev:alice"), HumanConfirm.reject("dev:alice", "typo")])
    expect(await bridge.invoke("kb.search", { query: "vat" })).toMatchObject({ ok: true })
    expect(await bridge.invoke("chat.sendMessage", { text: "Hi" })).toEqual({ ok: true, data: { delivered: true } })
    expect(await bridge.invoke("chat.sendMessage", { text: "Hi again" })).toMatchObject({ ok: false, code: "rejected" })
    expect(effects.delivered).toEqual([{ to: "customer:42", text: "Hi" }])
    expect(ui.seen.map((view) => view.actor)).toEqual(["dev:alice", "dev:alice"])
    await bridge.dispose()
  })

  it("keeps the gates: an autonomous context, unknown names and bad input are refused as data", async () => {
    const { bridge, effects, ui } = setup([HumanConfirm.approve("never")])
    expect(await bridge.invoke("chat.sendMessage", { text: "Hi" }, { autonomous: true })).toMatchObject({
      ok: false,
      requiresConfirm: true
    })
    expect(await bridge.invoke("chat.send", {})).toMatchObject({ ok: false, code: "unknown-tool" })
    expect(await bridge.invoke("kb.search", { query: 1 })).toMatchObject({ ok: false, code: "invalid-input" })
    expect(await bridge.invoke("kb.search")).toMatchObject({ ok: false, code: "invalid-input" })
    expect(effects.delivered).toEqual([])
    expect(ui.seen).toEqual([])
    await bridge.dispose()
  })

  it("runs plans a console user starts, and names the failing step", async () => {
    const { bridge, effects } = setup()
    expect(await bridge.runPlan("file-it", { subject: "VAT" })).toEqual({ ok: true, data: { id: "T-1" } })
    expect(effects.submitted).toEqual(["VAT"])
    expect(await bridge.runPlan("file-it", { subject: "" })).toEqual({
      ok: false,
      error: "Plan file-it failed at step 1 (check): the subject is empty",
      step: "check",
      index: 1
    })
    expect(await bridge.runPlan("nope", {})).toEqual({ ok: false, error: "there is no plan named nope" })
    await bridge.dispose()
  })

  it("never rejects, even when its services cannot be built", async () => {
    const { support } = makeDesk()
    // The layer provides exactly what the tools need, and dies while it is built.
    const bridge = Bridge.make(Registry.make(support), [], {
      layer: HumanConfirm.layer(HumanConfirm.scripted([])).pipe(Layer.provide(Layer.effectDiscard(Effect.die("no UI"))))
    })
    const result = await bridge.invoke("kb.search", { query: "x" })
    expect(result).toMatchObject({ ok: false, code: "failed" })
    await bridge.dispose().catch(() => undefined)
  })
})
