// The SQL audit sink, checked the same way on each database: what is recorded
// reads back decoded and equal, in order, whoever wrote it; queries select by
// the columns; and a database that fails never fails the call it records.
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer, Logger, References, type Scope } from "effect"
import { TestClock } from "effect/testing"
import { Audit, HumanConfirm, Invocation, Registry } from "@graded/core"
import { SqlAudit } from "@graded/sql"
import { makeDesk } from "../../core/test/supportDesk.js"
import { type GradedDatabase, storeClient } from "./storeClient.js"

type Services = Audit.Audit | GradedDatabase

export interface AuditDatabase {
  /** The sink and graded's database, on a new connection pool to it. */
  readonly open: Effect.Effect<Context.Context<Services>, unknown, Scope.Scope>
  /** Where `SqlAudit.open` finds it. */
  readonly source: SqlAudit.Source
}

export interface AuditSubject {
  readonly name: string
  /** An empty, migrated database for one test. */
  readonly database: Effect.Effect<AuditDatabase, unknown, Scope.Scope>
}

// Writes a model chooses are refused before anyone is asked; this human says no to anything else.
const nobody = Effect.provide(HumanConfirm.layer(HumanConfirm.scripted([])))

// Records into the database and into memory at once: memory is what the
// database must give back.
const recording = (context: Context.Context<Services>) => {
  const sql = Context.get(context, Audit.Audit)
  const entries: Array<Audit.Entry> = []
  const layer = Audit.layer((entry) => Effect.andThen(Effect.sync(() => void entries.push(entry)), sql.write(entry)))
  return { entries, layer }
}

const everyKind: ReadonlyArray<Audit.Event> = [
  { type: "offered", tools: ["kb.search"], suppressed: [{ tool: "ticket.submit", reason: "needs a human" }] },
  { type: "called", tool: "kb.search", input: { query: "VAT", nested: [1, null, { deep: "ünïcode \u{1F600}" }] } },
  { type: "called", tool: "web.fetch", input: { url: "https://example.com" }, openWorld: true },
  { type: "completed", tool: "kb.search", chars: 120 },
  { type: "refused", tool: "ticket.submit", gate: "autonomous", reason: "a model chose it" },
  { type: "confirm-requested", tool: "chat.sendMessage", grade: "send", payload: { to: "c:42", text: "Hi\nthere" } },
  { type: "decided", tool: "chat.sendMessage", by: "agent:alice", decision: "approved", edited: true },
  { type: "decided", tool: "chat.sendMessage", by: "agent:bob", decision: "rejected", edited: false, reason: "tone" },
  { type: "delivered", tool: "chat.sendMessage", by: "agent:alice" },
  { type: "failed", tool: "kb.search", error: "The search failed", cause: "Error: boom" },
  { type: "proposed", tool: "chat.sendMessage", proposal: "p-1" },
  { type: "step", plan: "quick-ticket", index: 3, step: "submit", kind: "write", status: "failed", reason: "no" },
  { type: "answered", rounds: 2 },
  { type: "round-limit", rounds: 4, pending: ["kb.search"] }
]

export const auditContract = (subject: AuditSubject) =>
  describe(`SqlAudit: ${subject.name}`, () => {
    const withDatabase = (
      name: string,
      body: (database: AuditDatabase, context: Context.Context<Services>) => Effect.Effect<void, unknown, Scope.Scope>
    ) =>
      it.effect(name, () =>
        Effect.gen(function*() {
          const database = yield* subject.database
          yield* body(database, yield* database.open)
        }))

    withDatabase("every kind of entry is a row that reads back decoded, equal to what was recorded", (_, context) =>
      Effect.gen(function*() {
        const { entries, layer } = recording(context)
        yield* Effect.forEach(everyKind, Audit.record).pipe(
          Invocation.within({ traceId: "t-kinds", actor: "agent:alice" }),
          Effect.provide(layer)
        )
        yield* Audit.record({ type: "answered", rounds: 1 }).pipe(Effect.provide(layer))
        const read = yield* SqlAudit.trace("t-kinds").pipe(Effect.provide(context))
        expect(read).toHaveLength(everyKind.length)
        expect(read).toEqual(entries.slice(0, everyKind.length))
        expect(read.every((entry) =>
          entry.traceId === "t-kinds" && entry.actor === "agent:alice"
        )).toBe(true)
        const all = yield* SqlAudit.entries().pipe(Effect.provide(context))
        expect(all).toEqual(entries)
        expect(all.at(-1)).toMatchObject({ type: "answered", traceId: undefined, actor: undefined })
      }))

    withDatabase(
      "hundreds of entries written at once from two pools read back complete, each trace in order",
      (database, context) =>
        Effect.gen(function*() {
          const other = yield* database.open
          const desk = makeDesk()
          const registry = Registry.make(desk.support)
          const sinks = [recording(context), recording(other)] as const
          // Each run: a search, a write a model may not make, a name nobody knows.
          const run = (i: number) =>
            Effect.forEach([
              () => registry.invoke("kb.search", { query: `q${i}` }, { autonomous: true }),
              () => registry.invoke("ticket.submit", { subject: `s${i}` }, { autonomous: true }),
              () => registry.invoke("nobody.knows", {}, { autonomous: true })
            ], (call) => call()).pipe(
              Invocation.within({ traceId: `t-${i}`, actor: `agent:${i % 3}` }),
              Effect.provide(sinks[i % 2]!.layer),
              nobody
            )
          yield* Effect.forEach(Array.from({ length: 80 }, (_, i) => i), run, { concurrency: "unbounded" })
          const recorded = [...sinks[0].entries, ...sinks[1].entries]
          expect(recorded.length).toBeGreaterThan(300)
          const all = yield* SqlAudit.entries().pipe(Effect.provide(context))
          expect(all).toHaveLength(recorded.length)
          for (let i = 0; i < 80; i++) {
            const trace = yield* SqlAudit.trace(`t-${i}`).pipe(Effect.provide(i % 3 === 0 ? other : context))
            expect(trace).toEqual(recorded.filter((entry) => entry.traceId === `t-${i}`))
            expect(trace.map((entry) => entry.type)).toContain("refused")
          }
        })
    )

    withDatabase("the columns select: tool, type, refusal gate, actor, time; limit keeps the first", (_, context) =>
      Effect.gen(function*() {
        const { entries, layer } = recording(context)
        const registry = Registry.make(makeDesk().support)
        yield* registry.invoke("kb.search", { query: "a" }, { autonomous: true, actor: "agent:alice" }).pipe(
          Effect.provide(layer)
        )
        yield* TestClock.adjust("1 hour")
        yield* registry.invoke("ticket.submit", { subject: "b" }, { autonomous: true, actor: "agent:bob" }).pipe(
          Effect.provide(layer),
          nobody
        )
        yield* registry.invoke("kb.search", { query: 42 }, { autonomous: false, actor: "agent:bob" }).pipe(
          Effect.provide(layer)
        )
        const query = (filter: SqlAudit.Filter) =>
          SqlAudit.entries(filter).pipe(Effect.provide(context))
        const hour = new Date(3_600_000).toISOString()
        expect(yield* query({ tool: "kb.search" })).toEqual(entries.filter((e) =>
          "tool" in e && e.tool === "kb.search"
        ))
        expect(yield* query({ type: "refused" })).toEqual(entries.filter((e) =>
          e.type === "refused"
        ))
        const refusals = yield* query({ type: "refused", gate: "autonomous" })
        expect(refusals).toEqual(entries.filter((e) => e.type === "refused" && e.gate === "autonomous"))
        expect(refusals.length).toBeGreaterThan(0)
        expect(yield* query({ actor: "agent:bob" })).toEqual(entries.filter((e) => e.actor === "agent:bob"))
        expect(yield* query({ since: hour })).toEqual(entries.filter((e) => e.at >= hour))
        expect(yield* query({ until: hour })).toEqual(entries.filter((e) => e.at < hour))
        expect(yield* query({ limit: 2 })).toEqual(entries.slice(0, 2))
        expect(yield* query({ tool: "nothing.here" })).toEqual([])
      }))

    withDatabase(
      "the three questions: every decision on a run, every refusal by gate, everything one person confirmed",
      (_, context) =>
        Effect.gen(function*() {
          const { entries, layer } = recording(context)
          const desk = makeDesk()
          const registry = Registry.make(desk.support)
          // A person (Carol) at the keyboard; the decision is someone else's.
          const human =
            (traceId: string, decision: HumanConfirm.Decision) => <A, E, R>(effect: Effect.Effect<A, E, R>) =>
              effect.pipe(
                Invocation.within({ traceId, actor: "agent:carol", autonomous: false }),
                Effect.provide(HumanConfirm.layer(HumanConfirm.scripted([decision])))
              )
          // Run 1: Alice approves a message with an edit, Bob rejects another, and a model is refused a write.
          yield* registry.invoke("chat.sendMessage", { text: "Helo" }, { autonomous: false }).pipe(
            human("t-1", HumanConfirm.approve("agent:alice", { to: "customer:42", text: "Hello" })),
            Effect.provide(layer)
          )
          yield* registry.invoke("chat.sendMessage", { text: "No" }, { autonomous: false }).pipe(
            human("t-1", HumanConfirm.reject("agent:bob", "tone")),
            Effect.provide(layer)
          )
          yield* registry.invoke("ticket.submit", { subject: "s" }, { autonomous: true, traceId: "t-1" }).pipe(
            Effect.provide(layer),
            nobody
          )
          // Run 2: Bob approves; a tool nobody knows is refused at another gate.
          yield* registry.invoke("chat.sendMessage", { text: "Hi" }, { autonomous: false }).pipe(
            human("t-2", HumanConfirm.approve("agent:bob")),
            Effect.provide(layer)
          )
          yield* registry.invoke("nobody.knows", {}, { autonomous: true, traceId: "t-2" }).pipe(
            Effect.provide(layer),
            nobody
          )
          // Run 3: Alice approves without an edit.
          yield* registry.invoke("chat.sendMessage", { text: "Bye" }, { autonomous: false }).pipe(
            human("t-3", HumanConfirm.approve("agent:alice")),
            Effect.provide(layer)
          )
          expect(desk.effects.delivered).toHaveLength(3)
          const run = <A, E>(effect: Effect.Effect<A, E, GradedDatabase>) => Effect.provide(effect, context)
          const decisionTypes = ["confirm-requested", "decided", "delivered", "refused"]

          const onRun1 = yield* run(SqlAudit.decisions("t-1"))
          expect(onRun1).toEqual(entries.filter((e) => e.traceId === "t-1" && decisionTypes.includes(e.type)))
          expect(onRun1.map((e) => e.type)).toEqual([
            "confirm-requested",
            "decided",
            "delivered",
            "confirm-requested",
            "decided",
            "refused"
          ])
          expect(onRun1[1]).toMatchObject({ by: "agent:alice", decision: "approved", edited: true })
          expect(onRun1[4]).toMatchObject({ by: "agent:bob", decision: "rejected", reason: "tone" })
          expect(yield* run(SqlAudit.decisions("t-none"))).toEqual([])

          const refused = entries.filter((e) => e.type === "refused")
          expect(new Set(refused.map((e) => e.type === "refused" && e.gate)).size).toBeGreaterThan(1)
          expect(yield* run(SqlAudit.refusals())).toEqual(refused)
          for (const gate of new Set(refused.map((e) => e.type === "refused" ? e.gate : ""))) {
            const atGate = yield* run(SqlAudit.refusals({ gate }))
            expect(atGate).toEqual(refused.filter((e) => e.type === "refused" && e.gate === gate))
            expect(atGate.length).toBeGreaterThan(0)
          }
          expect(yield* run(SqlAudit.refusals({ gate: "no-such-gate" }))).toEqual([])

          const confirmed = (by: string) =>
            entries.filter((e) =>
              (e.type === "decided" && e.decision === "approved" && e.by === by) ||
              (e.type === "delivered" && e.by === by)
            )
          const alice = yield* run(SqlAudit.confirmedBy("agent:alice"))
          expect(alice).toEqual(confirmed("agent:alice"))
          expect(alice.map((e) => `${e.traceId} ${e.type}`)).toEqual([
            "t-1 decided",
            "t-1 delivered",
            "t-3 decided",
            "t-3 delivered"
          ])
          // Bob's rejection is not a confirmation; his approval is.
          const bob = yield* run(SqlAudit.confirmedBy("agent:bob"))
          expect(bob).toEqual(confirmed("agent:bob"))
          expect(bob.map((e) => `${e.traceId} ${e.type}`)).toEqual(["t-2 decided", "t-2 delivered"])
          // The actor a call ran for is not who confirmed it.
          expect(yield* run(SqlAudit.confirmedBy("agent:carol"))).toEqual([])
        })
    )

    withDatabase("open reads the database without migrating it, and names one it cannot read", (database, context) =>
      Effect.gen(function*() {
        const { entries, layer } = recording(context)
        yield* Audit.record({ type: "refused", tool: "x", gate: "autonomous", reason: "r" }).pipe(
          Effect.provide(layer)
        )
        const sql = storeClient(context)
        const source = database.source
        expect(yield* SqlAudit.refusals({ gate: "autonomous" }).pipe(Effect.provide(SqlAudit.open(source))))
          .toEqual(entries)
        yield* sql`DROP TABLE graded_audit`
        const error = yield* Effect.flip(Layer.build(SqlAudit.open(source)))
        expect(error).toBeInstanceOf(SqlAudit.Unreadable)
        expect(error.message).toMatch(/^Cannot read the audit in .*: it holds no graded_audit table/)
      }))

    withDatabase("a row that is not an audit entry is named, not trusted", (_, context) =>
      Effect.gen(function*() {
        yield* Audit.record({ type: "answered", rounds: 1 }).pipe(Effect.provide(recording(context).layer))
        const sql = storeClient(context)
        yield* sql`INSERT INTO graded_audit (at, type, autonomous, entry) VALUES ('x', 'answered', 0, ${
          JSON.stringify({ type: "answered", rounds: "many" })
        })`
        const error = yield* Effect.flip(SqlAudit.entries().pipe(Effect.provide(context)))
        expect(error).toBeInstanceOf(SqlAudit.CorruptRow)
        expect(error).toMatchObject({ _tag: "@graded/sql/SqlAudit/CorruptRow", seq: 2 })
        expect(error.message).toMatch(/^graded_audit, row 2: not an audit entry: /)
      }))

    withDatabase(
      "values JSON cannot hold keep their row; a value JSON cannot write costs its entry, not the call",
      (_, context) =>
        Effect.gen(function*() {
          const { layer } = recording(context)
          const cyclic: Record<string, unknown> = {}
          cyclic.self = cyclic
          yield* Audit.record({ type: "called", tool: "kb.search", input: { big: 10n ** 20n } }).pipe(
            Effect.provide(layer)
          )
          yield* Audit.record({ type: "called", tool: "kb.search", input: cyclic }).pipe(
            Effect.provide(layer),
            Effect.provideService(References.MinimumLogLevel, "None")
          )
          const read = yield* SqlAudit.entries().pipe(Effect.provide(context))
          expect(read).toMatchObject([{ type: "called", input: { big: "100000000000000000000" } }])
        })
    )

    withDatabase("a failing database does not fail the call it records; the lost entry is logged", (_, context) =>
      Effect.gen(function*() {
        const sql = storeClient(context)
        yield* sql`DROP TABLE graded_audit`
        const logged: Array<string> = []
        const logger = Logger.make(({ logLevel, message }) =>
          logged.push(`${logLevel.toUpperCase()} ${Array.isArray(message) ? message.join(" ") : String(message)}`)
        )
        const desk = makeDesk()
        const result = yield* Registry.make(desk.support).invoke("kb.search", { query: "VAT" }, { autonomous: true })
          .pipe(
            Effect.provide(Layer.merge(Layer.succeedContext(context), Logger.layer([logger])))
          )
        expect(result).toMatchObject({ ok: true, data: [{ id: "kb-1", title: "About VAT" }] })
        expect(desk.effects.searches).toEqual(["VAT"])
        expect(logged.length).toBeGreaterThan(0)
        expect(logged.every((line) =>
          line.startsWith("WARN @graded/sql: an audit entry was not stored")
        )).toBe(true)
        expect(yield* Effect.result(SqlAudit.entries().pipe(Effect.provide(context)))).toMatchObject({
          _tag: "Failure"
        })
      }))
  })
