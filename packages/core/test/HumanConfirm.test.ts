import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { Audit, HumanConfirm, Invocation } from "@graded/core"
import { HumanTriggerTag } from "../src/internal/capability.js"
import { makeDesk } from "./supportDesk.js"

describe("HumanConfirm", () => {
  it.effect("shows the tool, grade, title, exact payload and who is acting", () =>
    Effect.gen(function*() {
      const { SendReply } = makeDesk()
      const ui = HumanConfirm.scripted([HumanConfirm.approve("agent:alice")])
      yield* SendReply.invoke({ text: "Hi" }).pipe(
        Invocation.within({ actor: "agent:alice", traceId: "t-9" }),
        Effect.provide(HumanConfirm.layer(ui))
      )
      expect(ui.seen).toMatchObject([{
        tool: "chat.sendMessage",
        grade: "send",
        title: "Send a chat message",
        description: "Send a message to the customer.",
        payload: { to: "customer:42", text: "Hi" },
        actor: "agent:alice",
        traceId: "t-9",
        schema: { type: "object", required: ["to", "text"] }
      }])
      // The UI can check an edit before answering.
      const view = ui.seen[0]!
      expect(yield* Effect.result(view.check({ to: "customer:42", text: "ok" }))).toMatchObject({ _tag: "Success" })
      const bad = yield* Effect.flip(view.check({ to: "customer:42", text: "" }))
      expect(bad).toContain("text")
    }))

  it.effect("a scripted UI that runs out of decisions rejects", () =>
    Effect.gen(function*() {
      const { SendReply, effects } = makeDesk()
      const error = yield* Effect.flip(
        SendReply.invoke({ text: "Hi" }).pipe(Effect.provide(HumanConfirm.layer(HumanConfirm.scripted([]))))
      )
      expect(error).toMatchObject({ _tag: "@graded/core/ToolError/Rejected", by: "scripted-ui" })
      expect(effects.delivered).toEqual([])
    }))

  it.effect("records the decision: who, and whether they edited", () =>
    Effect.gen(function*() {
      const { SubmitTicket } = makeDesk()
      const audit = Audit.memory()
      const ui = HumanConfirm.scripted([
        HumanConfirm.approve("agent:bob", { subject: "Edited" }),
        HumanConfirm.reject("agent:bob", "not now"),
        HumanConfirm.approve("agent:bob", { subject: 7 })
      ])
      const layer = Layer.merge(HumanConfirm.layer(ui), audit.layer)
      yield* SubmitTicket.invoke({ subject: "A" }).pipe(Effect.provide(layer))
      yield* Effect.flip(SubmitTicket.invoke({ subject: "B" }).pipe(Effect.provide(layer)))
      yield* Effect.flip(SubmitTicket.invoke({ subject: "C" }).pipe(Effect.provide(layer)))
      const decided = audit.entries.filter((entry) => entry.type === "decided")
      expect(decided).toMatchObject([
        { by: "agent:bob", decision: "approved", edited: true },
        { by: "agent:bob", decision: "rejected", edited: false, reason: "not now" },
        { by: "agent:bob", decision: "invalid-edit", edited: true }
      ])
    }))

  it.effect("trigger provides HumanTrigger with who and how", () =>
    Effect.gen(function*() {
      const trigger = yield* Effect.provide(
        HumanTriggerTag,
        HumanConfirm.trigger({ by: "agent:alice", via: "shortcut" })
      )
      expect(trigger).toMatchObject({ by: "agent:alice", via: "shortcut" })
    }))
})
