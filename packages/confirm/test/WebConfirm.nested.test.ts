// The confirm page's cards of a durable run's sub-agent (a nested run on a
// SQLite file): listed from the store with the path to the sub-agent, and
// approved through the outer run's toolkit, which runs the inner tool once;
// described and edited as the inner tool, even beside an outer one of its name.
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Layer, Schema, Scope } from "effect"
import { Runs, ScriptedModel, Tool, Toolkit } from "@graded/core"
import { WebConfirm } from "@graded/confirm"
import { Sql } from "@graded/sql"
import * as path from "node:path"
import { tempDir } from "../../sql/test/databases.js"
import { billingOf, makeDesk } from "../../core/test/supportDesk.js"
import { client } from "./proposalPage.js"

const people = { "token-of-alice-0123456789abcdef": "alice" }
const [alice] = Object.keys(people) as [string]
const { call, calls, text } = ScriptedModel

// The confirm page over the run's file, in `scope`, as alice sees it.
const pageOn = (database: ReturnType<typeof Sql.sqlite>, toolkit: Toolkit.Any, scope: Scope.Scope) =>
  Effect.gen(function*() {
    const store = yield* Scope.provide(Layer.build(database), scope)
    const { server } = yield* Scope.provide(WebConfirm.make({ users: people, proposals: { toolkit } }), scope).pipe(
      Effect.provide(store),
      Effect.provide(ScriptedModel.layer([]))
    )
    return client(server.origin, alice)
  })

describe("WebConfirm and a nested run", () => {
  it.live("the sub-agent's card shows its path; approved on the page, the inner write runs once and the run finishes", () =>
    Effect.gen(function*() {
      const filename = path.join(yield* tempDir, "app.db")
      const database = Sql.sqlite({ filename })
      const desk = makeDesk()
      const toolkit = Toolkit.make(billingOf(desk))
      const started = yield* Runs.start({ toolkit, prompt: "Refund order 42.", runId: "run-web" }).pipe(
        Effect.provide(ScriptedModel.layer([
          calls(call("agent.billing", { issue: "refund order 42" }, "o1")),
          calls(call("ticket.submit", { subject: "Refund order 42" }, "i1"))
        ])),
        Effect.provide(database),
        Effect.scoped
      )
      expect(started.status).toBe("waiting")
      const scope = yield* Scope.make()
      const page = yield* pageOn(database, toolkit, scope)
      const cards = yield* page.cards
      expect(cards).toHaveLength(1)
      expect(cards[0]).toMatchObject({ tool: "ticket.submit", path: ["agent.billing"] })
      expect(yield* page.decide(cards[0], { action: "approve" }))
        .toEqual({ status: 200, body: { message: "Approved by alice." } })
      expect(desk.effects.submitted).toEqual(["Refund order 42"])
      yield* Scope.close(scope, Exit.void)
      const done = yield* Runs.resume("run-web", { toolkit }).pipe(
        Effect.provide(ScriptedModel.layer([text("Filed T-1."), text("Filed.")])),
        Effect.provide(database),
        Effect.scoped
      )
      expect(done).toMatchObject({ status: "finished", result: { calls: [{ tool: "agent.billing", ok: true }] } })
      expect(desk.effects.submitted).toEqual(["Refund order 42"])
    }))

  it.live("the card is the inner tool's, described and edited as it, beside an outer tool of the same name", () =>
    Effect.gen(function*() {
      const filename = path.join(yield* tempDir, "app.db")
      const database = Sql.sqlite({ filename })
      const desk = makeDesk()
      const escalated: Array<string> = []
      // The outer toolkit's own ticket.submit: another tool, another payload.
      const Escalate = Tool.write("ticket.submit", {
        title: "Escalate",
        description: "Escalates the case to the legal team.",
        input: Schema.Struct({ queue: Schema.String }),
        output: Schema.String,
        run: ({ queue }) => Effect.sync(() => escalated.push(queue)).pipe(Effect.as("escalated"))
      })
      const toolkit = Toolkit.make(billingOf(desk), Escalate)
      yield* Runs.start({ toolkit, prompt: "Refund order 42.", runId: "run-twin" }).pipe(
        Effect.provide(ScriptedModel.layer([
          calls(call("agent.billing", { issue: "refund order 42" }, "o1")),
          calls(call("ticket.submit", { subject: "Refund order 42" }, "i1"))
        ])),
        Effect.provide(database),
        Effect.scoped
      )
      const scope = yield* Scope.make()
      const page = yield* pageOn(database, toolkit, scope)
      const [card] = yield* page.cards
      expect(card).toMatchObject({
        tool: "ticket.submit",
        path: ["agent.billing"],
        description: "File a support ticket."
      })
      expect(Object.keys(card.schema.properties)).toEqual(["subject"])
      expect(yield* page.decide(card, { action: "edit", payload: { subject: "Refund order 42, checked" } }))
        .toEqual({ status: 200, body: { message: "Approved with an edit by alice." } })
      expect(desk.effects.submitted).toEqual(["Refund order 42, checked"])
      expect(escalated).toEqual([])
      yield* Scope.close(scope, Exit.void)
    }))
})
