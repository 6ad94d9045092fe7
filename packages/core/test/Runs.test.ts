// Durable supervised runs: a write or send waits as a proposal, the run's
// state is stored, and Runs.resume goes on with the human's decisions.
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Layer, Result, Schema, SchemaTransformation } from "effect"
import { TestClock } from "effect/testing"
import {
  Audit,
  HumanConfirm,
  Invocation,
  LanguageModel,
  Proposal,
  Runs,
  RunStore,
  ScriptedModel,
  Tool,
  Toolkit
} from "@graded/core"
import { human, results, stores } from "./runsFixture.js"
import { makeDesk } from "./supportDesk.js"

const { call, calls, text } = ScriptedModel

describe("Runs", () => {
  it.effect("a write and a send wait as proposals; reads ran; resumed after the decisions, the model gets each outcome in order", () =>
    Effect.gen(function*() {
      const desk = makeDesk()
      const kept = yield* stores()
      const audit = Audit.memory()
      const started = yield* Runs.start({
        toolkit: desk.support,
        prompt: "File it and tell the customer.",
        runId: "run-1",
        context: { actor: "agent:alice", traceId: "t-1" }
      }).pipe(
        Effect.provide(ScriptedModel.layer([
          calls(
            call("kb.search", { query: "vat" }),
            call("ticket.submit", { subject: "VAT wrong" }),
            call("chat.sendMessage", { text: "Fixed!" })
          )
        ])),
        Effect.provide(kept),
        Effect.provide(audit.layer)
      )
      expect(started.status).toBe("waiting")
      if (started.status !== "waiting") return
      expect(started.pending.map((p) => [p.tool, p.payload, p.runId, p.status])).toEqual([
        ["ticket.submit", { subject: "VAT wrong" }, "run-1", "pending"],
        ["chat.sendMessage", { to: "customer:42", text: "Fixed!" }, "run-1", "pending"]
      ])
      // The read ran; nothing was written or sent.
      expect(desk.effects).toMatchObject({ searches: ["vat"], submitted: [], delivered: [] })
      const stored = yield* Effect.flatMap(RunStore.RunStore, (runs) => runs.get("run-1")).pipe(Effect.provide(kept))
      expect(stored).toMatchObject({ status: "waiting", traceId: "t-1", actor: "agent:alice", state: { round: 1 } })

      // Still open: resume answers waiting and asks no model (this script is empty).
      const early = yield* Runs.resume("run-1", { toolkit: desk.support }).pipe(
        Effect.provide(ScriptedModel.layer([])),
        Effect.provide(kept)
      )
      expect(early).toMatchObject({
        status: "waiting",
        pending: [{ tool: "ticket.submit" }, { tool: "chat.sendMessage" }]
      })

      // Alice approves the send with an edit and rejects the write.
      const [write, send] = started.pending
      yield* Proposal.approve(desk.support, send!.id).pipe(
        human("agent:alice", HumanConfirm.approve("agent:alice", { to: "customer:42", text: "Fixed, sorry!" })),
        Effect.provide(kept)
      )
      yield* Proposal.reject(write!.id, { by: "agent:alice", reason: "a duplicate of T-7" }).pipe(Effect.provide(kept))
      expect(desk.effects.delivered).toEqual([{ to: "customer:42", text: "Fixed, sorry!" }])

      // Another process resumes: it has a model, the stores and the toolkit, nothing else of the first.
      const resumed = yield* Runs.resume("run-1", { toolkit: desk.support }).pipe(
        Effect.provide(ScriptedModel.layer([text("Told the customer; no ticket (a duplicate).")])),
        Effect.provide(kept),
        Effect.provide(audit.layer)
      )
      expect(resumed.status).toBe("finished")
      if (resumed.status !== "finished") return
      expect(resumed.result.answer).toBe("Told the customer; no ticket (a duplicate).")
      expect(resumed.result.rounds).toBe(2)
      expect(resumed.result.calls.map((c) => c.ok ? `${c.tool}:ok` : `${c.tool}:${c.error.code}`)).toEqual([
        "kb.search:ok",
        "ticket.submit:rejected",
        "chat.sendMessage:ok"
      ])
      const told = results(resumed.result.messages)
      expect(told[1]).toMatchObject({ ok: false, code: "rejected" })
      expect(told[1].error).toContain("a duplicate of T-7")
      expect(told[2]).toMatchObject({
        ok: true,
        data: { delivered: true },
        note: "agent:alice approved it with an edit"
      })
      // Delivered once, never again by the resume; nothing was written.
      expect(desk.effects).toMatchObject({ submitted: [], delivered: [{ text: "Fixed, sorry!" }] })
      expect(audit.entries.filter((e) => e.type === "run").map((e) => e.type === "run" && e.status)).toEqual([
        "waiting",
        "resumed",
        "finished"
      ])
      // Asked again, a finished run answers as it ended and runs nothing.
      const again = yield* Runs.resume("run-1", { toolkit: desk.support }).pipe(
        Effect.provide(ScriptedModel.layer([])),
        Effect.provide(kept)
      )
      expect(again).toMatchObject({ status: "finished", result: { answer: resumed.result.answer } })
    }))

  it.effect("a decision not made in time expires: the model is told, and the late approval delivers nothing", () =>
    Effect.gen(function*() {
      const desk = makeDesk()
      const kept = yield* stores()
      const started = yield* Runs.start({
        toolkit: desk.support,
        prompt: "Tell them.",
        decisionTimeout: "1 hour"
      }).pipe(
        Effect.provide(ScriptedModel.layer([calls(call("chat.sendMessage", { text: "Hi" }))])),
        Effect.provide(kept)
      )
      if (started.status !== "waiting") return expect.unreachable()
      yield* TestClock.adjust("61 minutes")
      const resumed = yield* Runs.resume(started.runId, { toolkit: desk.support }).pipe(
        Effect.provide(ScriptedModel.layer([text("Nobody approved the message.")])),
        Effect.provide(kept)
      )
      if (resumed.status !== "finished") return expect.unreachable()
      expect(results(resumed.result.messages)[0]).toMatchObject({ ok: false, code: "expired" })
      const late = yield* Effect.flip(
        Proposal.approve(desk.support, started.pending[0]!.id).pipe(
          human("agent:alice", HumanConfirm.approve("agent:alice")),
          Effect.provide(kept)
        )
      )
      expect(late).toMatchObject({ _tag: "@graded/core/ProposalStore/AlreadyDecided", status: "expired" })
      expect(desk.effects.delivered).toEqual([])
    }))

  it.effect("a cancelled run rejects its open proposals: approving one afterwards delivers nothing", () =>
    Effect.gen(function*() {
      const desk = makeDesk()
      const kept = yield* stores()
      const started = yield* Runs.start({ toolkit: desk.support, prompt: "Send it." }).pipe(
        Effect.provide(ScriptedModel.layer([calls(call("chat.sendMessage", { text: "Hi" }))])),
        Effect.provide(kept)
      )
      if (started.status !== "waiting") return expect.unreachable()
      const cancelled = yield* Invocation.within({ actor: "agent:bob" })(
        Runs.cancel(started.runId, { reason: "the customer called" })
      ).pipe(Effect.provide(kept))
      expect(cancelled).toMatchObject({ status: "cancelled", state: { ended: { by: "agent:bob" } } })
      const refused = yield* Effect.result(
        Proposal.approve(desk.support, started.pending[0]!.id).pipe(
          human("agent:alice", HumanConfirm.approve("agent:alice")),
          Effect.provide(kept)
        )
      )
      expect(Result.isFailure(refused)).toBe(true)
      expect(desk.effects.delivered).toEqual([])
      const resumed = yield* Runs.resume(started.runId, { toolkit: desk.support }).pipe(
        Effect.provide(ScriptedModel.layer([])),
        Effect.provide(kept)
      )
      expect(resumed).toEqual({
        status: "cancelled",
        runId: started.runId,
        by: "agent:bob",
        reason: "the customer called"
      })
      const twice = yield* Effect.flip(Runs.cancel(started.runId, { reason: "again" }).pipe(Effect.provide(kept)))
      expect(twice).toBeInstanceOf(Runs.RunEnded)
    }))

  it.effect("two processes resuming one run at once: one goes on, the other is told the run is busy", () =>
    Effect.gen(function*() {
      const desk = makeDesk()
      const kept = yield* stores()
      const started = yield* Runs.start({ toolkit: desk.support, prompt: "Send it." }).pipe(
        Effect.provide(ScriptedModel.layer([calls(call("chat.sendMessage", { text: "Hi" }))])),
        Effect.provide(kept)
      )
      if (started.status !== "waiting") return expect.unreachable()
      yield* Proposal.approve(desk.support, started.pending[0]!.id).pipe(
        human("agent:alice", HumanConfirm.approve("agent:alice")),
        Effect.provide(kept)
      )
      // The first process's model is slow: the second comes while the run is held.
      const gate = yield* Deferred.make<void>()
      const slow = Layer.succeed(LanguageModel.LanguageModel, {
        generate: () => Effect.as(Deferred.await(gate), text("Sent."))
      })
      const first = yield* Effect.forkChild(
        Runs.resume(started.runId, { toolkit: desk.support }).pipe(Effect.provide(slow), Effect.provide(kept))
      )
      yield* Effect.repeat(
        Effect.andThen(Effect.yieldNow, Effect.flatMap(RunStore.RunStore, (runs) => runs.get(started.runId))),
        { until: (run) => run.status === "running" }
      ).pipe(Effect.provide(kept))
      const second = yield* Effect.flip(
        Runs.resume(started.runId, { toolkit: desk.support }).pipe(
          Effect.provide(ScriptedModel.layer([text("Sent twice?")])),
          Effect.provide(kept)
        )
      )
      expect(second).toMatchObject({ _tag: "@graded/core/RunStore/RunBusy", status: "running" })
      expect(second.message).toContain("is being run by another process")
      yield* Deferred.succeed(gate, undefined)
      expect(yield* Fiber.join(first)).toMatchObject({ status: "finished", result: { answer: "Sent." } })
      expect(desk.effects.delivered).toHaveLength(1)
    }))

  it.effect("a read's result is stored as its output schema encodes it, each call encoded once, and comes back decoded", () =>
    Effect.gen(function*() {
      const desk = makeDesk()
      const kept = yield* stores()
      let encoded = 0
      // A date on the wire and in the store, a Date to the run's caller.
      const Stamp = Schema.String.pipe(Schema.decodeTo(
        Schema.Date,
        SchemaTransformation.transform({
          decode: (text) => new Date(text),
          encode: (date) => {
            encoded++
            return date.toISOString()
          }
        })
      ))
      const Clock = Tool.read("clock.read", {
        title: "Read the clock",
        description: "The time now.",
        input: Schema.Struct({}),
        output: Stamp,
        run: () => Effect.succeed(new Date(Date.UTC(2026, 0, 1)))
      })
      const toolkit = Toolkit.make(Clock, desk.SubmitTicket)
      const reads = 4
      const started = yield* Runs.start({ toolkit, prompt: "Check the time, then file it.", maxRounds: 10 }).pipe(
        Effect.provide(ScriptedModel.layer([
          ...Array.from({ length: reads }, () => calls(call("clock.read", {}))),
          calls(call("ticket.submit", { subject: "Late" }))
        ])),
        Effect.provide(kept)
      )
      if (started.status !== "waiting") return expect.unreachable()
      const stored = yield* Effect.flatMap(RunStore.RunStore, (runs) => runs.get(started.runId)).pipe(
        Effect.provide(kept)
      )
      expect(stored.state.calls.map((c) => c.ok && c.output)).toEqual(
        Array.from({ length: reads }, () => "2026-01-01T00:00:00.000Z")
      )
      // Once for the model's message, once for the store: not again at each
      // of the rounds' saves that followed.
      expect(encoded).toBe(2 * reads)

      yield* Proposal.approve(toolkit, started.pending[0]!.id).pipe(
        human("agent:alice", HumanConfirm.approve("agent:alice")),
        Effect.provide(kept)
      )
      const resumed = yield* Runs.resume(started.runId, { toolkit }).pipe(
        Effect.provide(ScriptedModel.layer([calls(call("clock.read", {})), text("Filed.")])),
        Effect.provide(kept)
      )
      if (resumed.status !== "finished") return expect.unreachable()
      const outputs = resumed.result.calls.filter((c) => c.ok && c.tool === "clock.read").map((c) => c.ok && c.output)
      expect(outputs).toHaveLength(reads + 1)
      for (const output of outputs) expect(output).toEqual(new Date(Date.UTC(2026, 0, 1)))
      // The calls read back were not encoded again; the new one was, twice.
      expect(encoded).toBe(2 * (reads + 1))
      const finished = yield* Effect.flatMap(RunStore.RunStore, (runs) => runs.get(started.runId)).pipe(
        Effect.provide(kept)
      )
      expect(finished.state.calls.filter((c) => c.tool === "clock.read").map((c) => c.ok && c.output)).toEqual(
        Array.from({ length: reads + 1 }, () => "2026-01-01T00:00:00.000Z")
      )
    }))

  it("a stored state reads back from its JSON, a call whose input or output is undefined too", () => {
    // JSON leaves the key out; Effect 4 calls an absent key missing unless its schema says otherwise.
    const state: RunStore.State = {
      maxRounds: 4,
      maxCallsPerRound: 8,
      maxArgumentChars: 100,
      context: {},
      round: 1,
      messages: [{ role: "user", content: "Send it." }],
      calls: [{ ok: true, id: "c-1", tool: "chat.sendMessage", input: { text: "hi" }, output: undefined }],
      usage: { inputTokens: 0, outputTokens: 0 },
      untrusted: [],
      refusedBefore: []
    }
    const stored = JSON.parse(JSON.stringify(state))
    expect(stored.calls[0]).not.toHaveProperty("output")
    expect(Schema.decodeUnknownSync(RunStore.State)(stored).calls).toEqual([
      { ok: true, id: "c-1", tool: "chat.sendMessage", input: { text: "hi" }, output: undefined }
    ])
  })
})
