// The fallback's storage on a SqlClient (`Fallback.Backend`; the guards come
// from `Fallback.makeStore`).
// - take: one transaction makes sure both quota rows exist, reads them locked
//   (SQLite: the transaction is BEGIN IMMEDIATE, one writer for the whole
//   file; PostgreSQL: SELECT ... FOR UPDATE, in key order, so two takers
//   never wait on each other crosswise), counts the run when both are under
//   their limits, and queues the case. Of two processes racing for the last
//   slot, the second reads the first's count.
// - A case leaves `pending` and a draft leaves `draft` by one conditional
//   UPDATE ... WHERE status = ... RETURNING, as proposals do; only when it
//   matches no row is the row read, to say why. Drafting a case and adding its
//   draft are one transaction.
// Who may import this: SqlFallbackStore.ts.
import { Effect, Schema } from "effect"
import * as SqlClient from "effect/sql/SqlClient"
import { isSqlError, type SqlError } from "effect/sql/SqlError"
import type { Statement } from "effect/sql/Statement"
import { Invocation } from "@graded/core"
import { Fallback } from "@graded/policy"
import { RowNumber } from "./columns.js"
import { fromJson, toJson } from "./json.js"

const seq = RowNumber
const decision = {
  decided_by: Schema.NullOr(Schema.String),
  decided_at: Schema.NullOr(Schema.String),
  reason: Schema.NullOr(Schema.String)
}

const CaseRow = Schema.Struct({
  seq,
  tool: Schema.String,
  input: Schema.NullOr(Schema.String),
  context: Schema.String,
  trace_id: Schema.String,
  tenant: Schema.String,
  day: Schema.String,
  at: Schema.String,
  over_quota: RowNumber,
  status: Schema.Literals(["pending", "drafted", "rejected"]),
  ...decision,
  draft: Schema.NullOr(Schema.String)
})

const DraftRow = Schema.Struct({
  seq,
  case_id: Schema.String,
  tool: Schema.String,
  guideline: Schema.String,
  status: Schema.Literals(["draft", "approved", "rejected"]),
  drafted_by: Schema.String,
  drafted_at: Schema.String,
  ...decision
})

const decisionOf = (row: typeof CaseRow.Type | typeof DraftRow.Type): Fallback.Decision | undefined =>
  row.decided_by === null || row.decided_at === null
    ? undefined
    : { by: row.decided_by, at: row.decided_at, ...(row.reason !== null ? { reason: row.reason } : {}) }

const toCase = (row: typeof CaseRow.Type): Fallback.Case => {
  const decided = decisionOf(row)
  return {
    id: `c-${row.seq}`,
    tool: row.tool,
    input: fromJson(row.input),
    context: fromJson(row.context) as Fallback.ContextSummary,
    traceId: row.trace_id,
    tenant: row.tenant,
    day: row.day,
    at: row.at,
    overQuota: row.over_quota === 1,
    status: row.status,
    ...(decided !== undefined ? { decision: decided } : {}),
    ...(row.draft !== null ? { draft: row.draft } : {})
  }
}

const toDraft = (row: typeof DraftRow.Type): Fallback.Draft => {
  const decided = decisionOf(row)
  return {
    id: `d-${row.seq}`,
    case: row.case_id,
    tool: row.tool,
    guideline: fromJson(row.guideline),
    status: row.status,
    drafted: { by: row.drafted_by, at: row.drafted_at },
    ...(decided !== undefined ? { decision: decided } : {})
  }
}

const seqOf = (prefix: "c" | "d", id: string): number | undefined => {
  const match = /^([cd])-([1-9][0-9]{0,14})$/.exec(id)
  return match === null || match[1] !== prefix ? undefined : Number(match[2])
}

// The service has no error channel for the database: a statement that fails,
// or a row that does not decode, is a defect of that call.
const orDie = <A, E>(effect: Effect.Effect<A, E | SqlError>): Effect.Effect<A, Exclude<E, SqlError>> =>
  Effect.catchIf(effect, (error): error is SqlError => isSqlError(error), Effect.die) as Effect.Effect<
    A,
    Exclude<E, SqlError>
  >

const decodeCase = Schema.decodeUnknownEffect(CaseRow)
const decodeDraft = Schema.decodeUnknownEffect(DraftRow)

export const make: Effect.Effect<Fallback.Backend, never, SqlClient.SqlClient> = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const already = (id: string, status: string, decided: Fallback.Decision | undefined) =>
    new Fallback.AlreadyDecided({ id, status, by: decided?.by ?? "(unknown)", at: decided?.at ?? "(unknown)" })
  const caseRows = (statement: Statement<object>) =>
    statement.withoutTransform.pipe(
      Effect.flatMap(Effect.forEach((raw) => Effect.map(decodeCase(raw), toCase))),
      Effect.orDie
    )
  const draftRows = (statement: Statement<object>) =>
    statement.withoutTransform.pipe(
      Effect.flatMap(Effect.forEach((raw) => Effect.map(decodeDraft(raw), toDraft))),
      Effect.orDie
    )
  const readCase = (id: string) => {
    const n = seqOf("c", id)
    return Effect.flatMap(
      n === undefined ? Effect.succeed([]) : caseRows(sql`SELECT * FROM graded_review_cases WHERE seq = ${n}`),
      ([found]) => found === undefined ? Effect.fail(new Fallback.NotFound({ id })) : Effect.succeed(found)
    )
  }
  const readDraft = (id: string) => {
    const n = seqOf("d", id)
    return Effect.flatMap(
      n === undefined ? Effect.succeed([]) : draftRows(sql`SELECT * FROM graded_guideline_drafts WHERE seq = ${n}`),
      ([found]) => found === undefined ? Effect.fail(new Fallback.NotFound({ id })) : Effect.succeed(found)
    )
  }
  // Why a conditional UPDATE matched nothing.
  const whyCase = (id: string) =>
    Effect.flatMap(readCase(id), (found) => Effect.fail(already(id, found.status, found.decision)))
  const whyDraft = (id: string) =>
    Effect.flatMap(readDraft(id), (found) => Effect.fail(already(id, found.status, found.decision)))
  const forUpdate = sql.onDialectOrElse({ pg: () => sql.literal("FOR UPDATE"), orElse: () => sql.literal("") })
  const where = (status: string | undefined) => status === undefined ? sql`` : sql`WHERE status = ${status}`

  return {
    take: (request, limits, at) =>
      orDie(sql.withTransaction(Effect.gen(function*() {
        const traceKey = JSON.stringify(["trace", request.traceId])
        const tenantKey = JSON.stringify(["tenant", request.tenant, request.day])
        const keys = [traceKey, tenantKey].sort()
        for (const key of keys) {
          yield* sql`INSERT INTO graded_fallback_quota (key, count) VALUES (${key}, 0) ON CONFLICT (key) DO NOTHING`
        }
        const counts = yield* sql<{ readonly key: string; readonly count: number | string }>`SELECT key, count
          FROM graded_fallback_quota WHERE key IN ${sql.in(keys)} ORDER BY key ${forUpdate}`.withoutTransform
        const count = (key: string) => Number(counts.find((row) => row.key === key)?.count ?? 0)
        const [usedTrace, usedTenantDay] = [count(traceKey), count(tenantKey)]
        const granted = usedTrace < limits.perTrace && usedTenantDay < limits.perTenantPerDay
        if (granted) yield* sql`UPDATE graded_fallback_quota SET count = count + 1 WHERE key IN ${sql.in(keys)}`
        const [queued] = yield* sql<{ readonly seq: number | string }>`INSERT INTO graded_review_cases
          (tool, input, context, trace_id, tenant, day, at, over_quota, status)
          VALUES (${request.tool}, ${toJson(request.input)}, ${toJson(request.context)!}, ${request.traceId},
            ${request.tenant}, ${request.day}, ${at}, ${granted ? 0 : 1}, 'pending')
          RETURNING seq`.withoutTransform
        if (queued === undefined) return yield* Effect.die(new Error("INSERT ... RETURNING gave no row"))
        return {
          granted,
          case: `c-${Number(queued.seq)}`,
          usedTrace: granted ? usedTrace + 1 : usedTrace,
          usedTenantDay: granted ? usedTenantDay + 1 : usedTenantDay
        }
      }))),

    cases: (filter) => caseRows(sql`SELECT * FROM graded_review_cases ${where(filter?.status)} ORDER BY seq`),
    case: readCase,

    draftCase: (id, guideline, decided) => {
      const n = seqOf("c", id)
      if (n === undefined) return Effect.fail(new Fallback.NotFound({ id }))
      return orDie(sql.withTransaction(Effect.gen(function*() {
        const [moved] = yield* caseRows(sql`UPDATE graded_review_cases
          SET status = 'drafted', decided_by = ${decided.by}, decided_at = ${decided.at}
          WHERE seq = ${n} AND status = 'pending'
          RETURNING *`)
        if (moved === undefined) return yield* whyCase(id)
        const [draft] = yield* draftRows(sql`INSERT INTO graded_guideline_drafts
          (case_id, tool, guideline, status, drafted_by, drafted_at)
          VALUES (${id}, ${moved.tool}, ${toJson(guideline)!}, 'draft', ${decided.by}, ${decided.at})
          RETURNING *`)
        if (draft === undefined) return yield* Effect.die(new Error("INSERT ... RETURNING gave no row"))
        const [linked] = yield* caseRows(
          sql`UPDATE graded_review_cases SET draft = ${draft.id} WHERE seq = ${n} RETURNING *`
        )
        return { case: linked ?? moved, draft }
      })))
    },

    rejectCase: (id, decided) => {
      const n = seqOf("c", id)
      if (n === undefined) return Effect.fail(new Fallback.NotFound({ id }))
      return Effect.flatMap(
        caseRows(sql`UPDATE graded_review_cases
          SET status = 'rejected', decided_by = ${decided.by}, decided_at = ${decided.at}, reason = ${
          decided.reason ?? null
        }
          WHERE seq = ${n} AND status = 'pending'
          RETURNING *`),
        ([moved]) => moved === undefined ? whyCase(id) : Effect.succeed(moved)
      )
    },

    drafts: (filter) => draftRows(sql`SELECT * FROM graded_guideline_drafts ${where(filter?.status)} ORDER BY seq`),
    draft: readDraft,

    decideDraft: (id, status, decided) => {
      const n = seqOf("d", id)
      if (n === undefined) return Effect.fail(new Fallback.NotFound({ id }))
      return Effect.flatMap(
        draftRows(sql`UPDATE graded_guideline_drafts
          SET status = ${status}, decided_by = ${decided.by}, decided_at = ${decided.at}, reason = ${
          decided.reason ?? null
        }
          WHERE seq = ${n} AND status = 'draft'
          RETURNING *`),
        ([moved]) => moved === undefined ? whyDraft(id) : Effect.succeed(moved)
      )
    }
  }
})

/** The store on the `SqlClient` in context, with `Fallback.makeStore`'s guards. */
export const store: Effect.Effect<Fallback.Store.Service, never, SqlClient.SqlClient> = Effect.map(
  make,
  Fallback.makeStore
)

// Sealed where they are made (Invocation.seal): each is shared by every
// fiber, and a tool's code that finds one must not rewrite it in place.
Invocation.seal(make)
Invocation.seal(store)
