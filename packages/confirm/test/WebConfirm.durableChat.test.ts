// A durable chat on a real server on loopback: the chat's run is stored as it
// goes, so a client that goes away mid-answer leaves a waiting run, held by
// no process, that the same person resumes (the conversation so far told
// first); a card decided on the confirm page, while the chat is open or
// closed, is told to the chat with who decided; nothing runs twice, and
// nothing is sent without the approval. A run id from the client is only
// ever one of that person's own chat runs.
import { describe, expect, it } from "@effect/vitest"
import { Effect, Stream } from "effect"
import { Runs, ScriptedModel, Toolkit } from "@graded/core"
import { WebConfirm } from "@graded/confirm"
import { durableChatting } from "./chatClient.js"

const people = { "token-of-alice-0123456789abcdef": "alice", "token-of-bob-0123456789abcdef00": "bob" }
const [alice, bob] = Object.keys(people) as [string, string]
const question = "Mei's invoice shows the old VAT number again."
const reply = { to: "customer:42", text: "Hello Mei, your invoice is fixed." }

const wait = <A>(promise: () => Promise<A>) => Effect.promise(promise)

describe("WebConfirm durable chat: closing and reopening", () => {
  it.live("a client gone mid-answer leaves a stored waiting run; resuming it tells the conversation so far and goes on to the answer", () =>
    Effect.gen(function*() {
      const { asked, desk, me, requests, settled } = yield* durableChatting({ paceMillis: 5 })
      const first = yield* me.say(question)
      const { runId } = yield* wait(() => first.until((event) => event.type === "run"))
      expect(runId).toMatch(/^chat-[0-9a-f]{32}$/)
      // Mid-way through the first turn's text: the page closes.
      yield* wait(() => first.until((event) => event.type === "text"))
      first.close()
      const stored = yield* settled(runId, "waiting")
      expect(stored.state.ended).toBeUndefined()
      expect(desk.effects).toMatchObject({ searches: [], delivered: [] })

      const second = yield* me.resume(runId)
      expect(second.status).toBe(200)
      const { card } = yield* wait(() => second.until((event) => event.type === "card"))
      expect(second.events.slice(0, 2)).toEqual([
        { type: "run", runId },
        { type: "history", messages: [{ role: "user", content: question }] }
      ])
      expect(card).toMatchObject({ kind: "proposal", tool: "chat.sendMessage", runId, payload: reply })
      // The card waits; nothing goes out, and the stream waits with it.
      yield* Effect.sleep("300 millis")
      expect(desk.effects.delivered).toEqual([])
      expect(second.events.some((event) => event.type === "end")).toBe(false)
      expect((yield* me.decide(card, { by: "alice", action: "approve" })).status).toBe(200)
      const end = yield* wait(() => second.until((event) => event.type === "end"))
      expect(end).toEqual({ type: "end", answer: "Sent: Mei has the fix.", stopped: "answer" })
      expect(second.events).toContainEqual({ type: "card-decided", id: card.id, message: "Approved by alice: done." })
      yield* wait(() => second.ended)
      // The search ran once (the interrupted turn had not called it), the reply went out once.
      expect(desk.effects.searches).toEqual(["invoice"])
      expect(desk.effects.delivered).toEqual([reply])
      expect(requests.map((request) => request._tag)).toEqual(["Start", "Resume", "Resume"])
      // Asked: the turn cut short, again, the send's turn, and the answer.
      expect(asked).toHaveLength(4)
      expect((yield* settled(runId, "finished")).state.ended).toMatchObject({ status: "finished" })
    }))

  it.live("a card decided on the confirm page while the chat is closed is taken into account when it reopens", () =>
    Effect.gen(function*() {
      const { desk, me, settled } = yield* durableChatting()
      const first = yield* me.say(question)
      const { card } = yield* wait(() => first.until((event) => event.type === "card"))
      const { runId } = first.events[0]!
      first.close()
      yield* settled(runId, "waiting")
      // On the confirm page: the chat's card is listed there, and rejected.
      expect((yield* me.cards).map((listed) => listed.id)).toEqual([card.id])
      expect((yield* me.decide(card, { by: "bob", action: "reject", reason: "not yet" })).status).toBe(200)

      const second = yield* me.resume(runId)
      const end = yield* wait(() => second.until((event) => event.type === "end"))
      expect(end.answer).toBe("Not sent: nothing went to Mei.")
      const history = second.events.find((event) => event.type === "history")!
      expect(history.messages).toEqual([
        { role: "user", content: question },
        { role: "assistant", content: "Let me look that up." },
        { role: "assistant", content: "Found it. I will send Mei this:" }
      ])
      expect(second.events).toContainEqual({ type: "card-decided", id: card.id, message: "Rejected by bob: not yet." })
      expect(second.events.some((event) => event.type === "card")).toBe(false)
      expect(desk.effects.delivered).toEqual([])
    }))

  it.live("a card decided on the confirm page while the chat is open: the chat is told who decided, and goes on", () =>
    Effect.gen(function*() {
      const { desk, me } = yield* durableChatting()
      const reading = yield* me.say(question)
      const { card } = yield* wait(() => reading.until((event) => event.type === "card"))
      expect((yield* me.decide(card, { by: "carol", action: "approve" })).status).toBe(200)
      const told = yield* wait(() => reading.until((event) => event.type === "card-decided"))
      expect(told).toEqual({ type: "card-decided", id: card.id, message: "Approved by carol: done." })
      yield* wait(() => reading.until((event) => event.type === "end"))
      expect(desk.effects.delivered).toEqual([reply])
    }))

  it.live("two connections on one run: one runs it, the other is told it is busy; nothing runs twice", () =>
    Effect.gen(function*() {
      const { desk, me, settled } = yield* durableChatting({ paceMillis: 20 })
      const first = yield* me.say(question)
      const { runId } = yield* wait(() => first.until((event) => event.type === "run"))
      yield* wait(() => first.until((event) => event.type === "text"))
      const second = yield* me.resume(runId)
      const error = yield* wait(() => second.until((event) => event.type === "error"))
      expect(error.message).toContain(`Run ${runId} is being run by another process`)
      yield* wait(() => first.until((event) => event.type === "card"))
      first.close()
      yield* settled(runId, "waiting")
      expect(desk.effects.searches).toEqual(["invoice"])
    }))
})

describe("WebConfirm durable chat: whose run", () => {
  it.live("another person's run id, a forged one, a run the chat did not start: 404, the same for each; nothing runs", () =>
    Effect.gen(function*() {
      const { client, requests, runs, settled, stores, toolkit } = yield* durableChatting({ who: { users: people } })
      const first = yield* client(alice).say(question)
      const { card } = yield* wait(() => first.until((event) => event.type === "card"))
      const { runId } = first.events[0]!
      first.close()
      expect((yield* settled(runId, "waiting")).actor).toBe("alice")
      // An app's own run in the same store, not the chat's.
      yield* Runs.start({ toolkit, prompt: "hi", runId: "run-1" }).pipe(
        Effect.provide(ScriptedModel.layer([ScriptedModel.text("Hi.")])),
        Effect.provideContext(stores)
      )
      const notYours = { status: 404, body: { error: "no such chat run" } }
      const refused = (token: string, id: unknown) =>
        Effect.flatMap(client(token).resume(id as string), (reading) =>
          wait(async () => {
            await reading.ended
            return { status: reading.status, body: JSON.parse(reading.raw() || "null") }
          }))
      expect(yield* refused(bob, runId)).toEqual(notYours)
      expect(yield* refused(bob, `chat-${"0".repeat(32)}`)).toEqual(notYours)
      expect(yield* refused(alice, `chat-${"0".repeat(32)}`)).toEqual(notYours)
      expect(yield* refused(alice, "run-1")).toEqual(notYours)
      expect(yield* refused(alice, "../" + runId)).toEqual(notYours)
      expect(yield* refused(alice, 7)).toEqual({
        status: 400,
        body: { error: "runId must be the chat run's id, as the page was told it" }
      })
      expect(requests.map((request) => request._tag)).toEqual(["Start"])
      // Bob's confirm page still decides the card: deciding is every signed-in person's, resuming the chatter's.
      expect((yield* client(bob).cards).map((listed) => listed.id)).toEqual([card.id])
      expect((yield* runs.get(runId)).status).toBe("waiting")
    }))

  it.live("resuming is checked as starting is: no token 401; another origin or no CSRF value 403", () =>
    Effect.gen(function*() {
      const { me, requests, settled } = yield* durableChatting({ who: { users: people } })
      const first = yield* me.say(question)
      yield* wait(() => first.until((event) => event.type === "card"))
      const { runId } = first.events[0]!
      first.close()
      yield* settled(runId, "waiting")
      const status = (headers: Record<string, string>) =>
        Effect.map(me.resume(runId, headers), (reading) => reading.status)
      expect(yield* status({ authorization: "" })).toBe(401)
      expect(yield* status({ origin: "http://evil.example" })).toBe(403)
      expect(yield* status({ "x-graded-csrf": "" })).toBe(403)
      expect(requests).toHaveLength(1)
    }))

  it.live("a finished run resumed: its conversation and its end, told again; the model is not asked, nothing is sent again", () =>
    Effect.gen(function*() {
      const { asked, desk, me, requests, settled } = yield* durableChatting()
      const first = yield* me.say(question)
      const { card } = yield* wait(() => first.until((event) => event.type === "card"))
      yield* me.decide(card, { by: "alice", action: "approve" })
      yield* wait(() => first.until((event) => event.type === "end"))
      const { runId } = first.events[0]!
      yield* settled(runId, "finished")
      const turns = asked.length
      const again = yield* me.resume(runId)
      yield* wait(() => again.ended)
      expect(again.events.map((event) => event.type)).toEqual(["run", "history", "end"])
      expect(again.events.at(-1)).toEqual({ type: "end", answer: "Sent: Mei has the fix.", stopped: "answer" })
      expect(asked).toHaveLength(turns)
      expect(desk.effects.delivered).toEqual([reply])
      expect(requests.at(-1)?._tag).toBe("Resume")
    }))

  it.live("/api/me tells the page its chat is durable; an in-memory chat's has no resume route", () =>
    Effect.gen(function*() {
      const { me } = yield* durableChatting()
      expect((yield* me.api("/api/me")).body).toMatchObject({ singleUser: true, chatDurable: true })
    }))

  it.effect("a durable chat without proposals: Misconfigured, naming what it needs", () =>
    Effect.gen(function*() {
      const chat: WebConfirm.DurableChat = {
        durable: {
          reply: () =>
            Runs.resumeStream("chat-x", { toolkit: Toolkit.make() }).pipe(Stream.provide(ScriptedModel.layer([])))
        }
      }
      const error = yield* Effect.flip(Effect.scoped(WebConfirm.make({ singleUser: true, chat } as WebConfirm.Options)))
      expect(error).toMatchObject({
        _tag: "@graded/confirm/WebConfirm/Misconfigured",
        reason: "a durable chat needs proposals ({ toolkit }): its writes and sends are proposals decided as cards"
      })
      const shape = yield* Effect.flip(
        Effect.scoped(WebConfirm.make({ singleUser: true, chat: { durable: {} } } as never))
      )
      expect(shape).toMatchObject({ option: "chat", reason: expect.stringContaining("{ durable: { reply } }") })
    }))
})
