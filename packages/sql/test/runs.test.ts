// Runs on a SQLite file: a run waits for a human, the app "restarts" (a new
// layer on the same file, nothing kept in memory), a human decides through
// another layer, and the run goes on from its stored state.
import { describe, expect, it } from "@effect/vitest"
import { Cause, Effect, Exit, Option, Schema } from "effect"
import { HumanConfirm, Invocation, Proposal, Runs, ScriptedModel, Tool, Toolkit } from "@graded/core"
import { Sql } from "@graded/sql"
import * as path from "node:path"
import { billingOf, makeDesk } from "../../core/test/supportDesk.js"
import { tempDir } from "./databases.js"
import { currentStoreClient } from "./storeClient.js"

const { call, calls, raw, text } = ScriptedModel

describe("Runs on Sql.sqlite", () => {
  it.effect("a waiting run survives a restart; the decision is made elsewhere; resume finishes it, delivered once", () =>
    Effect.gen(function*() {
      const desk = makeDesk()
      const filename = path.join(yield* tempDir, "app.db")
      const open = () => Sql.sqlite({ filename })
      const started = yield* Runs.start({
        toolkit: desk.support,
        prompt: "Tell the customer.",
        runId: "run-7",
        context: { actor: "agent:alice" }
      }).pipe(
        Effect.provide(ScriptedModel.layer([
          calls(call("kb.search", { query: "refund" }), call("chat.sendMessage", { text: "Refunded." }))
        ])),
        Effect.provide(open()),
        Effect.scoped
      )
      expect(started).toMatchObject({ status: "waiting", runId: "run-7", pending: [{ tool: "chat.sendMessage" }] })
      if (started.status !== "waiting") return
      // The page's process: its own layer on the file.
      yield* Invocation.within({ actor: "agent:alice" })(Proposal.approve(desk.support, started.pending[0]!.id)).pipe(
        Effect.provide(HumanConfirm.layer(HumanConfirm.scripted([HumanConfirm.approve("agent:alice")]))),
        Effect.provide(open()),
        Effect.scoped
      )
      // The app again, restarted.
      const resumed = yield* Runs.resume("run-7", { toolkit: desk.support }).pipe(
        Effect.provide(ScriptedModel.layer([text("Done: refunded and told.")])),
        Effect.provide(open()),
        Effect.scoped
      )
      expect(resumed).toMatchObject({ status: "finished", result: { answer: "Done: refunded and told.", rounds: 2 } })
      if (resumed.status !== "finished") return
      expect(resumed.result.calls.map((c) => [c.tool, c.ok])).toEqual([
        ["kb.search", true],
        ["chat.sendMessage", true]
      ])
      // Decoded with the tool's schema on the way back: the read's output as the tool typed it.
      expect(resumed.result.calls[0]).toMatchObject({ output: [{ id: "kb-1", title: "About refund" }] })
      expect(desk.effects.delivered).toEqual([{ to: "customer:42", text: "Refunded." }])
      expect(desk.effects.searches).toEqual(["refund"])
    }))

  // Issue 33, item 9: JSON.parse takes a value nested 20,000 deep (40 KB of
  // brackets, within maxArgumentChars), JSON.stringify does not. The read's
  // input went into the run's state, whose save died (a defect), and the run
  // stayed held by its lease for 10 minutes.
  it.effect("a read and a write nested 20,000 deep are refused as invalid input; the run finishes and is not left held", () =>
    Effect.gen(function*() {
      const filename = path.join(yield* tempDir, "app.db")
      const open = () => Sql.sqlite({ filename })
      let looked = 0
      const Look = Tool.read("notes.look", {
        title: "Look at a note",
        description: "Looks at any JSON.",
        input: Schema.Struct({ data: Schema.Unknown }),
        output: Schema.Boolean,
        run: () => Effect.sync(() => (looked++, true))
      })
      // A write the model calls the same way: a durable run's write becomes a
      // proposal, stored; it is refused before, as the read is.
      const Keep = Tool.write("notes.keep", {
        title: "Keep a note",
        description: "Keeps any JSON.",
        input: Schema.Struct({ data: Schema.Unknown }),
        output: Schema.Boolean,
        run: () => Effect.succeed(true)
      })
      const toolkit = Toolkit.make(Look, Keep)
      const deep = `{"data":${"[".repeat(20_000)}${"]".repeat(20_000)}}`
      // Compared as a summary: a failure holding the value cannot even be printed.
      const summary = (exit: Exit.Exit<Runs.Outcome<Toolkit.Tools<typeof toolkit>>, unknown>) =>
        Exit.isSuccess(exit)
          ? exit.value.status === "finished"
            ? exit.value.result.calls.map((c) => c.ok ? "ok" : c.error.message)
            : exit.value.status
          : Option.match(Cause.findErrorOption(exit.cause), {
            onNone: () => "died",
            onSome: (error) => `failed: ${String((error as { _tag?: unknown })._tag)}`
          })
      const started = yield* Runs.start({ toolkit, prompt: "Look.", runId: "run-deep" }).pipe(
        Effect.provide(ScriptedModel.layer([
          calls(raw("notes__look", deep, "c-1"), raw("notes__keep", deep, "c-2")),
          text("Could not look.")
        ])),
        Effect.provide(open()),
        Effect.scoped,
        Effect.exit
      )
      const refused = [
        "Invalid input for notes.look: [\"data\"]: nested more than 128 levels deep",
        "Invalid input for notes.keep: [\"data\"]: nested more than 128 levels deep"
      ]
      expect(summary(started)).toEqual(refused)
      expect(looked).toBe(0)
      // Another process reads the finished run at once: no lease holds it.
      const again = yield* Runs.resume("run-deep", { toolkit }).pipe(
        Effect.provide(ScriptedModel.layer([])),
        Effect.provide(open()),
        Effect.scoped,
        Effect.exit
      )
      expect(summary(again)).toEqual(refused)
    }))
})

describe("a write sub-agent's nested run on Sql.sqlite", () => {
  it.effect("each step a new process on the file: the card keeps its path, the approval runs the inner tool once, the parent finishes with the answer", () =>
    Effect.gen(function*() {
      const desk = makeDesk()
      const filename = path.join(yield* tempDir, "app.db")
      // Each step its own layer on the file and its own tools: nothing kept in memory.
      const step = <A, E, R>(self: (toolkit: Toolkit.Any) => Effect.Effect<A, E, R>) =>
        self(Toolkit.make(billingOf(desk))).pipe(Effect.provide(Sql.sqlite({ filename })), Effect.scoped)
      const started = yield* step((toolkit) =>
        Runs.start({ toolkit, prompt: "Refund order 42.", runId: "run-n" }).pipe(
          Effect.provide(ScriptedModel.layer([
            calls(call("agent.billing", { issue: "refund order 42" }, "o1")),
            calls(call("kb.search", { query: "refund policy", limit: null }, "i1")),
            calls(call("ticket.submit", { subject: "Refund order 42" }, "i2"))
          ]))
        )
      )
      expect(started).toMatchObject({
        status: "waiting",
        pending: [{ tool: "ticket.submit", path: ["agent.billing"], runId: "run-n:1:o1" }]
      })
      if (started.status !== "waiting") return
      const id = started.pending[0]!.id
      // Read back by a new process: the path is the row's.
      const read = yield* step(() => Proposal.get(id))
      expect(read.path).toEqual(["agent.billing"])
      const ui = HumanConfirm.scripted([HumanConfirm.approve("agent:alice")])
      yield* step((toolkit) =>
        Invocation.within({ actor: "agent:alice" })(Proposal.approve(toolkit, id)).pipe(
          Effect.provide(HumanConfirm.layer(ui)),
          Effect.provide(ScriptedModel.layer([]))
        )
      )
      expect(ui.seen[0]).toMatchObject({ tool: "ticket.submit", path: ["agent.billing"] })
      expect(desk.effects.submitted).toEqual(["Refund order 42"])
      const resumed = yield* step((toolkit) =>
        Runs.resume("run-n", { toolkit }).pipe(
          Effect.provide(ScriptedModel.layer([text("Filed T-1."), text("Your refund is filed.")]))
        )
      )
      expect(resumed).toMatchObject({
        status: "finished",
        result: { answer: "Your refund is filed.", calls: [{ ok: true, tool: "agent.billing", output: "Filed T-1." }] }
      })
      expect(desk.effects.submitted).toEqual(["Refund order 42"])
    }))

  it.effect("a path column that is not a list of names leads to no tool: the proposal is refused, not the root's same-named tool run", () =>
    Effect.gen(function*() {
      const desk = makeDesk()
      const filename = path.join(yield* tempDir, "app.db")
      const layer = () => Sql.sqlite({ filename })
      const started = yield* Runs.start({ toolkit: Toolkit.make(billingOf(desk)), prompt: "Refund.", runId: "run-p" })
        .pipe(
          Effect.provide(ScriptedModel.layer([
            calls(call("agent.billing", { issue: "refund" }, "o1")),
            calls(call("ticket.submit", { subject: "Refund" }, "i1"))
          ])),
          Effect.provide(layer()),
          Effect.scoped
        )
      if (started.status !== "waiting") return expect(started.status).toBe("waiting")
      yield* Effect.gen(function*() {
        const sql = yield* currentStoreClient
        yield* sql`UPDATE graded_proposals SET path = ${"not json"}`
      }).pipe(Effect.provide(layer()), Effect.scoped)
      // The root's toolkit holds a ticket.submit of its own: a lost path must not reach it.
      const refused = yield* Invocation.within({ actor: "agent:alice" })(
        Proposal.approve(Toolkit.make(desk.SubmitTicket, billingOf(desk)), started.pending[0]!.id)
      ).pipe(
        Effect.provide(HumanConfirm.layer(HumanConfirm.scripted([HumanConfirm.approve("agent:alice")]))),
        Effect.provide(ScriptedModel.layer([])),
        Effect.provide(layer()),
        Effect.scoped,
        Effect.flip
      )
      expect(refused).toMatchObject({ _tag: "@graded/core/ToolError/Refused", gate: "unknown" })
      expect(desk.effects.submitted).toEqual([])
    }))
})
