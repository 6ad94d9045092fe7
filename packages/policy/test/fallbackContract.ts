// The Fallback.Store contract: what every store does, checked the same way on
// each. `Fallback.memory` is the specification; @graded/sql runs this suite on
// a SQLite file and on PostgreSQL. Each test gets an empty database; `open`
// connects another pool to it (for memory, the same store again).
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer, Result, type Scope } from "effect"
import { Audit, Invocation } from "@graded/core"
import { Condition, Fallback, Guideline } from "@graded/policy"

type Store = Fallback.Store.Service

export interface FallbackDatabase {
  readonly open: Effect.Effect<Store, unknown, Scope.Scope>
}

export interface FallbackSubject {
  readonly name: string
  readonly database: Effect.Effect<FallbackDatabase, unknown, Scope.Scope>
}

export const fallbackMemory: FallbackSubject = {
  name: "Fallback.memory",
  database: Effect.map(Layer.build(Fallback.memory), (context) => {
    const store = Context.get(context, Fallback.Store)
    return { open: Effect.succeed(store) }
  })
}

export const request = (overrides: Partial<Fallback.Request> = {}): Fallback.Request => ({
  traceId: "t-1",
  tenant: "acme",
  day: "2026-11-30",
  tool: "kb.search",
  input: { query: "opening hours" },
  context: { autonomous: true, actor: "customer:42", role: "customer", page: "chat" },
  ...overrides
})

export const draftData = Guideline.toData(Guideline.make("customers-opening-hours", {
  description: "Customers may search the knowledge base for opening hours.",
  when: Condition.role("customer"),
  tools: ["kb.search"],
  autonomous: true
}))

const as = (actor: string) => Invocation.within({ actor })

export const fallbackContract = (subject: FallbackSubject) =>
  describe(`Fallback.Store contract: ${subject.name}`, () => {
    const withStore = <A, E>(f: (store: Store, database: FallbackDatabase) => Effect.Effect<A, E, Scope.Scope>) =>
      Effect.gen(function*() {
        const database = yield* subject.database
        return yield* f(yield* database.open, database)
      })

    it.effect("each trace gets its quota of runs; the run past it is refused, counted nowhere, and queued", () =>
      withStore((store) =>
        Effect.gen(function*() {
          const limits = { perTrace: 2, perTenantPerDay: 100 }
          const first = yield* store.take(request(), limits)
          const second = yield* store.take(request({ input: { query: "second" } }), limits)
          const third = yield* store.take(request({ input: { query: "third" } }), limits)
          const other = yield* store.take(request({ traceId: "t-2" }), limits)
          expect([first, second, third, other].map((t) => [t.granted, t.usedTrace, t.usedTenantDay])).toEqual([
            [true, 1, 1],
            [true, 2, 2],
            [false, 2, 2],
            [true, 1, 3]
          ])
          const cases = yield* store.cases()
          expect(cases.map((c) => [c.id, c.overQuota, c.status])).toEqual([
            [first.case, false, "pending"],
            [second.case, false, "pending"],
            [third.case, true, "pending"],
            [other.case, false, "pending"]
          ])
          expect(yield* store.case(third.case)).toMatchObject({
            tool: "kb.search",
            input: { query: "third" },
            traceId: "t-1",
            tenant: "acme",
            day: "2026-11-30",
            context: { autonomous: true, actor: "customer:42", role: "customer", page: "chat" }
          })
        })
      ))

    it.effect("each tenant gets its quota per day, apart from other tenants and other days", () =>
      withStore((store) =>
        Effect.gen(function*() {
          const limits = { perTrace: 100, perTenantPerDay: 2 }
          const granted = (r: Partial<Fallback.Request>) => Effect.map(store.take(request(r), limits), (t) => t.granted)
          expect(yield* granted({ traceId: "a" })).toBe(true)
          expect(yield* granted({ traceId: "b" })).toBe(true)
          expect(yield* granted({ traceId: "c" })).toBe(false)
          expect(yield* granted({ traceId: "c", tenant: "globex" })).toBe(true)
          expect(yield* granted({ traceId: "d", day: "2026-12-01" })).toBe(true)
          expect(yield* granted({ traceId: "e" })).toBe(false)
          expect((yield* store.cases()).filter((c) => c.overQuota)).toHaveLength(2)
        })
      ))

    it.effect("a human approves a case into a draft; the draft governs nothing until a human approves it", () =>
      withStore((store) =>
        Effect.gen(function*() {
          const audit = Audit.memory()
          const { case: id } = yield* store.take(request(), { perTrace: 1, perTenantPerDay: 1 })
          const drafted = yield* as("agent:alice")(store.approve(id, { guideline: draftData })).pipe(
            Effect.provide(audit.layer)
          )
          expect(drafted.case).toMatchObject({ id, status: "drafted", draft: drafted.draft.id })
          expect(drafted.case.decision?.by).toBe("agent:alice")
          expect(drafted.draft).toMatchObject({
            case: id,
            tool: "kb.search",
            status: "draft",
            guideline: draftData,
            drafted: { by: "agent:alice" }
          })
          expect(yield* store.drafts({ status: "draft" })).toEqual([drafted.draft])
          expect(yield* Fallback.approvedGuidelines(store)).toEqual([])
          const guideline = yield* as("agent:bob")(store.approveDraft(drafted.draft.id)).pipe(
            Effect.provide(audit.layer)
          )
          expect(Guideline.toData(guideline)).toEqual(draftData)
          expect((yield* Fallback.approvedGuidelines(store)).map(Guideline.toData)).toEqual([draftData])
          expect(yield* store.draft(drafted.draft.id)).toMatchObject({
            status: "approved",
            decision: { by: "agent:bob" }
          })
          expect(
            audit.entries.map((e) => [e.type, e.actor, "by" in e ? e.by : undefined, "decision" in e && e.decision])
          )
            .toEqual([
              ["decided", "agent:alice", "agent:alice", "approved"],
              ["decided", "agent:bob", "agent:bob", "approved"]
            ])
        })
      ))

    it.effect("the first decision stands: a second one fails naming who decided and when", () =>
      withStore((store) =>
        Effect.gen(function*() {
          const limits = { perTrace: 5, perTenantPerDay: 5 }
          const { case: a } = yield* store.take(request(), limits)
          const { case: b } = yield* store.take(request(), limits)
          const rejected = yield* as("agent:alice")(store.reject(a, { reason: "looks like abuse" }))
          expect(rejected).toMatchObject({
            status: "rejected",
            decision: { by: "agent:alice", reason: "looks like abuse" }
          })
          const again = yield* Effect.flip(as("agent:bob")(store.approve(a, { guideline: draftData })))
          expect(again).toBeInstanceOf(Fallback.AlreadyDecided)
          expect(again).toMatchObject({ id: a, status: "rejected", by: "agent:alice", at: rejected.decision!.at })
          expect(yield* Effect.flip(as("agent:bob")(store.reject(a, { reason: "again" })))).toMatchObject({
            _tag: "@graded/policy/Fallback/AlreadyDecided",
            by: "agent:alice"
          })
          const { draft } = yield* as("agent:alice")(store.approve(b, { guideline: draftData }))
          yield* as("agent:carol")(store.rejectDraft(draft.id, { reason: "too broad" }))
          const late = yield* Effect.flip(as("agent:bob")(store.approveDraft(draft.id)))
          expect(late).toMatchObject({
            _tag: "@graded/policy/Fallback/AlreadyDecided",
            status: "rejected",
            by: "agent:carol"
          })
          expect(yield* Fallback.approvedGuidelines(store)).toEqual([])
          expect((yield* store.drafts({ status: "rejected" })).map((d) => d.decision?.reason)).toEqual(["too broad"])
        })
      ))

    it.effect("no human, no decision: a model's fiber or a context without an actor is refused, nothing moves", () =>
      withStore((store) =>
        Effect.gen(function*() {
          const audit = Audit.memory()
          const { case: id } = yield* store.take(request(), { perTrace: 5, perTenantPerDay: 5 })
          const { draft } = yield* as("agent:alice")(store.approve(
            (yield* store.take(request(), { perTrace: 5, perTenantPerDay: 5 })).case,
            { guideline: draftData }
          ))
          const model = Invocation.within({ autonomous: true, actor: "agent:alice" })
          const attempts: ReadonlyArray<Effect.Effect<unknown, Fallback.Store.Failure>> = [
            model(store.approve(id, { guideline: draftData })),
            model(store.reject(id, { reason: "x" })),
            model(store.approveDraft(draft.id)),
            model(store.rejectDraft(draft.id, { reason: "x" })),
            store.approve(id, { guideline: draftData }),
            store.reject(id, { reason: "x" }),
            store.approveDraft(draft.id),
            Invocation.within({ actor: "  " })(store.rejectDraft(draft.id, { reason: "x" }))
          ]
          const errors = yield* Effect.forEach(attempts, (attempt) =>
            Effect.flip(attempt).pipe(Effect.provide(audit.layer)))
          expect(errors.map((e) => [e._tag, "why" in e ? e.why : undefined])).toEqual([
            ...Array(4).fill(["@graded/policy/Fallback/Refused", "autonomous"]),
            ...Array(4).fill(["@graded/policy/Fallback/Refused", "no-actor"])
          ])
          expect((yield* store.case(id)).status).toBe("pending")
          expect((yield* store.draft(draft.id)).status).toBe("draft")
          expect(audit.entries.every((e) =>
            e.type === "refused" && e.gate === "fallback-review"
          )).toBe(true)
          expect(audit.entries).toHaveLength(8)
        })
      ))

    it.effect("a draft that is not a valid guideline, or a rejection without a reason, is refused, nothing stored", () =>
      withStore((store) =>
        Effect.gen(function*() {
          const { case: id } = yield* store.take(request(), { perTrace: 5, perTenantPerDay: 5 })
          const alice = as("agent:alice")
          const invalid = yield* Effect.flip(
            alice(store.approve(id, { guideline: { ...draftData as object, when: { op: "sudo" } } }))
          )
          expect(invalid).toBeInstanceOf(Fallback.InvalidDecision)
          expect(invalid.message).toMatch(
            /^Cannot decide c-\d+: the guideline draft is not valid: guideline "customers-opening-hours": its condition is not valid/
          )
          const empty = yield* Effect.flip(
            alice(store.approve(id, { guideline: { id: "x", description: "", tools: [] } }))
          )
          expect(empty.message).toContain("the description is missing")
          const noReason = yield* Effect.flip(alice(store.reject(id, { reason: " " })))
          expect(noReason).toMatchObject({
            _tag: "@graded/policy/Fallback/InvalidDecision",
            issue: "a rejection needs a reason"
          })
          expect((yield* store.case(id)).status).toBe("pending")
          expect(yield* store.drafts()).toEqual([])
        })
      ))

    it.effect("unknown ids are NotFound, whatever they look like", () =>
      withStore((store) =>
        Effect.gen(function*() {
          const { case: id } = yield* store.take(request(), { perTrace: 5, perTenantPerDay: 5 })
          const alice = as("agent:alice")
          for (const unknown of ["c-999", "d-1", "p-1", "c-0", "'; DROP TABLE x; --", ""]) {
            expect(yield* Effect.flip(store.case(unknown))).toEqual(new Fallback.NotFound({ id: unknown }))
            expect(yield* Effect.flip(alice(store.reject(unknown, { reason: "r" })))).toBeInstanceOf(Fallback.NotFound)
            expect(yield* Effect.flip(alice(store.approveDraft(unknown)))).toBeInstanceOf(Fallback.NotFound)
          }
          expect(yield* Effect.flip(store.draft(id))).toBeInstanceOf(Fallback.NotFound)
        })
      ))

    it.effect("twenty takers on two pools of one database racing for the last slot: exactly one is granted, every case queued", () =>
      withStore((store, database) =>
        Effect.gen(function*() {
          const other = yield* database.open
          const limits = { perTrace: 3, perTenantPerDay: 100 }
          yield* store.take(request(), limits)
          yield* other.take(request(), limits)
          // Twenty takers, half on each pool, for the one slot left.
          const takers = 20
          const raced = yield* Effect.all(
            Array.from({ length: takers }, (_, i) => (i % 2 === 0 ? store : other).take(request({ input: i }), limits)),
            { concurrency: "unbounded" }
          )
          expect(raced.filter((t) => t.granted)).toHaveLength(1)
          expect(raced.map((t) => t.usedTrace)).toEqual(Array(takers).fill(3))
          const cases = yield* store.cases()
          expect(cases).toHaveLength(takers + 2)
          expect(cases.filter((c) => !c.overQuota)).toHaveLength(3)
          // And two humans deciding one case at once: one decision stands.
          const decided = yield* Effect.all(
            [
              Effect.result(Effect.asVoid(as("agent:alice")(store.approve(raced[0]!.case, { guideline: draftData })))),
              Effect.result(Effect.asVoid(as("agent:bob")(other.reject(raced[0]!.case, { reason: "no" }))))
            ],
            { concurrency: "unbounded" }
          )
          expect(decided.filter(Result.isSuccess)).toHaveLength(1)
          expect(decided.filter(Result.isFailure).map((e) => e.failure._tag)).toEqual([
            "@graded/policy/Fallback/AlreadyDecided"
          ])
          expect((yield* other.drafts()).length).toBe((yield* store.case(raced[0]!.case)).status === "drafted" ? 1 : 0)
        })
      ))
  })
