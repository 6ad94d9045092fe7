// Load: 1,000 confirmations wait on the page at once, and 50 concurrent
// clients race to decide them, three clients per card. Every card gets
// exactly one decision and at most one delivery. The counts are asserted; the
// time is only reported (machines here are shared and noisy).
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { HumanConfirm } from "@graded/core"
import { WebConfirm } from "@graded/confirm"
import { makeDesk } from "../../core/test/supportDesk.js"

const confirmations = 1000
const clients = 50

describe("WebConfirm under load", () => {
  it.live(`${confirmations} pending confirmations, ${clients} concurrent clients`, () =>
    Effect.gen(function*() {
      const { server, ui } = yield* WebConfirm.make({ singleUser: true })
      const desk = makeDesk()
      const human = HumanConfirm.layer(ui)
      const started = performance.now()
      const sends = yield* Effect.forEach(
        Array.from({ length: confirmations }, (_, i) => i),
        // Forked by the test's own fiber, one after the other: a child of a
        // concurrent forEach's element fiber is interrupted when that element ends.
        (i) => Effect.forkChild(desk.SendReply.invoke({ text: `message ${i}` }).pipe(Effect.provide(human)))
      )
      while (server.pending() < confirmations) yield* Effect.sleep("5 millis")
      const listed = yield* Effect.promise(() =>
        fetch(`${server.origin}/api/requests`, { headers: { authorization: `Bearer ${server.token}` } }).then((r) =>
          r.json()
        )
      ) as Effect.Effect<{ requests: Array<{ id: string; csrf: string }> }>
      const cards = listed.requests
      expect(cards).toHaveLength(confirmations)

      const statuses = new Map<number, number>()
      const wins = new Map<string, number>()
      yield* Effect.forEach(
        Array.from({ length: clients }, (_, client) => client),
        (client) =>
          Effect.promise(async () => {
            // Each card is contested by three clients.
            for (const [index, card] of cards.entries()) {
              if (![client, (client + 1) % clients, (client + 2) % clients].includes(index % clients)) continue
              const response = await fetch(`${server.origin}/api/requests/${card.id}/decision`, {
                method: "POST",
                headers: {
                  authorization: `Bearer ${server.token}`,
                  "x-graded-csrf": card.csrf,
                  "content-type": "application/json"
                },
                body: JSON.stringify({ by: `client-${client}`, action: "approve" })
              })
              await response.json()
              statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1)
              if (response.status === 200) wins.set(card.id, (wins.get(card.id) ?? 0) + 1)
            }
          }),
        { concurrency: "unbounded" }
      )
      const results = yield* Effect.forEach(sends, Fiber.join)
      const seconds = (performance.now() - started) / 1000
      const delivered = new Map<string, number>()
      for (const message of desk.effects.delivered) delivered.set(message.text, (delivered.get(message.text) ?? 0) + 1)

      console.log(
        `web confirm load: ${confirmations} confirmations, ${clients} clients, ${statuses.get(200)} decisions (200), ` +
          `${statuses.get(409) ?? 0} told "already decided" (409), ${desk.effects.delivered.length} deliveries, ${
            seconds.toFixed(2)
          } s`
      )
      expect(statuses.get(200)).toBe(confirmations)
      expect(statuses.get(409)).toBe(confirmations * 2)
      expect([...wins.values()].every((n) => n === 1)).toBe(true)
      expect(results.every((result) => result.delivered)).toBe(true)
      expect(desk.effects.delivered).toHaveLength(confirmations)
      expect([...delivered.values()].every((n) => n === 1)).toBe(true)
      expect(server.pending()).toBe(0)
    }), 120_000)
})
