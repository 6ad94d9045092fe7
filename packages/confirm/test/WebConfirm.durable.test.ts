// The page's proposal cards come from the store, over real HTTP and real
// databases: a SQLite file outlives the page's server (a new server on the
// same file shows the same cards, each decided once), and two page servers on
// one PostgreSQL database (PGlite's wire server, and the server GRADED_PG_URL
// names when set) show the same cards, with a card decided on both at once
// delivered once and the loser told who won.
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Context, Effect, Exit, Layer, Scope } from "effect"
import { Proposal, ProposalStore } from "@graded/core"
import { WebConfirm } from "@graded/confirm"
import { Sql } from "@graded/sql"
import * as path from "node:path"
import { createDatabase, startPglite, tempDir } from "../../sql/test/databases.js"
import { client, makeMailer } from "./proposalPage.js"

const people = { "token-of-alice-0123456789abcdef": "alice", "token-of-bob-0123456789abcdef00": "bob" }
const [alice, bob] = Object.keys(people) as [string, string]

type Durable = Layer.Layer<ProposalStore.ProposalStore, unknown>

/** A page server on its own connection to the database, as another process would have; closed with `scope`. */
const pageServer = (database: Durable, toolkit: ReturnType<typeof makeMailer>["toolkit"], scope: Scope.Scope) =>
  Effect.gen(function*() {
    const store = yield* Scope.provide(Layer.build(database), scope)
    const { server } = yield* Scope.provide(
      WebConfirm.make({ users: people, proposals: { toolkit } }),
      scope
    ).pipe(Effect.provide(store))
    return { store, server, as: (token: string) => client(server.origin, token) }
  })

describe("WebConfirm on a SQLite file", () => {
  it.live("cards survive a restart of the page's server: the next server shows them, and each is decided once", () =>
    Effect.gen(function*() {
      const filename = path.join(yield* tempDir, "app.db")
      const database = Sql.sqlite({ filename })
      const mailer = makeMailer()

      // The first page server: a model proposes two sends, one is approved and stops mid-delivery.
      const first = yield* Scope.make()
      const one = yield* pageServer(database, mailer.toolkit, first)
      const [pending, stopped] = yield* Effect.all([
        mailer.propose("Your refund is on its way."),
        mailer.propose("Your order shipped.")
      ]).pipe(Effect.provide(one.store))
      const { deliveryKey } = yield* mailer.stopMidDelivery(stopped!).pipe(Effect.provide(one.store))
      const before = yield* one.as(alice).cards
      expect(before.map((card) => [card.id, card.kind])).toEqual([[stopped, "in-doubt"], [pending, "proposal"]])
      yield* Scope.close(first, Exit.void)

      // The second, on the same file: the same cards, with CSRF values of its own.
      const second = yield* Scope.make()
      const two = yield* pageServer(database, mailer.toolkit, second)
      const after = yield* two.as(bob).cards
      expect(after.map((card) => [card.id, card.kind, card.deliveryKey])).toEqual([
        [stopped, "in-doubt", deliveryKey],
        [pending, "proposal", undefined]
      ])
      const [inDoubt, proposal] = after
      // The first server's CSRF values mean nothing here.
      expect((yield* two.as(bob).decide(proposal, { action: "approve" }, { "x-graded-csrf": before[1].csrf })).status)
        .toBe(403)
      expect(yield* two.as(bob).decide(proposal, { action: "approve" }))
        .toEqual({ status: 200, body: { message: "Approved by bob." } })
      expect(yield* two.as(alice).decide(proposal, { action: "approve" })).toMatchObject({
        status: 409,
        body: { by: "bob", status: "delivered" }
      })
      expect(yield* two.as(alice).resolve(inDoubt, { action: "mark-done", note: "in the outbox" }))
        .toEqual({ status: 200, body: { message: "Marked done by alice." } })
      expect(yield* two.as(bob).resolve(inDoubt, { action: "retry" })).toMatchObject({
        status: 409,
        body: { by: "alice", status: "delivered" }
      })
      expect(yield* two.as(bob).cards).toEqual([])
      expect(mailer.state.sent.map((sent) => sent.payload.text)).toEqual(["Your refund is on its way."])
      yield* Scope.close(second, Exit.void)

      // What the file says, read by a third connection.
      const third = Context.get(yield* Layer.build(database), ProposalStore.ProposalStore)
      expect((yield* third.list()).map((p) => [p.id, p.status, p.decision?.by])).toEqual([
        [pending, "delivered", "bob"],
        [stopped, "delivered", "alice"]
      ])
    }))
})

const twoServers = (name: string, skip: boolean, start: () => Promise<{ url: string; stop: () => Promise<void> }>) =>
  describe.skipIf(skip)(name, () => {
    let url = ""
    let stop = async () => {}
    beforeAll(async () => {
      const started = await start()
      url = started.url
      stop = started.stop
    })
    afterAll(() => stop())

    it.live(
      "two page servers show the same cards; decided on both at once, each is delivered once and the loser hears who won",
      () =>
        Effect.gen(function*() {
          const mailer = makeMailer()
          const database = Sql.postgres({ url })
          const [a, b] = yield* Effect.all([
            pageServer(database, mailer.toolkit, yield* Effect.scope),
            pageServer(database, mailer.toolkit, yield* Effect.scope)
          ], { concurrency: "unbounded" })
          const ids = yield* Effect.all([
            mailer.propose("First"),
            mailer.propose("Second"),
            mailer.propose("Third")
          ]).pipe(Effect.provide(a.store))
          const [stopped, alsoStopped] = yield* Effect.forEach(ids.slice(1), (id) => mailer.stopMidDelivery(id)).pipe(
            Effect.provide(b.store)
          )
          const onA = yield* a.as(alice).cards
          const onB = yield* b.as(bob).cards
          const shape = (cards: Array<any>) => cards.map((card) => [card.id, card.kind, card.deliveryKey ?? null])
          expect(shape(onA)).toEqual([
            [stopped!.id, "in-doubt", stopped!.deliveryKey],
            [alsoStopped!.id, "in-doubt", alsoStopped!.deliveryKey],
            [ids[0], "proposal", null]
          ])
          expect(shape(onB)).toEqual(shape(onA))
          const card = (cards: Array<any>, id: string) => cards.find((c) => c.id === id)

          // The pending card, approved by alice on A and bob on B at the same time.
          const approvals = yield* Effect.all([
            a.as(alice).decide(card(onA, ids[0]!), { action: "approve" }),
            b.as(bob).decide(card(onB, ids[0]!), { action: "approve" })
          ], { concurrency: "unbounded" })
          const won = approvals.filter((answer) => answer.status === 200)
          const lost = approvals.filter((answer) => answer.status === 409)
          expect([won.length, lost.length]).toEqual([1, 1])
          const winner = won[0]!.body.message === "Approved by alice." ? "alice" : "bob"
          expect(won[0]!.body.message).toBe(`Approved by ${winner}.`)
          expect(lost[0]!.body.error).toMatch(new RegExp(`^already decided by ${winner} \\(`))
          expect(mailer.state.sent.map((sent) => sent.payload.text)).toEqual(["First"])

          // An in-doubt card, retried on both at once: sent again once, with its own key.
          const retries = yield* Effect.all([
            a.as(alice).resolve(card(onA, stopped!.id), { action: "retry" }),
            b.as(bob).resolve(card(onB, stopped!.id), { action: "retry" })
          ], { concurrency: "unbounded" })
          expect(retries.map((answer) => answer.status).sort()).toEqual([200, 409])
          expect(mailer.state.sent.map((sent) => [sent.payload.text, sent.key])).toEqual([
            ["First", expect.any(String)],
            ["Second", stopped!.deliveryKey]
          ])

          // The other, marked done on both at once: settled once.
          const marks = yield* Effect.all([
            a.as(alice).resolve(card(onA, alsoStopped!.id), { action: "mark-done" }),
            b.as(bob).resolve(card(onB, alsoStopped!.id), { action: "mark-done" })
          ], { concurrency: "unbounded" })
          expect(marks.map((answer) => answer.status).sort()).toEqual([200, 409])
          expect(marks.find((answer) => answer.status === 409)!.body.error).toMatch(/^already decided by (alice|bob) /)

          expect(yield* a.as(alice).cards).toEqual([])
          expect(yield* b.as(bob).cards).toEqual([])
          expect(mailer.state.sent).toHaveLength(2)
          expect((yield* Proposal.list().pipe(Effect.provide(a.store))).map((p) => p.status)).toEqual([
            "delivered",
            "delivered",
            "delivered"
          ])
        }),
      60_000
    )
  })

twoServers("two page servers on PostgreSQL (PGlite's wire server on 127.0.0.1)", false, startPglite)
twoServers(
  "two page servers on PostgreSQL (the server GRADED_PG_URL names)",
  process.env.GRADED_PG_URL === undefined || process.env.GRADED_PG_URL === "",
  async () => {
    const database = await createDatabase(process.env.GRADED_PG_URL!)
    return { url: database.url, stop: database.drop }
  }
)
