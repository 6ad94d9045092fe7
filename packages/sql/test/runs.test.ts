// Runs on a SQLite file: a run waits for a human, the app "restarts" (a new
// layer on the same file, nothing kept in memory), a human decides through
// another layer, and the run goes on from its stored state.
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { HumanConfirm, Invocation, Proposal, Runs, ScriptedModel } from "@graded/core"
import { Sql } from "@graded/sql"
import * as path from "node:path"
import { makeDesk } from "../../core/test/supportDesk.js"
import { tempDir } from "./databases.js"

const { call, calls, text } = ScriptedModel

describe("Runs on Sql.sqlite", () => {
  it.scoped("a waiting run survives a restart; the decision is made elsewhere; resume finishes it, delivered once", () =>
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
})
