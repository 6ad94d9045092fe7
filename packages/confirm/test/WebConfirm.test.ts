import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Layer } from "effect"
import { HumanConfirm, Proposal, ProposalStore, Tool, Toolkit } from "@graded/core"
import { WebConfirm } from "@graded/confirm"
import { makeDesk } from "../../core/test/supportDesk.js"

// A send waiting on the web page, and a way to talk to the page's API.
const waiting = (options: WebConfirm.Options = {}) =>
  Effect.gen(function*() {
    const { server, ui } = yield* WebConfirm.make(options)
    const desk = makeDesk()
    const send = (text: string) =>
      Effect.fork(desk.SendReply.invoke({ text }).pipe(Effect.provide(HumanConfirm.layer(ui))))
    const api = (path: string, init: RequestInit = {}, auth = true) =>
      Effect.promise(async () => {
        const response = await fetch(`${server.origin}${path}`, {
          ...init,
          headers: {
            ...(auth ? { authorization: `Bearer ${server.token}` } : {}),
            "content-type": "application/json",
            ...init.headers
          }
        })
        return { status: response.status, body: await response.json().catch(() => undefined) as any }
      })
    const cards = Effect.gen(function*() {
      for (let i = 0; i < 200; i++) {
        const { body } = yield* api("/api/requests")
        if (body.requests.length > 0) return body.requests as Array<any>
        yield* Effect.sleep("10 millis")
      }
      return []
    })
    const decide = (card: any, body: unknown, headers: Record<string, string> = { "x-graded-csrf": card.csrf }) =>
      api(`/api/requests/${card.id}/decision`, { method: "POST", body: JSON.stringify(body), headers })
    return { server, desk, send, api, cards, decide }
  })

describe("WebConfirm", () => {
  it.scopedLive("binds to 127.0.0.1 and serves the page with a strict CSP", () =>
    Effect.gen(function*() {
      const { server } = yield* waiting()
      expect(server.origin).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/)
      expect(server.url).toBe(`${server.origin}/#token=${server.token}`)
      const response = yield* Effect.promise(() => fetch(server.origin))
      expect(response.headers.get("content-security-policy")).toContain("script-src 'nonce-")
      expect(yield* Effect.promise(() => response.text())).toContain("graded: waiting for a human")
    }))

  it.scopedLive("an API call without the token gets 401 and changes nothing", () =>
    Effect.gen(function*() {
      const { api, cards, decide, desk, send, server } = yield* waiting()
      yield* send("Hello")
      const [card] = yield* cards
      expect((yield* api("/api/requests", {}, false)).status).toBe(401)
      const forged = yield* api(`/api/requests/${card.id}/decision`, {
        method: "POST",
        body: JSON.stringify({ by: "x", action: "approve" }),
        headers: { "x-graded-csrf": card.csrf, authorization: "Bearer wrong" }
      }, false)
      expect(forged.status).toBe(401)
      expect(server.pending()).toBe(1)
      expect(desk.effects.delivered).toEqual([])
      expect((yield* decide(card, { by: "alice", action: "approve" })).status).toBe(200)
    }))

  it.scopedLive("decisions need the card's CSRF value and this page's origin", () =>
    Effect.gen(function*() {
      const { cards, decide, send, server } = yield* waiting()
      yield* send("Hello")
      const [card] = yield* cards
      expect((yield* decide(card, { by: "a", action: "approve" }, {})).status).toBe(403)
      expect((yield* decide(card, { by: "a", action: "approve" }, { "x-graded-csrf": "nope" })).status).toBe(403)
      expect(
        (yield* decide(card, { by: "a", action: "approve" }, {
          "x-graded-csrf": card.csrf,
          origin: "http://evil.example"
        })).status
      ).toBe(403)
      expect(server.pending()).toBe(1)
    }))

  it.scopedLive("each card is decided once: a second decision is told who decided, nothing is sent twice", () =>
    Effect.gen(function*() {
      const { cards, decide, desk, send } = yield* waiting()
      const fiber = yield* send("Hello")
      const [card] = yield* cards
      const [first, second] = yield* Effect.all([
        decide(card, { by: "tab-1", action: "approve" }),
        decide(card, { by: "tab-2", action: "approve" })
      ], { concurrency: 2 })
      expect([first.status, second.status].sort()).toEqual([200, 409])
      const loser = first.status === 409 ? first : second
      expect(loser.body.error).toMatch(/already decided: approved by tab-/)
      expect(yield* Fiber.join(fiber)).toEqual({ delivered: true })
      expect(desk.effects.delivered).toHaveLength(1)
    }))

  it.scopedLive("an invalid edit is refused on the server and the card stays; a valid one is sent", () =>
    Effect.gen(function*() {
      const { cards, decide, desk, send, server } = yield* waiting()
      const fiber = yield* send("Helo")
      const [card] = yield* cards
      const bad = yield* decide(card, { by: "alice", action: "edit", payload: { to: "customer:42", text: "  " } })
      expect(bad.status).toBe(400)
      expect(bad.body.error).toContain("the edit is invalid")
      const extra = yield* decide(card, {
        by: "alice",
        action: "edit",
        payload: { to: "customer:42", text: "Hi", bcc: "all" }
      })
      expect(extra.status).toBe(400)
      expect(server.pending()).toBe(1)
      const good = yield* decide(card, { by: "alice", action: "edit", payload: { to: "customer:42", text: "Hello" } })
      expect(good.status).toBe(200)
      yield* Fiber.join(fiber)
      expect(desk.effects.delivered).toEqual([{ to: "customer:42", text: "Hello" }])
    }))

  it.scopedLive("a rejection reaches the caller as a structured denial: who and why", () =>
    Effect.gen(function*() {
      const { cards, decide, desk, send } = yield* waiting()
      const fiber = yield* send("Hello")
      const [card] = yield* cards
      yield* decide(card, { by: "alice", action: "reject", reason: "wrong customer" })
      const error = yield* Effect.flip(Fiber.join(fiber))
      expect(error).toMatchObject({ _tag: "@graded/core/ToolError/Rejected", by: "alice", reason: "wrong customer" })
      expect(desk.effects.delivered).toEqual([])
    }))

  it.scopedLive("nobody deciding in time is a rejection: timed out", () =>
    Effect.gen(function*() {
      const { desk, send, server } = yield* waiting({ timeout: "100 millis" })
      const fiber = yield* send("Hello")
      const error = yield* Effect.flip(Fiber.join(fiber))
      expect(error).toMatchObject({ _tag: "@graded/core/ToolError/Rejected", by: "web-confirm", reason: "timed out" })
      expect(server.decided()).toMatchObject([{ decision: "timed out" }])
      expect(desk.effects.delivered).toEqual([])
    }))

  it.scopedLive("the token comes before routing; a body that does not say who decides what is 400", () =>
    Effect.gen(function*() {
      const { api, cards, decide, send, server } = yield* waiting()
      expect((yield* api("/api/nothing", {}, false)).status).toBe(401)
      expect(yield* api("/api/nothing")).toEqual({ status: 404, body: { error: "no such endpoint" } })
      expect((yield* api("/elsewhere", {}, false)).status).toBe(404)
      yield* send("Hello")
      const [card] = yield* cards
      expect((yield* api("/api/requests/c-999/decision", { method: "POST", body: "{}" })).status).toBe(404)
      const who = { status: 400, body: { error: "say who decides: a non-empty \"by\"" } }
      expect(
        yield* api(`/api/requests/${card.id}/decision`, {
          method: "POST",
          body: "not json",
          headers: { "x-graded-csrf": card.csrf }
        })
      )
        .toEqual(who)
      expect(yield* decide(card, null)).toEqual(who)
      expect(yield* decide(card, { by: "  ", action: "approve" })).toEqual(who)
      expect(yield* decide(card, { by: "alice", action: "send it" }))
        .toEqual({ status: 400, body: { error: "action must be approve, edit or reject" } })
      expect(server.pending()).toBe(1)
      expect(yield* decide(card, { by: " alice ", action: "reject", reason: "  " }))
        .toEqual({ status: 200, body: { message: "Rejected by alice: rejected on the confirm page" } })
      const again = yield* decide(card, { by: "bob", action: "approve" })
      expect(again.status).toBe(409)
      expect(again.body).toMatchObject({
        error: "already decided: rejected by alice",
        by: "alice",
        decision: "rejected"
      })
    }))

  it.scopedLive("a confirmation its caller gave up on leaves no card", () =>
    Effect.gen(function*() {
      const { cards, send, server } = yield* waiting()
      const fiber = yield* send("Hello")
      yield* cards
      yield* Fiber.interrupt(fiber)
      expect(server.pending()).toBe(0)
    }))

  it.scopedLive("the layer provides HumanConfirm and tells the URL", () =>
    Effect.gen(function*() {
      const server = yield* Effect.provide(WebConfirm.WebConfirm, Layer.fresh(WebConfirm.layer()))
      expect(server.url).toContain("#token=")
    }))
})

describe("WebConfirm with proposals", () => {
  it.scopedLive("a second approval of a proposal is told who decided and delivers nothing", () =>
    Effect.gen(function*() {
      const { Proposal, Tool, Toolkit } = yield* Effect.promise(() => import("@graded/core"))
      const desk = makeDesk()
      const { server } = yield* WebConfirm.make({ proposals: { toolkit: Toolkit.make(desk.SendReply) } })
      yield* Tool.proposal(desk.SendReply).invoke({ text: "From a model" })
      const [pending] = yield* Proposal.list({ status: "pending" })
      const headers = { authorization: `Bearer ${server.token}`, "content-type": "application/json" }
      const listed = yield* Effect.promise(() =>
        fetch(`${server.origin}/api/requests`, { headers }).then((r) => r.json())
      ) as Effect.Effect<any>
      const card = listed.requests.find((r: any) => r.kind === "proposal")
      expect(card).toMatchObject({
        id: pending!.id,
        tool: "chat.sendMessage",
        payload: { to: "customer:42", text: "From a model" }
      })
      const decide = (by: string) =>
        Effect.promise(() =>
          fetch(`${server.origin}/api/proposals/${card.id}/decision`, {
            method: "POST",
            headers: { ...headers, "x-graded-csrf": card.csrf },
            body: JSON.stringify({ by, action: "approve" })
          }).then(async (r) => ({ status: r.status, body: await r.json() as any }))
        )
      expect((yield* decide("alice")).status).toBe(200)
      const second = yield* decide("bob")
      expect(second.status).toBe(409)
      expect(second.body.error).toContain("already decided (delivered by alice)")
      expect(desk.effects.delivered).toHaveLength(1)
    }).pipe(Effect.provide(ProposalStore.memory)))
})

// A store whose record of every proposal changes after the page listed it.
const tampering = (rewrite: (payload: any) => unknown) => {
  const state = { tampered: false }
  const layer = Layer.effect(
    ProposalStore.ProposalStore,
    Effect.map(ProposalStore.ProposalStore, (store) => ({
      ...store,
      get: (id: string) =>
        Effect.map(
          store.get(id),
          (proposal) => state.tampered ? { ...proposal, payload: rewrite(proposal.payload) } : proposal
        )
    }))
  ).pipe(Layer.provide(ProposalStore.memory))
  return { layer, state }
}

const proposing = Effect.gen(function*() {
  const desk = makeDesk()
  const { server } = yield* WebConfirm.make({ proposals: { toolkit: Toolkit.make(desk.SendReply) } })
  yield* Tool.proposal(desk.SendReply).invoke({ text: "From a model" })
  const headers = { authorization: `Bearer ${server.token}`, "content-type": "application/json" }
  const listed = yield* Effect.promise(() =>
    fetch(`${server.origin}/api/requests`, { headers }).then((r) => r.json())
  ) as Effect.Effect<any>
  const card = listed.requests.find((r: any) => r.kind === "proposal")
  const decide = (body: unknown, extra: Record<string, string> = { "x-graded-csrf": card.csrf }, id = card.id) =>
    Effect.promise(() =>
      fetch(`${server.origin}/api/proposals/${id}/decision`, {
        method: "POST",
        headers: { ...headers, ...extra },
        body: JSON.stringify(body)
      })
        .then(async (r) => ({ status: r.status, body: await r.json() as any }))
    )
  return { card, decide, desk }
})

describe("WebConfirm with proposals: the same guard, and only what the card showed", () => {
  it.scopedLive("decisions on a proposal need its CSRF value and this origin; one never listed is 404; a rejection delivers nothing", () =>
    Effect.gen(function*() {
      const { card, decide, desk } = yield* proposing
      const approve = { by: "alice", action: "approve" }
      expect((yield* decide(approve, {})).status).toBe(403)
      expect((yield* decide(approve, { "x-graded-csrf": card.csrf, origin: "http://evil.example" })).status).toBe(403)
      expect((yield* decide(approve, { "x-graded-csrf": card.csrf }, "p-unknown")).status).toBe(404)
      expect((yield* decide({ by: "", action: "approve" })).status).toBe(400)
      expect(yield* decide({ by: "alice", action: "reject", reason: "not today" })).toEqual({
        status: 200,
        body: { message: "Rejected by alice." }
      })
      expect(yield* Proposal.get(card.id)).toMatchObject({ status: "rejected" })
      expect((yield* decide(approve)).status).toBe(409)
      expect(desk.effects.delivered).toEqual([])
    }).pipe(Effect.provide(ProposalStore.memory)))

  it.scopedLive("an approval whose payload to confirm is not the one the card showed is rejected, and nothing is delivered", () => {
    const store = tampering((payload) => ({ ...payload, to: "c-99" }))
    return Effect.gen(function*() {
      const { card, decide, desk } = yield* proposing
      store.state.tampered = true
      const answer = yield* decide({ by: "alice", action: "approve" })
      expect(answer.status).toBe(400)
      expect(answer.body.error).toContain("the payload to confirm is not the one shown on the card")
      expect(desk.effects.delivered).toEqual([])
      expect(yield* Proposal.get(card.id)).toMatchObject({ status: "rejected" })
    }).pipe(Effect.provide(store.layer))
  })
})
