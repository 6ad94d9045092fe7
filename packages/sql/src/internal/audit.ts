// The audit sink on a SqlClient and the query that reads entries back. An
// entry is one row: the columns a query selects on (type, tool, gate, time,
// trace id, actor, autonomous) and the whole entry as JSON, which is what is
// read back, decoded with Audit.Entry.
// Who may import this: SqlAudit.ts only.
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import { Effect, Either, ParseResult, Schema } from "effect"
import { Audit } from "@graded/core"
import type { Filter } from "../SqlAudit.js"
import { toJson } from "./json.js"

// The columns a query selects on; what reads back is the JSON.
const columns = (entry: Audit.Entry) => ({
  tool: "tool" in entry ? entry.tool : null,
  gate: entry.type === "refused" ? entry.gate : null,
  traceId: entry.traceId ?? null,
  actor: entry.actor ?? null,
  autonomous: entry.autonomous ? 1 : 0
})

export const make: Effect.Effect<Audit.Audit.Service, never, SqlClient.SqlClient> = Effect.map(
  SqlClient.SqlClient,
  (sql) => ({
    write: (entry) =>
      Effect.suspend(() => {
        const { actor, autonomous, gate, tool, traceId } = columns(entry)
        return sql`INSERT INTO graded_audit (at, type, tool, gate, trace_id, actor, autonomous, entry)
          VALUES (${entry.at}, ${entry.type}, ${tool}, ${gate}, ${traceId}, ${actor}, ${autonomous}, ${toJson(entry)})`
          .withoutTransform
      }).pipe(
        // A sink never fails the call it records: a database that refuses the
        // row (or a value JSON cannot write) costs the entry, said in the log.
        Effect.catchAllCause((cause) =>
          Effect.logWarning("@graded/sql: an audit entry was not stored", cause).pipe(
            Effect.annotateLogs({ type: entry.type, traceId: entry.traceId ?? "" })
          )
        )
      )
  })
)

const decodeEntry = Schema.decodeUnknownEither(Schema.parseJson(Audit.Entry))
const issueOf = (error: ParseResult.ParseError) => ParseResult.TreeFormatter.formatErrorSync(error).split("\n")[0] ?? ""

export const read = <E>(
  filter: Filter | undefined,
  corrupt: (seq: number, issue: string) => E
): Effect.Effect<ReadonlyArray<Audit.Entry>, SqlError | E, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const where = sql.and([
      ...(filter?.traceId !== undefined ? [sql`trace_id = ${filter.traceId}`] : []),
      ...(filter?.tool !== undefined ? [sql`tool = ${filter.tool}`] : []),
      ...(filter?.type !== undefined ? [sql`type = ${filter.type}`] : []),
      ...(filter?.gate !== undefined ? [sql`gate = ${filter.gate}`] : []),
      ...(filter?.actor !== undefined ? [sql`actor = ${filter.actor}`] : []),
      ...(filter?.since !== undefined ? [sql`at >= ${filter.since}`] : []),
      ...(filter?.until !== undefined ? [sql`at < ${filter.until}`] : [])
    ])
    const limit = filter?.limit !== undefined ? sql`LIMIT ${filter.limit}` : sql``
    const rows = yield* sql<{ readonly seq: unknown; readonly entry: unknown }>`SELECT seq, entry FROM graded_audit
      WHERE ${where} ORDER BY seq ${limit}`.withoutTransform
    const entries: Array<Audit.Entry> = []
    for (const row of rows) {
      // The JSON is read back through the schema: a row written by hand, or
      // by an older graded, is named rather than trusted.
      const entry = decodeEntry(row.entry)
      if (Either.isLeft(entry)) return yield* Effect.fail(corrupt(Number(row.seq), issueOf(entry.left)))
      entries.push(entry.right)
    }
    return entries
  })
