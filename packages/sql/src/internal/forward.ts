// The audit table as an outbox: entries committed with a run's steps are fed
// to another sink (a JSON Lines file, a log shipper) after commit, at least
// once, each with the id of its row. How far each sink has been fed is a row
// of graded_audit_forwarded, moved only after the sink stored the entries: a
// process stopped between the two feeds them again, and a reader drops the
// repeats by id.
// Who may import this: SqlAudit.ts only.
import { Effect, Result } from "effect"
import * as SqlClient from "effect/sql/SqlClient"
import type { SqlError } from "effect/sql/SqlError"
import type { Audit } from "@graded/core"
import { decodeEntry, issueOf } from "./audit.js"

interface Row {
  readonly seq: unknown
  readonly xact: unknown
  readonly entry: unknown
}

// The next entries for `sink`, in the order they committed. On PostgreSQL, a
// row numbered before another may commit after it: rows are taken in
// (transaction, row) order, and only those of transactions older than every
// open one, so that no row can later appear behind the point fed to.
const next = (sql: SqlClient.SqlClient, from: { readonly xact: string; readonly seq: number }, limit: number) =>
  sql.onDialectOrElse({
    pg: () =>
      sql<Row>`SELECT seq, xact::text AS xact, entry FROM graded_audit
        WHERE xact < pg_snapshot_xmin(pg_current_snapshot())
          AND (xact > ${from.xact}::xid8 OR (xact = ${from.xact}::xid8 AND seq > ${from.seq}))
        ORDER BY xact, seq LIMIT ${limit}`.withoutTransform,
    // One writer at a time, each committing before the next numbers a row.
    orElse: () =>
      sql<Row>`SELECT seq, '0' AS xact, entry FROM graded_audit WHERE seq > ${from.seq}
        ORDER BY seq LIMIT ${limit}`.withoutTransform
  })

const store = (to: Audit.Audit.Service, entries: ReadonlyArray<Audit.Entry>): Effect.Effect<void, unknown> =>
  to.writeBatch !== undefined ? to.writeBatch(entries) : Effect.forEach(entries, to.write, { discard: true })

/** One pass: feeds `sink` up to `limit` entries, and says how many. */
export const forward = <C, F>(
  sink: string,
  to: Audit.Audit.Service,
  limit: number,
  corrupt: (seq: number, issue: string) => C,
  failed: (cause: unknown) => F
): Effect.Effect<number, SqlError | C | F, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const [cursor] = yield* sql<{ readonly xact: string; readonly seq: unknown }>`SELECT xact, seq
      FROM graded_audit_forwarded WHERE sink = ${sink}`.withoutTransform
    const from = { xact: cursor?.xact ?? "0", seq: Number(cursor?.seq ?? 0) }
    const rows = yield* next(sql, from, limit)
    if (rows.length === 0) return 0
    const entries: Array<Audit.Entry> = []
    for (const row of rows) {
      const entry = decodeEntry(row.entry)
      if (Result.isFailure(entry)) return yield* Effect.fail(corrupt(Number(row.seq), issueOf(entry.failure)))
      entries.push({ ...entry.success, id: String(row.seq) })
    }
    yield* Effect.mapError(store(to, entries), failed)
    const last = rows[rows.length - 1]!
    const at = { xact: String(last.xact), seq: Number(last.seq) }
    yield* sql`INSERT INTO graded_audit_forwarded (sink, xact, seq) VALUES (${sink}, ${at.xact}, ${at.seq})
      ON CONFLICT (sink) DO UPDATE SET xact = ${at.xact}, seq = ${at.seq}`.withoutTransform
    return rows.length
  })
