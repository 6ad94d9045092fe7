// Decisions the page must refuse with a 400 and its reason, leaving the card
// or proposal waiting: a typed name that would read as one of graded's own
// deciders, an edit too deeply nested to describe, an edit without a payload.
import { describe, expect, it } from "@effect/vitest"
import { Audit, HumanConfirm, Proposal, ProposalStore } from "@graded/core"
import { WebConfirm } from "@graded/confirm"
import { Effect, Exit, Fiber, Layer, Scope } from "effect"
import { makeDesk } from "../../core/test/supportDesk.js"
import { client, makeMailer } from "./proposalPage.js"
import * as Raw from "./rawHttp.js"

const listCards = (origin: string, token: string) =>
  Effect.promise(() =>
    Raw.send(origin, {
      method: "GET",
      path: "/api/requests",
      headers: { host: new URL(origin).host, authorization: `Bearer ${token}` }
    })
  )

const waitCard = (origin: string, token: string) =>
  Effect.gen(function*() {
    for (let i = 0; i < 200; i++) {
      const listed = yield* listCards(origin, token)
      if (listed.body?.requests?.length > 0) return listed.body.requests[0] as { id: string; csrf: string }
      yield* Effect.sleep("10 millis")
    }
    return { id: "c-1", csrf: "" }
  })

const post = (origin: string, token: string, path: string, csrf: string, body: string) =>
  Effect.promise(() =>
    Raw.send(origin, {
      method: "POST",
      path,
      headers: {
        host: new URL(origin).host,
        authorization: `Bearer ${token}`,
        "x-graded-csrf": csrf,
        "content-type": "application/json"
      },
      body
    })
  )

// A page server with one pending proposal (a mail), in a scope the test closes.
const oneProposal = Effect.gen(function*() {
  const scope = yield* Scope.make()
  const store = yield* Scope.provide(Layer.build(ProposalStore.memory), scope)
  const mailer = makeMailer()
  const { server } = yield* Scope.provide(
    WebConfirm.make({ singleUser: true, proposals: { toolkit: mailer.toolkit } }),
    scope
  ).pipe(Effect.provide(store))
  const id = yield* mailer.propose("Hello").pipe(Effect.provide(store))
  const page = client(server.origin, server.token!)
  const [card] = yield* page.cards
  return { card: card!, id, mailer, page, scope, server, store }
})

// 300,000 nested arrays: about 600 KB, under the 1 MiB body limit.
const deep = "[".repeat(300_000) + "]".repeat(300_000)

describe("WebConfirm: decisions refused with their reason", () => {
  it.live(
    "single-user: a name graded records for its own deciders (a rule, an MCP client, the server) is refused",
    () =>
      Effect.gen(function*() {
        const scope = yield* Scope.make()
        const audit = Audit.memory()
        const { server, ui } = yield* Scope.provide(WebConfirm.make({ singleUser: true }), scope)
        const desk = makeDesk()
        const fiber = yield* Effect.forkChild(
          desk.SendReply.invoke({ text: "Hello" }).pipe(
            Effect.provide(Layer.merge(HumanConfirm.layer(ui), audit.layer))
          )
        )
        const card = yield* waitCard(server.origin, server.token!)
        const answers: Array<unknown> = []
        for (const claimed of ["rule:refund-under-50", "mcp:claude@1.0", "web-confirm", "  rule:x  "]) {
          const answer = yield* post(
            server.origin,
            server.token!,
            `/api/requests/${card.id}/decision`,
            card.csrf,
            JSON.stringify({ by: claimed, action: "approve" })
          )
          answers.push({ status: answer.status, names: String(answer.body?.error).includes("type your own name") })
        }
        // The card still waits, and a person's own name decides it.
        const still = yield* listCards(server.origin, server.token!)
        const approved = yield* post(
          server.origin,
          server.token!,
          `/api/requests/${card.id}/decision`,
          card.csrf,
          JSON.stringify({ by: "alice", action: "approve" })
        )
        yield* Fiber.await(fiber)
        yield* Scope.close(scope, Exit.void)
        expect(answers).toEqual(Array(4).fill({ status: 400, names: true }))
        expect(still.body?.requests?.length).toBe(1)
        expect(approved.status).toBe(200)
        expect(audit.entries.flatMap((entry) => entry.type === "decided" ? [entry.by] : [])).toEqual(["alice"])
      }),
    30_000
  )

  it.live(
    "a card: an edit nested 300,000 levels deep is a 4xx with its reason, and the card still waits",
    () =>
      Effect.gen(function*() {
        const scope = yield* Scope.make()
        const { server, ui } = yield* Scope.provide(WebConfirm.make({ singleUser: true }), scope)
        const desk = makeDesk()
        const fiber = yield* Effect.forkChild(
          desk.SendReply.invoke({ text: "Hello" }).pipe(Effect.provide(HumanConfirm.layer(ui)))
        )
        const card = yield* waitCard(server.origin, server.token!)
        const answer = yield* post(
          server.origin,
          server.token!,
          `/api/requests/${card.id}/decision`,
          card.csrf,
          `{"by":"alice","action":"edit","payload":{"text":${deep}}}`
        )
        const still = yield* listCards(server.origin, server.token!)
        yield* Scope.close(scope, Exit.void)
        yield* Fiber.interrupt(fiber)
        expect(desk.effects.delivered).toEqual([])
        expect({ status: answer.status, error: typeof answer.body?.error, waiting: still.body?.requests?.length })
          .toEqual({ status: 400, error: "string", waiting: 1 })
      }),
    30_000
  )

  it.live(
    "a proposal: an edit nested 300,000 levels deep is a 4xx with its reason, and the proposal stays pending",
    () =>
      Effect.gen(function*() {
        const { card, id, mailer, scope, server, store } = yield* oneProposal
        const answer = yield* post(
          server.origin,
          server.token!,
          `/api/proposals/${card.id}/decision`,
          card.csrf,
          `{"by":"alice","action":"edit","payload":{"to":"x","text":${deep}}}`
        )
        const after = yield* Proposal.get(id).pipe(Effect.provide(store))
        yield* Scope.close(scope, Exit.void)
        expect(mailer.state.sent).toEqual([])
        // As for any other invalid edit (`{ text: "   " }` answers 400 and leaves it pending).
        expect({ status: answer.status, error: typeof answer.body?.error, after: after.status }).toEqual({
          status: 400,
          error: "string",
          after: "pending"
        })
      }),
    30_000
  )

  it.live(
    "a proposal: action edit with no payload is refused as on a card, not delivered as shown and called an edit",
    () =>
      Effect.gen(function*() {
        const { card, id, mailer, page, scope, store } = yield* oneProposal
        const answer = yield* page.decide(card, { by: "alice", action: "edit" })
        const after = yield* Proposal.get(id).pipe(Effect.provide(store))
        yield* Scope.close(scope, Exit.void)
        expect({ status: answer.status, sent: mailer.state.sent.length, after: after.status }).toEqual({
          status: 400,
          sent: 0,
          after: "pending"
        })
      }),
    30_000
  )
})
