import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Layer, Schema } from "effect"
import { Audit, HumanConfirm, Registry, Tool, Toolkit, ToolError } from "@graded/core"
// The tag is internal: only a test that forges on purpose reaches for it.
import { WriteCapabilityTag } from "../src/internal/capability.js"
import { makeDesk } from "./supportDesk.js"

const human = (...decisions: Parameters<typeof HumanConfirm.scripted>[0]) => {
  const ui = HumanConfirm.scripted(decisions)
  return { ui, layer: HumanConfirm.layer(ui) }
}

describe("Tool.read", () => {
  it.effect("invoke runs the tool and returns its typed result", () =>
    Effect.gen(function*() {
      const { KbSearch, effects } = makeDesk()
      const articles = yield* KbSearch.invoke({ query: "invoice" })
      expect(articles[0]?.title).toBe("About invoice")
      expect(effects.searches).toEqual(["invoice"])
    }))

  it("refuses an invalid name at construction, naming it", () => {
    const name: string = "kb..search"
    expect(() =>
      Tool.read(name, {
        title: "t",
        description: "d",
        input: Schema.Struct({}),
        output: Schema.String,
        run: () => Effect.succeed("x")
      })
    ).toThrow(`Tool name 'kb..search' is invalid`)
  })
})

describe("Tool.write", () => {
  it.effect("runs once a human approves, with the input they saw", () =>
    Effect.gen(function*() {
      const { SubmitTicket, effects } = makeDesk()
      const { layer, ui } = human(HumanConfirm.approve("agent:alice"))
      const result = yield* SubmitTicket.invoke({ subject: "Refund" }).pipe(Effect.provide(layer))
      expect(result).toEqual({ id: "T-1" })
      expect(effects.submitted).toEqual(["Refund"])
      expect(ui.seen.map((view) => [view.tool, view.grade, view.payload])).toEqual([
        ["ticket.submit", "write", { subject: "Refund" }]
      ])
    }))

  it.effect("runs with the edited input when the human edits it", () =>
    Effect.gen(function*() {
      const { SubmitTicket, effects } = makeDesk()
      const { layer } = human(HumanConfirm.approve("agent:alice", { subject: "Refund (edited)" }))
      yield* SubmitTicket.invoke({ subject: "Refund" }).pipe(Effect.provide(layer))
      expect(effects.submitted).toEqual(["Refund (edited)"])
    }))

  it.effect("does not run when the human rejects, and says who and why", () =>
    Effect.gen(function*() {
      const { SubmitTicket, effects } = makeDesk()
      const { layer } = human(HumanConfirm.reject("agent:alice", "duplicate ticket"))
      const error = yield* Effect.flip(SubmitTicket.invoke({ subject: "Refund" }).pipe(Effect.provide(layer)))
      expect(error).toBeInstanceOf(ToolError.Rejected)
      expect(error).toMatchObject({ tool: "ticket.submit", by: "agent:alice", reason: "duplicate ticket" })
      expect(effects.submitted).toEqual([])
    }))

  it.effect("refuses a WriteCapability forged with a cast", () =>
    Effect.gen(function*() {
      const { SubmitTicket, effects } = makeDesk()
      const forged = {
        authorize: () => Effect.die("never called")
      } as unknown as (typeof WriteCapabilityTag)["Service"]
      const error = yield* Effect.flip(
        SubmitTicket.invoke({ subject: "Refund" }).pipe(Effect.provide(Layer.succeed(WriteCapabilityTag, forged)))
      )
      expect(error).toMatchObject({ _tag: "@graded/core/ToolError/Refused", gate: "capability" })
      expect(effects.submitted).toEqual([])
    }))
})

describe("Tool.send", () => {
  it.effect("prepares, asks, then delivers exactly once on approve", () =>
    Effect.gen(function*() {
      const { SendReply, effects } = makeDesk()
      const order: Array<string> = []
      const ui = HumanConfirm.scripted([() => {
        order.push(`confirm after ${effects.prepared} prepare(s), ${effects.delivered.length} delivery(ies)`)
        return HumanConfirm.approve("agent:alice")
      }])
      const result = yield* SendReply.invoke({ text: "Your refund is on its way." }).pipe(
        Effect.provide(HumanConfirm.layer(ui))
      )
      expect(result).toEqual({ delivered: true })
      expect(order).toEqual(["confirm after 1 prepare(s), 0 delivery(ies)"])
      expect(effects.delivered).toEqual([{ to: "customer:42", text: "Your refund is on its way." }])
      expect(ui.seen[0]?.payload).toEqual({ to: "customer:42", text: "Your refund is on its way." })
    }))

  it.effect("never delivers on reject", () =>
    Effect.gen(function*() {
      const { SendReply, effects } = makeDesk()
      const { layer } = human(HumanConfirm.reject("agent:alice", "wrong customer"))
      const error = yield* Effect.flip(SendReply.invoke({ text: "Hi" }).pipe(Effect.provide(layer)))
      expect(error).toMatchObject({
        _tag: "@graded/core/ToolError/Rejected",
        by: "agent:alice",
        reason: "wrong customer"
      })
      expect(effects.prepared).toBe(1)
      expect(effects.delivered).toEqual([])
    }))

  it.effect("never delivers an invalid edit, and says what was wrong", () =>
    Effect.gen(function*() {
      const { SendReply, effects } = makeDesk()
      const { layer } = human(HumanConfirm.approve("agent:alice", { to: "customer:42", text: "" }))
      const error = yield* Effect.flip(SendReply.invoke({ text: "Hi" }).pipe(Effect.provide(layer)))
      expect(error).toBeInstanceOf(ToolError.InvalidEdit)
      expect(error.message).toContain("chat.sendMessage")
      expect(error.message).toContain("text")
      expect(effects.delivered).toEqual([])
    }))

  it.effect("rejects an edit with a field the schema does not have", () =>
    Effect.gen(function*() {
      const { SendReply, effects } = makeDesk()
      const { layer } = human(HumanConfirm.approve("agent:alice", { to: "customer:42", text: "Hi", bcc: "all" }))
      const error = yield* Effect.flip(SendReply.invoke({ text: "Hi" }).pipe(Effect.provide(layer)))
      expect(error).toBeInstanceOf(ToolError.InvalidEdit)
      expect(error.message).toContain("bcc")
      expect(effects.delivered).toEqual([])
    }))

  it.effect("delivers the edited payload when the edit is valid", () =>
    Effect.gen(function*() {
      const { SendReply, effects } = makeDesk()
      const { layer } = human(HumanConfirm.approve("agent:alice", { to: "customer:42", text: "Edited" }))
      yield* SendReply.invoke({ text: "Hi" }).pipe(Effect.provide(layer))
      expect(effects.delivered).toEqual([{ to: "customer:42", text: "Edited" }])
    }))

  it.effect("a confirmation delivers once: delivering it again is refused", () =>
    Effect.gen(function*() {
      const kept: Array<
        Tool.SendTool<"mail.send", { text: string }, { text: string }, number, never, never>["deliver"] extends
          (c: infer C) => unknown ? C : never
      > = []
      let sent = 0
      // Not the shared desk's send: this one keeps the confirmation it is given, to deliver it again.
      const Mail = Tool.send("mail.send", {
        title: "Send mail",
        description: "Sends a mail.",
        input: Schema.Struct({ text: Schema.String }),
        payload: Schema.Struct({ text: Schema.String }),
        output: Schema.Number,
        prepare: ({ text }) => Effect.succeed({ text }),
        deliver: (confirmed) => Effect.sync(() => (kept.push(confirmed), ++sent))
      })
      const { layer } = human(HumanConfirm.approve("agent:alice"))
      yield* Mail.invoke({ text: "Once" }).pipe(Effect.provide(layer))
      const again = yield* Effect.flip(Mail.deliver(kept[0]!))
      expect(again).toMatchObject({ _tag: "@graded/core/ToolError/Refused", gate: "confirmation" })
      expect(sent).toBe(1)
    }))

  it.effect("refuses a hand-made confirmation cast past the compiler", () =>
    Effect.gen(function*() {
      const { SendReply, effects } = makeDesk()
      const forged = { tool: "chat.sendMessage", payload: { to: "x", text: "forged" }, by: "me", edited: false }
      const error = yield* Effect.flip(SendReply.deliver(forged as unknown as Parameters<typeof SendReply.deliver>[0]))
      expect(error).toMatchObject({ gate: "confirmation" })
      expect(effects.delivered).toEqual([])
    }))

  it.effect("audits the request, the decision and the delivery", () =>
    Effect.gen(function*() {
      const { SendReply } = makeDesk()
      const audit = Audit.memory()
      const { layer } = human(HumanConfirm.approve("agent:alice"))
      yield* SendReply.invoke({ text: "Hi" }).pipe(Effect.provide(Layer.merge(layer, audit.layer)))
      expect(audit.entries.map((entry) => entry.type)).toEqual(["confirm-requested", "decided", "delivered"])
      expect(audit.entries[1]).toMatchObject({ by: "agent:alice", decision: "approved", edited: false })
    }))

  it.live("an interrupted confirmation delivers nothing", () =>
    Effect.gen(function*() {
      const { SendReply, effects } = makeDesk()
      const ui: HumanConfirm.UI = { confirm: () => Effect.never }
      const exit = yield* SendReply.invoke({ text: "Hi" }).pipe(
        Effect.provide(HumanConfirm.layer(ui)),
        Effect.timeout("10 millis"),
        Effect.exit
      )
      expect(Exit.isFailure(exit)).toBe(true)
      expect(effects.delivered).toEqual([])
    }))
})

describe("a tool's schemas", () => {
  it.effect("are frozen with their AST when the tool is made; a pattern's RegExp is left as it is and still matches", () =>
    Effect.gen(function*() {
      const Id = Schema.String.check(Schema.isPattern(/^c-\d+$/g))
      const Lookup = Tool.read("customer.byId", {
        title: "Customer",
        description: "A customer by id.",
        input: Schema.Struct({ id: Id }),
        output: Schema.String,
        run: ({ id }) => Effect.succeed(id)
      })
      expect(Object.isFrozen(Lookup.input)).toBe(true)
      expect(Object.isFrozen(Lookup.input.ast)).toBe(true)
      // A global RegExp keeps state that the pattern resets on every test.
      const registry = Registry.make(Toolkit.make(Lookup))
      for (const id of ["c-1", "c-22", "c-333"]) {
        expect(yield* registry.invoke("customer.byId", { id })).toEqual({ ok: true, data: id })
      }
      expect(yield* registry.invoke("customer.byId", { id: "x-1" })).toMatchObject({ ok: false, code: "invalid-input" })
    }))

  it.effect("a class schema keeps the AST it had: a getter redefined on the class it extends changes nothing", () =>
    Effect.gen(function*() {
      class Ticket extends Schema.Class<Ticket>("Ticket")({ subject: Schema.String }) {}
      const Other = Schema.Struct({ subject: Schema.Number })
      const Submit = Tool.read("ticket.check", {
        title: "Check a ticket",
        description: "Checks a ticket's subject.",
        input: Ticket,
        output: Schema.String,
        run: (ticket) => Effect.succeed(ticket.subject)
      })
      const registry = Registry.make(Toolkit.make(Submit))
      // Plain JavaScript, no cast: the AST Ticket's parent class hands out, swapped.
      try {
        Object.defineProperty(Object.getPrototypeOf(Ticket), "ast", { get: () => Other.ast, configurable: true })
      } catch {
        // Refused outright is as good.
      }
      expect(Ticket.ast).not.toBe(Other.ast)
      expect(yield* registry.invoke("ticket.check", { subject: "Refund" })).toEqual({ ok: true, data: "Refund" })
      expect(yield* registry.invoke("ticket.check", { subject: 42 })).toMatchObject({
        ok: false,
        code: "invalid-input"
      })
    }))
})
