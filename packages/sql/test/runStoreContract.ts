// The RunStore contract: what every run store does, checked the same way on
// each (`RunStore.memory` is the specification), and durable runs end to end
// on each: a run waits, humans decide through other pools ("processes"), and
// the run goes on from its stored state. Each test gets an empty database of
// its own; `open` connects a new pool to it (for memory, the same stores).
import { describe, expect, it } from "@effect/vitest"
import { Cause, Context, Effect, Result, Exit, Layer, type Scope } from "effect"
import { TestClock } from "effect/testing"
import {
  Audit,
  HumanConfirm,
  Invocation,
  type LanguageModel,
  Proposal,
  ProposalStore,
  Runs,
  RunStore,
  ScriptedModel
} from "@graded/core"
import { SqlAudit } from "@graded/sql"
import { makeDesk } from "../../core/test/supportDesk.js"
import { type GradedDatabase, storeClient } from "./storeClient.js"

type Store = RunStore.RunStore.Service
type Services = RunStore.RunStore | ProposalStore.ProposalStore | Audit.Audit

export interface RunDatabase {
  /** The run store, proposal store and audit of a new pool on this database (memory: the same ones again). */
  readonly open: Effect.Effect<Context.Context<Services>, unknown, Scope.Scope>
  /** Everything audited on this database so far, in order. */
  readonly audit: Effect.Effect<ReadonlyArray<Audit.Entry>, unknown, Scope.Scope>
  /** Overwrites a run's stored state text, as a broken writer would; only a database has text to break. */
  readonly corrupt?: ((id: string, state: string) => Effect.Effect<void, unknown, Scope.Scope>) | undefined
  /** The raw row of a run, as the database holds it; only a database has one. */
  readonly row?: ((id: string) => Effect.Effect<unknown, unknown, Scope.Scope>) | undefined
}

export interface RunSubject {
  readonly name: string
  /** An empty database for one test. */
  readonly database: Effect.Effect<RunDatabase, unknown, Scope.Scope>
}

/** The memory stores as a subject: one set per database, `open` hands them out again. */
export const memory: RunSubject = {
  name: "RunStore.memory",
  database: Effect.gen(function*() {
    const sink = Audit.memory()
    const context = yield* Layer.build(Layer.mergeAll(RunStore.memory, ProposalStore.memory, sink.layer))
    return { open: Effect.succeed(context), audit: Effect.sync(() => [...sink.entries]) }
  })
}

/** A SQL database as a subject, given a layer that opens a new pool on it (and migrates it). */
export const sqlDatabase = (
  layer: Layer.Layer<Services | GradedDatabase, unknown>
): RunDatabase => {
  const open = Layer.build(layer)
  const sql = Effect.map(open, storeClient)
  return {
    open,
    audit: Effect.flatMap(open, (context) => SqlAudit.entries().pipe(Effect.provide(context))),
    corrupt: (id, state) => Effect.flatMap(sql, (sql) => sql`UPDATE graded_runs SET state = ${state} WHERE id = ${id}`),
    row: (id) =>
      Effect.flatMap(sql, (sql) => sql`SELECT status, version, lease_until, state FROM graded_runs WHERE id = ${id}`)
  }
}

const at = (minutes: number) => new Date(Date.UTC(2026, 0, 1) + minutes * 60_000).toISOString()

const baseState = (over?: Partial<RunStore.State>): RunStore.State => ({
  maxRounds: 4,
  maxCallsPerRound: 8,
  maxArgumentChars: 100_000,
  context: {},
  round: 0,
  messages: [{ role: "user", content: "Help the customer." }],
  calls: [],
  usage: { inputTokens: 0, outputTokens: 0 },
  untrusted: [],
  refusedBefore: [],
  ...over
})

const aRun = (id: string, over?: Partial<RunStore.Run>): RunStore.Run => ({
  id,
  status: "waiting",
  version: 1,
  traceId: `t-${id}`,
  actor: "agent:alice",
  createdAt: at(0),
  updatedAt: at(0),
  state: baseState(),
  ...over
})

// Text no store may change: every JSON escape, quotes of both kinds, a
// backslash, newlines, a NUL, astral and combining characters, a lone
// surrogate, and text that looks like SQL.
const awkward = "Hello, ünïcode \u{1F600} e\u0301 \"double\" 'single' `tick` \\ back\\slash\n" +
  "new\r\nline\ttab \u0000 nul \u2028 \ud800 lone '); DROP TABLE graded_runs; --"

const awkwardState: RunStore.State = baseState({
  decisionTimeout: 3_600_000,
  context: { page: "/tickets/42?q=\"x\"", features: ["ünï", "a\nb"], role: "agent" },
  round: 3,
  messages: [
    { role: "system", content: awkward },
    { role: "user", content: awkward },
    {
      role: "assistant",
      content: awkward,
      toolCalls: [{ id: "call_1", name: "kb_search", arguments: JSON.stringify({ query: awkward }) }]
    },
    { role: "assistant", toolCalls: [{ id: "call_2", name: "chat_sendMessage", arguments: "{\"text\":\"\\\"\"}" }] },
    { role: "tool", callId: "call_1", name: "kb_search", content: JSON.stringify({ ok: true, data: awkward }) }
  ],
  calls: [
    {
      ok: true,
      id: "call_1",
      tool: "kb.search",
      input: { query: awkward, limit: 3 },
      output: [{ id: "kb-1", title: awkward, nested: [1, 2.5, -0.125, null, true, { deep: [awkward] }] }]
    },
    { ok: false, id: "call_9", tool: "ticket.submit", error: { code: "rejected", message: awkward } }
  ],
  usage: { inputTokens: 123_456, outputTokens: 789 },
  untrusted: ["kb.search"],
  refusedBefore: ["ticket.submit"],
  turn: {
    calls: [{ id: "call_2", name: "chat_sendMessage", arguments: "{\"text\":\"\\\"\"}" }],
    outcomes: [{ proposal: "p-1" }]
  }
})

const notFound = (id: string) => Result.fail(new RunStore.RunNotFound({ id }))
const busy = (id: string, status: RunStore.Status, leaseUntil?: string) =>
  Result.fail(new RunStore.RunBusy({ id, status, leaseUntil }))

const isDefect = <A, E>(exit: Exit.Exit<A, E>) =>
  Exit.isFailure(exit) && Cause.hasDies(exit.cause) && !Cause.hasFails(exit.cause)

export const runStoreContract = (subject: RunSubject) =>
  describe(`RunStore contract: ${subject.name}`, () => {
    const withStore = (
      name: string,
      body: (store: Store, database: RunDatabase) => Effect.Effect<void, unknown, Scope.Scope>,
      live = false
    ) => {
      const test = () =>
        Effect.gen(function*() {
          const database = yield* subject.database
          yield* body(Context.get(yield* database.open, RunStore.RunStore), database)
        })
      // Live where pools race on the real clock; else on the test clock, which the tests move.
      return live ? it.live(name, test) : it.effect(name, test)
    }

    withStore("create records a run at version 1; get and list read it back, oldest first and by status", (store) =>
      Effect.gen(function*() {
        const first = aRun("run-1", { version: 7 })
        const created = yield* store.create(first)
        expect(created).toEqual({ ...first, version: 1 })
        expect(yield* store.get("run-1")).toEqual(created)
        const second = yield* store.create(aRun("run-2", { createdAt: at(1), updatedAt: at(1), actor: undefined }))
        expect(second.actor).toBeUndefined()
        const third = yield* store.create(
          aRun("run-3", { status: "running", leaseUntil: at(12), createdAt: at(2), updatedAt: at(2) })
        )
        expect(third).toMatchObject({ status: "running", leaseUntil: at(12), version: 1 })
        expect(yield* store.list()).toEqual([created, second, third])
        expect((yield* store.list({ status: "running" })).map((run) =>
          run.id
        )).toEqual(["run-3"])
        expect((yield* store.list({ status: "waiting" })).map((run) => run.id)).toEqual(["run-1", "run-2"])
        expect(yield* store.list({ status: "finished" })).toEqual([])
      }))

    withStore("a second create with the same id is RunExists and changes nothing", (store) =>
      Effect.gen(function*() {
        const created = yield* store.create(aRun("run-1"))
        const again = aRun("run-1", { status: "running", traceId: "t-other", state: baseState({ round: 9 }) })
        expect(yield* Effect.result(store.create(again))).toEqual(
          Result.fail(new RunStore.RunExists({ id: "run-1" }))
        )
        expect(yield* store.get("run-1")).toEqual(created)
        expect(yield* store.list()).toEqual([created])
      }))

    withStore("an id no run has is RunNotFound for get, claim and save", (store) =>
      Effect.gen(function*() {
        yield* store.create(aRun("run-1"))
        for (const id of ["run-2", "RUN-1", "run-1 ", "", "run-1' OR '1'='1", "%", "run-_"]) {
          expect(yield* Effect.result(store.get(id))).toEqual(notFound(id))
          expect(yield* Effect.result(store.claim(id, at(10), at(1)))).toEqual(notFound(id))
          expect(yield* Effect.result(store.save(aRun(id)))).toEqual(notFound(id))
        }
        expect((yield* store.list()).map((run) => run.id)).toEqual(["run-1"])
      }))

    withStore("claim takes a waiting run: it comes back running under the lease, at the next version", (store) =>
      Effect.gen(function*() {
        const created = yield* store.create(aRun("run-1", { state: awkwardState }))
        yield* TestClock.adjust("90 seconds")
        const claimed = yield* store.claim("run-1", at(10), at(1))
        expect(claimed).toEqual({
          ...created,
          status: "running",
          leaseUntil: at(10),
          version: 2,
          updatedAt: new Date(90_000).toISOString()
        })
        expect(yield* store.get("run-1")).toEqual(claimed)
      }))

    withStore(
      "a run held under a lease is RunBusy, saying so and until when; once the lease has passed, another claims it",
      (store) =>
        Effect.gen(function*() {
          yield* store.create(aRun("run-1"))
          const claimed = yield* store.claim("run-1", at(10), at(1))
          for (const now of [at(2), at(10)]) { // a lease ending now has not passed
            const refused = yield* Effect.result(store.claim("run-1", at(30), now))
            expect(refused).toEqual(busy("run-1", "running", at(10)))
            if (Result.isFailure(refused)) {
              expect(refused.failure.message).toBe(
                `Run run-1 is being run by another process (held until ${at(10)})`
              )
            }
          }
          expect(yield* store.get("run-1")).toEqual(claimed)
          const taken = yield* store.claim("run-1", at(30), at(11))
          expect(taken).toMatchObject({ status: "running", leaseUntil: at(30), version: 3 })
          expect(yield* store.get("run-1")).toEqual(taken)
          // A running run without a lease is held until its process finishes it.
          yield* store.create(aRun("run-2", { status: "running" }))
          const held = yield* Effect.result(store.claim("run-2", at(30), at(10_000)))
          expect(held).toEqual(busy("run-2", "running"))
          if (Result.isFailure(held)) {
            expect(held.failure.message).toContain("held until it finishes")
          }
        })
    )

    withStore("a finished or cancelled run is never claimed again", (store) =>
      Effect.gen(function*() {
        for (const status of ["finished", "cancelled"] as const) {
          const created = yield* store.create(aRun(`run-${status}`, { status }))
          const refused = yield* Effect.result(store.claim(created.id, at(10), at(1)))
          expect(refused).toEqual(busy(created.id, status))
          if (Result.isFailure(refused)) {
            expect(refused.failure.message).toContain(`now ${status}`)
          }
          expect(yield* store.get(created.id)).toEqual(created)
        }
      }))

    withStore(
      "save replaces status, lease and state at the version read; a stale save is RunBusy and changes nothing",
      (store) =>
        Effect.gen(function*() {
          yield* store.create(aRun("run-1"))
          const claimed = yield* store.claim("run-1", at(10), at(1))
          yield* TestClock.adjust("2 minutes")
          const saved = yield* store.save({
            ...claimed,
            status: "waiting",
            leaseUntil: undefined,
            state: awkwardState
          })
          expect(saved).toEqual({
            ...claimed,
            status: "waiting",
            leaseUntil: undefined,
            version: 3,
            updatedAt: new Date(120_000).toISOString(),
            state: awkwardState
          })
          expect(yield* store.get("run-1")).toEqual(saved)
          // The same version again: someone saved since; nothing changes.
          const stale = yield* Effect.result(
            store.save({ ...claimed, status: "finished", state: baseState({ round: 99 }) })
          )
          expect(stale).toEqual(busy("run-1", "waiting"))
          if (Result.isFailure(stale)) {
            expect(stale.failure.message).toBe("Run run-1 changed since it was read (now waiting); nothing was saved")
          }
          expect(yield* store.get("run-1")).toEqual(saved)
          // A version from the future is no better.
          expect(yield* Effect.result(store.save({ ...saved, version: 9 }))).toEqual(busy("run-1", "waiting"))
          expect(yield* store.get("run-1")).toEqual(saved)
        })
    )

    withStore("a process whose lease passed and whose run another took saves nothing", (store) =>
      Effect.gen(function*() {
        yield* store.create(aRun("run-1"))
        const slow = yield* store.claim("run-1", at(10), at(1))
        const other = yield* store.claim("run-1", at(30), at(11))
        expect(yield* Effect.result(store.save({ ...slow, status: "finished", state: baseState({ round: 4 }) })))
          .toEqual(busy("run-1", "running", at(30)))
        expect(yield* store.get("run-1")).toEqual(other)
        // The holder saves, and after that so could nobody with its old version.
        const saved = yield* store.save({ ...other, status: "waiting", leaseUntil: undefined })
        expect(saved.version).toBe(4)
        expect(yield* Effect.result(store.save(other))).toEqual(busy("run-1", "waiting"))
      }))

    withStore("save changes status, lease and state only: the run's trace, actor and creation stay", (store) =>
      Effect.gen(function*() {
        yield* store.create(aRun("run-1"))
        const claimed = yield* store.claim("run-1", at(10), at(1))
        const saved = yield* store.save({
          ...claimed,
          traceId: "t-forged",
          actor: "agent:mallory",
          createdAt: at(-100),
          status: "waiting",
          leaseUntil: undefined
        })
        expect(saved).toMatchObject({ traceId: "t-run-1", actor: "agent:alice", createdAt: at(0), status: "waiting" })
        expect(yield* store.get("run-1")).toEqual(saved)
      }))

    withStore(
      "claims from two pools at once: exactly one wins each run, the others are told who holds it",
      (store, database) =>
        Effect.gen(function*() {
          const other = Context.get(yield* database.open, RunStore.RunStore)
          const ids = ["run-1", "run-2", "run-3"]
          for (const id of ids) {
            yield* store.create(aRun(id))
          }
          const now = new Date().toISOString()
          const attempts = ids.flatMap((id) =>
            Array.from({ length: 12 }, (_, i) => ({ id, pool: i % 2 === 0 ? store : other, until: `${now}#${i}` }))
          )
          const outcomes = yield* Effect.forEach(
            attempts,
            ({ id, pool, until }) =>
              Effect.result(pool.claim(id, until, now)),
            { concurrency: "unbounded" }
          )
          for (const id of ids) {
            const mine = outcomes.filter((_, i) =>
              attempts[i]!.id === id
            )
            const won = mine.filter(Result.isSuccess).map((outcome) =>
              outcome.success
            )
            expect(won).toHaveLength(1)
            expect(won[0]).toMatchObject({ status: "running", version: 2 })
            expect(yield* other.get(id)).toEqual(won[0])
            for (const lost of mine.filter(Result.isFailure)) {
              expect(lost.failure).toEqual(
                new RunStore.RunBusy({ id, status: "running", leaseUntil: won[0]!.leaseUntil })
              )
            }
          }
          // Saves at one version from both pools: one wins, the rest save nothing.
          const held = yield* store.get("run-1")
          const saves = yield* Effect.forEach(
            Array.from({ length: 12 }, (_, i) =>
              i),
            (i) => Effect.result((i % 2 === 0 ? store : other).save({ ...held, state: baseState({ round: i }) })),
            { concurrency: "unbounded" }
          )
          const saved = saves.filter(Result.isSuccess).map((outcome) => outcome.success)
          expect(saved).toHaveLength(1)
          expect(yield* store.get("run-1")).toEqual(saved[0])
          expect(saved[0]!.version).toBe(3)
        }),
      true
    )

    withStore("a state with every awkward character and nested JSON comes back exactly, through every call", (store) =>
      Effect.gen(function*() {
        // The id, trace and actor are columns: the same text but the NUL and the lone surrogate, which a
        // SQL column does not hold (the JSON of the state escapes them).
        const id = awkward.replace("\u0000", "").replace("\ud800", "")
        const created = yield* store.create(aRun(id, { actor: id, traceId: id, state: awkwardState }))
        expect(created.state).toEqual(awkwardState)
        expect([created.id, created.actor, created.traceId]).toEqual([id, id, id])
        expect(yield* store.get(id)).toEqual(created)
        expect(yield* store.list()).toEqual([created])
        const claimed = yield* store.claim(id, at(10), at(1))
        expect(claimed.state).toEqual(awkwardState)
        const saved = yield* store.save({ ...claimed, state: { ...awkwardState, round: 4 } })
        expect(saved.state).toEqual({ ...awkwardState, round: 4 })
        expect(yield* store.get(id)).toEqual(saved)
        expect(JSON.stringify(saved.state.messages[0])).toBe(JSON.stringify({ role: "system", content: awkward }))
      }))

    withStore(
      "a row whose state is not a run's state is a defect: nothing of it is trusted or moved",
      (store, database) =>
        Effect.gen(function*() {
          const { corrupt, row } = database
          if (corrupt === undefined || row === undefined) {
            return // memory keeps values, not text
          }
          for (
            const [id, text] of [
              ["cut", JSON.stringify(awkwardState).slice(0, 40)],
              ["wrong", JSON.stringify({ ...awkwardState, round: "three" })],
              ["extra", JSON.stringify({ ...awkwardState, turn: { calls: [], outcomes: [{ proposal: 7 }] } })],
              ["empty", ""]
            ] as const
          ) {
            const created = yield* store.create(aRun(id))
            yield* corrupt(id, text)
            const before = yield* row(id)
            expect(isDefect(yield* Effect.exit(store.get(id)))).toBe(true)
            expect(isDefect(yield* Effect.exit(store.list()))).toBe(true)
            expect(isDefect(yield* Effect.exit(store.list({ status: "waiting" })))).toBe(true)
            expect(isDefect(yield* Effect.exit(store.claim(id, at(10), at(1))))).toBe(true)
            expect(yield* row(id)).toEqual(before)
            // Put right, it reads again.
            yield* corrupt(id, JSON.stringify(created.state))
            expect(yield* store.get(id)).toEqual(created)
          }
        })
    )

    runsEndToEnd(subject)
  })

const { call, calls, text } = ScriptedModel

const results = (messages: ReadonlyArray<LanguageModel.Message>) =>
  messages.flatMap((message) => message.role === "tool" ? [JSON.parse(message.content)] : [])

const human =
  (by: string, ...decisions: ReadonlyArray<HumanConfirm.Decision>) => <A, E, R>(self: Effect.Effect<A, E, R>) =>
    Invocation.within({ actor: by })(self).pipe(Effect.provide(HumanConfirm.layer(HumanConfirm.scripted(decisions))))

// Runs an effect as a process of its own: on a new pool, with the stores and audit of the database.
type Process = <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, unknown, Exclude<R, Services>>

const runsEndToEnd = (subject: RunSubject) =>
  describe(`Runs on ${subject.name}`, () => {
    // Each step is its own "process": a new pool on the database, its own model.
    const test = (
      name: string,
      body: (
        process: Process,
        database: RunDatabase
      ) => Effect.Effect<void, unknown, Scope.Scope>
    ) =>
      it.effect(name, () =>
        Effect.gen(function*() {
          const database = yield* subject.database
          const process: Process = (self) =>
            Effect.scoped(Effect.flatMap(database.open, (context) => Effect.provide(self, context)))
          yield* body(process, database)
        }))

    test(
      "a write and a send wait; humans decide elsewhere; resumed, the model gets each outcome in order",
      (process, database) =>
        Effect.gen(function*() {
          const desk = makeDesk()
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
            process
          )
          if (started.status !== "waiting") return expect.unreachable()
          expect(started.pending.map((p) => [p.tool, p.payload, p.runId, p.status])).toEqual([
            ["ticket.submit", { subject: "VAT wrong" }, "run-1", "pending"],
            ["chat.sendMessage", { to: "customer:42", text: "Fixed!" }, "run-1", "pending"]
          ])
          expect(desk.effects).toMatchObject({ searches: ["vat"], submitted: [], delivered: [] })
          const stored = yield* Effect.flatMap(RunStore.RunStore, (runs) => runs.get("run-1")).pipe(process)
          expect(stored).toMatchObject({ status: "waiting", traceId: "t-1", actor: "agent:alice", state: { round: 1 } })

          // Still open: waiting, and no model is asked (this script is empty).
          const early = yield* Runs.resume("run-1", { toolkit: desk.support }).pipe(
            Effect.provide(ScriptedModel.layer([])),
            process
          )
          expect(early).toMatchObject({
            status: "waiting",
            pending: [{ tool: "ticket.submit" }, { tool: "chat.sendMessage" }]
          })
          expect(yield* Effect.flatMap(RunStore.RunStore, (runs) => runs.get("run-1")).pipe(process)).toEqual(stored)

          const [write, send] = started.pending
          yield* Proposal.approve(desk.support, send!.id).pipe(
            human("agent:alice", HumanConfirm.approve("agent:alice", { to: "customer:42", text: "Fixed, sorry!" })),
            process
          )
          yield* Proposal.reject(write!.id, { by: "agent:bob", reason: "a duplicate of T-7" }).pipe(process)

          const resumed = yield* Runs.resume("run-1", { toolkit: desk.support }).pipe(
            Effect.provide(ScriptedModel.layer([text("Told the customer; no ticket (a duplicate).")])),
            process
          )
          if (resumed.status !== "finished") return expect.unreachable()
          expect(resumed.result).toMatchObject({ answer: "Told the customer; no ticket (a duplicate).", rounds: 2 })
          expect(resumed.result.calls.map((c) => c.ok ? `${c.tool}:ok` : `${c.tool}:${c.error.code}`)).toEqual([
            "kb.search:ok",
            "ticket.submit:rejected",
            "chat.sendMessage:ok"
          ])
          expect(resumed.result.calls[0]).toMatchObject({ output: [{ id: "kb-1", title: "About vat" }] })
          const told = results(resumed.result.messages)
          expect(told[1]).toMatchObject({ ok: false, code: "rejected" })
          expect(told[1].error).toContain("a duplicate of T-7")
          expect(told[2]).toMatchObject({
            ok: true,
            data: { delivered: true },
            note: "agent:alice approved it with an edit"
          })
          expect(desk.effects).toMatchObject({
            searches: ["vat"],
            submitted: [],
            delivered: [{ text: "Fixed, sorry!" }]
          })
          const runEntries = (yield* database.audit).flatMap((entry) =>
            entry.type === "run" ? [[entry.run, entry.status]] : []
          )
          expect(runEntries).toEqual([["run-1", "waiting"], ["run-1", "resumed"], ["run-1", "finished"]])
          const again = yield* Runs.resume("run-1", { toolkit: desk.support }).pipe(
            Effect.provide(ScriptedModel.layer([])),
            process
          )
          expect(again).toMatchObject({ status: "finished", result: { answer: resumed.result.answer } })
          expect(desk.effects.delivered).toHaveLength(1)
        })
    )

    test("a run id a database would not keep as given is refused before anything is stored", (process) =>
      Effect.gen(function*() {
        const desk = makeDesk()
        for (const runId of ["", "run\u0000evil", "run\nx", "run\ud800", "r".repeat(201)]) {
          const refused = yield* Effect.flip(
            Runs.start({ toolkit: desk.support, prompt: "Send it.", runId }).pipe(
              Effect.provide(ScriptedModel.layer([calls(call("chat.sendMessage", { text: "Hi" }))])),
              process
            )
          )
          expect(refused).toMatchObject({ _tag: "@graded/core/Agent/InvalidOptions", option: "runId" })
        }
        expect(yield* Effect.flatMap(RunStore.RunStore, (runs) => runs.list()).pipe(process)).toEqual([])
        expect(yield* Proposal.list().pipe(process)).toEqual([])
        const fine = yield* Runs.start({ toolkit: desk.support, prompt: "Send it.", runId: "r".repeat(200) }).pipe(
          Effect.provide(ScriptedModel.layer([calls(call("chat.sendMessage", { text: "Hi" }))])),
          process
        )
        expect(fine).toMatchObject({ status: "waiting", runId: "r".repeat(200) })
      }))

    test("a decision not made in time reaches the model as a denial, audited; the late approval delivers nothing", (
      process,
      database
    ) =>
      Effect.gen(function*() {
        const desk = makeDesk()
        const started = yield* Runs.start({ toolkit: desk.support, prompt: "Tell them.", decisionTimeout: "1 hour" })
          .pipe(Effect.provide(ScriptedModel.layer([calls(call("chat.sendMessage", { text: "Hi" }))])), process)
        if (started.status !== "waiting") return expect.unreachable()
        expect(started.pending[0]?.expiresAt).toBe(new Date(3_600_000).toISOString())
        yield* TestClock.adjust("59 minutes")
        const early = yield* Runs.resume(started.runId, { toolkit: desk.support }).pipe(
          Effect.provide(ScriptedModel.layer([])),
          process
        )
        expect(early.status).toBe("waiting")
        yield* TestClock.adjust("2 minutes")
        const resumed = yield* Runs.resume(started.runId, { toolkit: desk.support }).pipe(
          Effect.provide(ScriptedModel.layer([text("Nobody approved the message.")])),
          process
        )
        if (resumed.status !== "finished") return expect.unreachable()
        expect(results(resumed.result.messages)[0]).toMatchObject({ ok: false, code: "expired" })
        // Resuming settled it, and the audit says so as Proposal.recover's would.
        expect(yield* database.audit).toContainEqual(
          expect.objectContaining({ type: "refused", tool: "chat.sendMessage", gate: "expiry" })
        )
        const late = yield* Effect.flip(
          Proposal.approve(desk.support, started.pending[0]!.id).pipe(
            human("agent:alice", HumanConfirm.approve("agent:alice")),
            process
          )
        )
        expect(late).toMatchObject({ _tag: "@graded/core/ProposalStore/AlreadyDecided", status: "expired" })
        expect(desk.effects.delivered).toEqual([])
      }))

    test("a cancelled run rejects its open proposals: approving one afterwards delivers nothing", (process) =>
      Effect.gen(function*() {
        const desk = makeDesk()
        const started = yield* Runs.start({ toolkit: desk.support, prompt: "Send it." }).pipe(
          Effect.provide(ScriptedModel.layer([calls(call("chat.sendMessage", { text: "Hi" }))])),
          process
        )
        if (started.status !== "waiting") return expect.unreachable()
        const cancelled = yield* Invocation.within({ actor: "agent:bob" })(
          Runs.cancel(started.runId, { reason: "the customer called" })
        ).pipe(process)
        expect(cancelled).toMatchObject({
          status: "cancelled",
          state: { ended: { by: "agent:bob", reason: "the customer called" } }
        })
        const proposal = yield* Proposal.get(started.pending[0]!.id).pipe(process)
        expect(proposal).toMatchObject({ status: "rejected", decision: { by: "agent:bob" } })
        expect(proposal.decision?.reason).toContain("the customer called")
        const refused = yield* Effect.flip(
          Proposal.approve(desk.support, started.pending[0]!.id).pipe(
            human("agent:alice", HumanConfirm.approve("agent:alice")),
            process
          )
        )
        expect(refused).toMatchObject({ _tag: "@graded/core/ProposalStore/AlreadyDecided", status: "rejected" })
        expect(desk.effects.delivered).toEqual([])
        expect(
          yield* Runs.resume(started.runId, { toolkit: desk.support }).pipe(
            Effect.provide(ScriptedModel.layer([])),
            process
          )
        ).toEqual({ status: "cancelled", runId: started.runId, by: "agent:bob", reason: "the customer called" })
        expect(yield* Effect.flip(Runs.cancel(started.runId, { reason: "again" }).pipe(process))).toBeInstanceOf(
          Runs.RunEnded
        )
      }))

    test("two calls in one turn, one approved and one rejected: the approved one runs once, never again on resume", (process) =>
      Effect.gen(function*() {
        const desk = makeDesk()
        const started = yield* Runs.start({ toolkit: desk.support, prompt: "File it and tell them." }).pipe(
          Effect.provide(ScriptedModel.layer([
            calls(call("ticket.submit", { subject: "Refund" }), call("chat.sendMessage", { text: "Filed." }))
          ])),
          process
        )
        if (started.status !== "waiting") return expect.unreachable()
        const [write, send] = started.pending
        yield* Proposal.approve(desk.support, write!.id).pipe(
          human("agent:alice", HumanConfirm.approve("agent:alice")),
          process
        )
        expect(desk.effects.submitted).toEqual(["Refund"])
        // One decision is in, one is open: resuming runs nothing again.
        const half = yield* Runs.resume(started.runId, { toolkit: desk.support }).pipe(
          Effect.provide(ScriptedModel.layer([])),
          process
        )
        expect(half).toMatchObject({ status: "waiting", pending: [{ id: send!.id }] })
        expect(desk.effects.submitted).toEqual(["Refund"])
        yield* Proposal.reject(send!.id, { by: "agent:alice", reason: "not yet" }).pipe(process)
        const resumed = yield* Runs.resume(started.runId, { toolkit: desk.support }).pipe(
          Effect.provide(ScriptedModel.layer([text("Filed T-1; did not message.")])),
          process
        )
        if (resumed.status !== "finished") return expect.unreachable()
        const told = results(resumed.result.messages)
        expect(told).toMatchObject([
          { ok: true, data: { id: "T-1" }, note: "agent:alice approved it" },
          { ok: false, code: "rejected" }
        ])
        expect(resumed.result.calls.map((c) => [c.tool, c.ok])).toEqual([["ticket.submit", true], [
          "chat.sendMessage",
          false
        ]])
        // Resumed again, still once.
        yield* Runs.resume(started.runId, { toolkit: desk.support }).pipe(
          Effect.provide(ScriptedModel.layer([])),
          process
        )
        expect(desk.effects).toMatchObject({ submitted: ["Refund"], delivered: [] })
      }))

    test("a run with 200 past steps resumes from its stored state: the model is asked only for the next turn", (process) =>
      Effect.gen(function*() {
        const desk = makeDesk()
        const rounds = 10
        const perRound = 20
        const script = Array.from(
          { length: rounds },
          (_, round) =>
            calls(
              ...Array.from({ length: perRound }, (_, i) => call("kb.search", { query: `q${round * perRound + i}` }))
            )
        )
        const started = yield* Runs.start({
          toolkit: desk.support,
          prompt: "Search a lot, then tell them.",
          maxRounds: rounds + 5,
          maxCallsPerRound: perRound
        }).pipe(
          Effect.provide(ScriptedModel.layer([...script, calls(call("chat.sendMessage", { text: "Found it." }))])),
          process
        )
        if (started.status !== "waiting") return expect.unreachable()
        expect(desk.effects.searches).toHaveLength(200)
        yield* Proposal.approve(desk.support, started.pending[0]!.id).pipe(
          human("agent:alice", HumanConfirm.approve("agent:alice")),
          process
        )
        const asked: Array<LanguageModel.Request> = []
        const resumed = yield* Runs.resume(started.runId, { toolkit: desk.support }).pipe(
          Effect.provide(ScriptedModel.layer([(request) => (asked.push(request), text("Told them."))])),
          process
        )
        if (resumed.status !== "finished") return expect.unreachable()
        expect(asked).toHaveLength(1)
        const shown = results(asked[0]!.messages)
        expect(shown).toHaveLength(201)
        expect(shown[199]).toMatchObject({ ok: true, data: [{ id: "kb-1", title: "About q199" }] })
        expect(shown[200]).toMatchObject({ ok: true, data: { delivered: true } })
        expect(resumed.result.rounds).toBe(rounds + 2)
        expect(resumed.result.calls).toHaveLength(201)
        expect(desk.effects.searches).toHaveLength(200)
        expect(desk.effects.delivered).toEqual([{ to: "customer:42", text: "Found it." }])
      }))
  })
