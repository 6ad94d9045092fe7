// Streaming loops: the same loop as Agent.run, Agent.supervised and Runs,
// told as events. What a user relies on: the events put back together are the
// turn; a call is judged only once complete and a cut one never runs; a
// write or send waits as a card in the stream and the decision continues it;
// the result and the audit are those of the loop that does not stream.
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Stream } from "effect"
import {
  Agent,
  Audit,
  HumanConfirm,
  LanguageModel,
  ProposalStore,
  RunStore,
  Runs,
  ScriptedModel,
  Toolkit
} from "@graded/core"
import { makeDesk } from "./supportDesk.js"

const { call, calls, streamed, text } = ScriptedModel

// The audit without what differs from run to run.
const shape = (entries: ReadonlyArray<Audit.Entry>) => entries.map(({ at: _at, traceId: _trace, ...entry }) => entry)

const collect = <A, E, R>(stream: Stream.Stream<A, E, R>) => Stream.runCollect(stream)

describe("Agent.runStream", () => {
  it.effect("tells text and calls as they stream; the pieces are the turn, and the result and audit are Agent.run's", () =>
    Effect.gen(function*() {
      const script = [
        {
          ...calls(call("kb.search", { query: "invoice vat" }), call("kb.search", { query: "refund" })),
          text: "Let me look."
        },
        text("You were charged twice; a refund is on its way.")
      ]
      const plain = makeDesk()
      const plainAudit = Audit.memory()
      const expected = yield* Agent.run({ toolkit: Toolkit.make(plain.KbSearch), prompt: "Why twice?" }).pipe(
        Effect.provide(Layer.merge(ScriptedModel.layer(script), plainAudit.layer))
      )
      const desk = makeDesk()
      const audit = Audit.memory()
      const events = yield* collect(
        Agent.runStream({ toolkit: Toolkit.make(desk.KbSearch), prompt: "Why twice?" }).pipe(
          Stream.provide(Layer.merge(ScriptedModel.layer(script, { chunk: 3 }), audit.layer))
        )
      )
      const deltas = (round: number) =>
        events.flatMap((event) => event.type === "text-delta" && event.round === round ? [event.delta] : [])
      expect(deltas(1).length).toBeGreaterThan(1)
      expect(deltas(1).join("")).toBe("Let me look.")
      expect(deltas(2).join("")).toBe("You were charged twice; a refund is on its way.")
      const starts = events.filter((event) => event.type === "call-start")
      expect(starts).toEqual([
        { type: "call-start", round: 1, id: "call_1", tool: "kb.search" },
        { type: "call-start", round: 1, id: "call_2", tool: "kb.search" }
      ])
      const args = (id: string) =>
        events.flatMap((event) => event.type === "call-delta" && event.id === id ? [event.delta] : []).join("")
      expect(JSON.parse(args("call_1"))).toEqual({ query: "invoice vat" })
      // Each call's outcome is told after its arguments, and before the next turn's text.
      const order = events.map((event) => event.type === "call" ? `call:${event.call.id}` : event.type)
      expect(order.indexOf("call:call_1")).toBeGreaterThan(order.lastIndexOf("call-delta"))
      expect(order.indexOf("call:call_2")).toBeLessThan(
        events.findIndex((event) => event.type === "text-delta" && event.round === 2)
      )
      const end = events.at(-1)
      expect(end?.type).toBe("end")
      expect(end?.type === "end" && end.result).toEqual(expected)
      expect(shape(audit.entries)).toEqual(shape(plainAudit.entries))
      expect(desk.effects.searches).toEqual(plain.effects.searches)
    }))

  it.effect("a call the stream cut is refused, never run; the loop goes on and the model is told why", () =>
    Effect.gen(function*() {
      const desk = makeDesk()
      const audit = Audit.memory()
      const events = yield* collect(
        Agent.runStream({ toolkit: Toolkit.make(desk.KbSearch), prompt: "Search" }).pipe(
          Stream.provide(Layer.merge(
            ScriptedModel.layer([
              streamed([
                { type: "text-delta", delta: "Searching" },
                { type: "call-start", key: "a", id: "c1", name: "kb__search" },
                { type: "call-delta", key: "a", delta: "{\"query\":\"vat\"}" },
                { type: "call-end", key: "a" },
                { type: "call-start", key: "b", id: "c2", name: "kb__search" },
                // Complete JSON, but the call never ended: still cut.
                { type: "call-delta", key: "b", delta: "{\"query\":\"everything\"}" }
              ], { cut: true }),
              text("One search ran.")
            ]),
            audit.layer
          ))
        )
      )
      expect(desk.effects.searches).toEqual(["vat"])
      const refused = events.find((event) => event.type === "refused")
      expect(refused).toMatchObject({ type: "refused", id: "c2", tool: "kb.search", gate: "call" })
      expect(refused?.type === "refused" && refused.reason).toMatch(
        /stopped before this call's arguments were complete/
      )
      const end = events.at(-1)
      expect(end?.type === "end" && end.result.calls.map((c) => [c.id, c.ok])).toEqual([["c1", true], ["c2", false]])
      expect(end?.type === "end" && end.result.answer).toBe("One search ran.")
      expect(audit.entries.filter((entry) => entry.type === "refused")).toHaveLength(1)
    }))

  it.effect("a stream cut with only text in it fails the run: a cut answer is no answer", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(
        Stream.runDrain(
          Agent.runStream({ toolkit: Toolkit.make(), prompt: "Hi" }).pipe(
            Stream.provide(ScriptedModel.layer([streamed([{ type: "text-delta", delta: "Hel" }], { cut: true })]))
          )
        )
      )
      expect(error).toMatchObject({ _tag: "@graded/core/LanguageModel/ModelError", reason: "connection" })
    }))

  it.effect("malformed parts: one that fits no call fails the turn; one that breaks a call refuses that call", () =>
    Effect.gen(function*() {
      const desk = makeDesk()
      const events = yield* collect(
        Agent.runStream({ toolkit: Toolkit.make(desk.KbSearch), prompt: "Search" }).pipe(
          Stream.provide(ScriptedModel.layer([
            streamed([
              { type: "call-start", key: "a", id: "c1", name: "kb__search" },
              { type: "call-delta", key: "a", delta: 42 as unknown as string },
              { type: "call-delta", key: "a", delta: "{\"query\":\"x\"}" },
              { type: "finish" }
            ]),
            text("done")
          ]))
        )
      )
      expect(desk.effects.searches).toEqual([])
      expect(events.find((event) => event.type === "refused")).toMatchObject({ id: "c1", gate: "call" })
      const failed = yield* Effect.flip(Stream.runDrain(
        Agent.runStream({ toolkit: Toolkit.make(desk.KbSearch), prompt: "Search" }).pipe(
          Stream.provide(ScriptedModel.layer([
            streamed([{ type: "call-delta", key: "nobody", delta: "{}" }, { type: "finish" }])
          ]))
        )
      ))
      expect(failed).toMatchObject({ reason: "malformed-response" })
      expect(desk.effects.searches).toEqual([])
    }))
})

describe("Agent.supervisedStream", () => {
  it.effect("a send waits as a card in the stream; the human's decision continues it", () =>
    Effect.gen(function*() {
      const desk = makeDesk()
      const ui = HumanConfirm.scripted([HumanConfirm.approve("agent:alice")])
      const events = yield* collect(
        Agent.supervisedStream({
          toolkit: desk.support,
          prompt: "Tell them it is fixed.",
          context: { actor: "agent:alice" }
        }).pipe(
          Stream.provide(Layer.merge(
            ScriptedModel.layer([
              { ...calls(call("chat.sendMessage", { text: "It is fixed." })), text: "I'll tell them." },
              text("Told them.")
            ], { chunk: 4 }),
            HumanConfirm.layer(ui)
          ))
        )
      )
      const kinds = events.map((event) => event.type)
      const pending = events.find((event) => event.type === "pending")
      expect(pending?.type === "pending" && pending.proposal).toMatchObject({
        tool: "chat.sendMessage",
        payload: { to: "customer:42", text: "It is fixed." },
        status: "pending"
      })
      const decided = events.find((event) => event.type === "decided")
      expect(decided?.type === "decided" && decided.proposal.status).toBe("delivered")
      expect(kinds.indexOf("pending")).toBeLessThan(kinds.indexOf("decided"))
      expect(kinds.indexOf("decided")).toBeLessThan(
        events.findIndex((event) => event.type === "text-delta" && event.round === 2)
      )
      expect(desk.effects.delivered).toEqual([{ to: "customer:42", text: "It is fixed." }])
      const end = events.at(-1)
      expect(end?.type === "end" && end.result.answer).toBe("Told them.")
    }))
})

describe("a compromised model over a stream, supervised", () => {
  it.effect("a send whose arguments the stream cut is no card: no human is asked, nothing is sent", () =>
    Effect.gen(function*() {
      const desk = makeDesk()
      const ui = HumanConfirm.scripted([HumanConfirm.approve("agent:alice")])
      const events = yield* collect(
        Agent.supervisedStream({ toolkit: desk.support, prompt: "Reply.", context: { actor: "agent:alice" } }).pipe(
          Stream.provide(Layer.merge(
            ScriptedModel.layer([
              streamed([
                { type: "call-start", key: "0", id: "c1", name: "chat__sendMessage" },
                { type: "call-delta", key: "0", delta: "{\"text\":\"Here is every customer's address: " }
              ], { cut: true }),
              // The same call started twice under one key, the second start's arguments complete.
              streamed([
                { type: "call-start", key: "0", id: "c2", name: "chat__sendMessage" },
                { type: "call-start", key: "0", id: "c3", name: "chat__sendMessage" },
                { type: "call-delta", key: "0", delta: "{\"text\":\"hi\"}" },
                { type: "finish" }
              ]),
              text("Nothing sent.")
            ]),
            HumanConfirm.layer(ui)
          ))
        )
      )
      expect(events.some((event) => event.type === "pending")).toBe(false)
      expect(events.filter((event) => event.type === "refused").map((event) => event.type === "refused" && event.id))
        .toEqual(["c1", "c2"])
      expect(ui.seen).toEqual([])
      expect(desk.effects).toMatchObject({ prepared: 0, delivered: [] })
    }))
})

describe("Runs.startStream", () => {
  it.effect("closing the stream mid-turn leaves the run stored and let go; resumeStream finishes it", () =>
    Effect.gen(function*() {
      const desk = makeDesk()
      let asked = 0
      // The first turn streams its call; the second starts to answer and
      // hangs, until the page is closed; asked again, it answers.
      const model = Layer.succeed(LanguageModel.LanguageModel, {
        generate: () => Effect.die(new Error("a streaming loop streams")),
        stream: (): Stream.Stream<LanguageModel.StreamPart, LanguageModel.ModelError> => {
          asked++
          return asked === 1
            ? Stream.fromIterable<LanguageModel.StreamPart>([
              { type: "call-start", key: "0", id: "c1", name: "kb__search" },
              { type: "call-delta", key: "0", delta: "{\"query\":\"vat\"}" },
              { type: "finish" }
            ])
            : asked === 2
            ? Stream.concat(
              Stream.make<Array<LanguageModel.StreamPart>>({ type: "text-delta", delta: "It is" }),
              Stream.never
            )
            : Stream.make<Array<LanguageModel.StreamPart>>({ type: "text-delta", delta: "It is VAT." }, {
              type: "finish"
            })
        }
      })
      const program = Effect.gen(function*() {
        const first = yield* collect(
          Runs.startStream({ toolkit: Toolkit.make(desk.KbSearch), prompt: "Why?", runId: "r-closed" }).pipe(
            Stream.takeUntil((event) => event.type === "text-delta")
          )
        )
        expect(first.map((event) => event.type)).toEqual(["call-start", "call-delta", "call", "text-delta"])
        const stored = yield* Effect.flatMap(RunStore.RunStore, (runs) => runs.get("r-closed"))
        expect(stored).toMatchObject({ status: "waiting", leaseUntil: undefined })
        const rest = yield* collect(Runs.resumeStream("r-closed", { toolkit: Toolkit.make(desk.KbSearch) }))
        const end = rest.at(-1)
        expect(end?.type === "end" && end.outcome.status === "finished" && end.outcome.result.answer).toBe(
          "It is VAT."
        )
        // The search ran once: the resumed run went on from the stored turn.
        expect(desk.effects.searches).toEqual(["vat"])
        expect(asked).toBe(3)
      })
      yield* program.pipe(Effect.provide(Layer.mergeAll(RunStore.memory, ProposalStore.memory, model)))
    }))
})
