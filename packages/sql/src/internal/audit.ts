// The audit sink on a SqlClient and the query that reads entries back. An
// entry is one row: the columns a query selects on (type, tool, gate, time,
// trace id, actor, autonomous) and the whole entry as JSON, which is what is
// read back, decoded with Audit.Entry.
// `open` connects to a database only to read it: it neither makes a file nor
// migrates, and says in one sentence what is wrong (no file, no server, no
// table) rather than failing on the first query.
// Who may import this: SqlAudit.ts only.
import { Cause, Context, Deferred, Duration, Effect, Layer, Redacted, Result, Schema, Semaphore } from "effect"
import * as SqlClient from "effect/sql/SqlClient"
import { isSqlError, type SqlError } from "effect/sql/SqlError"
import type * as Statement from "effect/sql/Statement"
import { Audit, Invocation } from "@graded/core"
import * as fs from "node:fs"
import type { Filter, Source } from "../SqlAudit.js"
import { toJson } from "./json.js"
import * as postgres from "./postgres.js"
import * as sqlite from "./sqlite.js"
import { currentTransaction } from "./transaction.js"

// The columns a query selects on; what reads back is the JSON.
const columns = (entry: Audit.Entry) => ({
  tool: "tool" in entry ? entry.tool : null,
  gate: entry.type === "refused" ? entry.gate : null,
  traceId: entry.traceId ?? null,
  actor: entry.actor ?? null,
  autonomous: entry.autonomous ? 1 : 0,
  // Who decided, on a decision and on the delivery it allowed.
  decidedBy: entry.type === "decided" || entry.type === "delivered" ? entry.by : null,
  decision: entry.type === "decided" ? entry.decision : null
})

// One row's values, in the columns' order below.
const values = (entry: Audit.Entry) => {
  const { actor, autonomous, decidedBy, decision, gate, tool, traceId } = columns(entry)
  return [entry.at, entry.type, tool, gate, traceId, actor, autonomous, decidedBy, decision, toJson(entry)] as const
}

// Rows a statement takes at most: 10 parameters each, within SQLite's limit
// of 32,766 and PostgreSQL's of 65,535.
const rowsPerStatement = 500

interface Waiting {
  readonly row: ReturnType<typeof values>
  readonly done: Deferred.Deferred<void, unknown>
}

export const make: Effect.Effect<Audit.Audit.Service, never, SqlClient.SqlClient> = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  // The statement's text for a number of rows, made once: a fragment per
  // value would be compiled again for every batch.
  const placeholder = sql.onDialectOrElse({ pg: () => (n: number) => `$${n}`, orElse: () => () => "?" })
  const texts = new Map<number, string>()
  const textFor = (count: number) => {
    let text = texts.get(count)
    if (text === undefined) {
      const tuples = Array.from(
        { length: count },
        (_, row) => `(${Array.from({ length: 10 }, (_, column) => placeholder(row * 10 + column + 1)).join(", ")})`
      )
      text = `INSERT INTO graded_audit (at, type, tool, gate, trace_id, actor, autonomous, decided_by, decision, entry)
      VALUES ${tuples.join(", ")}`
      if (texts.size < 64) texts.set(count, text)
    }
    return text
  }
  const insert = (rows: ReadonlyArray<ReturnType<typeof values>>) =>
    sql.unsafe(textFor(rows.length), rows.flat()).withoutTransform
  // Group commit: entries written at the same time outside a transaction go
  // in one statement (one commit). The writer that takes the permit writes
  // every entry waiting, its own among them; a writer whose entry was written
  // meanwhile has nothing left to do. Each waits for its own entry.
  const waiting: Array<Waiting> = []
  const permit = yield* Semaphore.make(1)
  const flush = Effect.suspend(() => {
    const batch = waiting.splice(0, rowsPerStatement)
    if (batch.length === 0) return Effect.void
    return insert(batch.map((one) => one.row)).pipe(
      Effect.andThen(Effect.forEach(batch, (one) => Deferred.succeed(one.done, undefined), { discard: true })),
      // The batch was refused: each entry alone, so a row the database
      // refuses costs that entry and no other.
      Effect.catchCause(() =>
        Effect.forEach(batch, (one) => Deferred.complete(one.done, Effect.asVoid(insert([one.row]))), {
          discard: true
        })
      )
    )
  })
  const grouped = (row: ReturnType<typeof values>) =>
    Effect.flatMap(Deferred.make<void, unknown>(), (done) => {
      waiting.push({ row, done })
      // The driver runs a statement without yielding: a writer first lets the
      // others that are ready push theirs, so they share one commit.
      return Effect.andThen(
        Effect.yieldNow,
        // Uninterruptible: others wait on the entries this writer took.
        Effect.andThen(
          permit.withPermits(1)(
            Effect.uninterruptible(Effect.flatMap(Deferred.isDone(done), (written) => written ? Effect.void : flush))
          ),
          Deferred.await(done)
        )
      )
    })
  const writeRows = (rows: ReadonlyArray<ReadonlyArray<unknown>>) =>
    Effect.asVoid(insert(rows as ReadonlyArray<ReturnType<typeof values>>))
  return Object.freeze<Audit.Audit.Service>({
    write: (entry) =>
      Effect.flatMap(currentTransaction, (open) => {
        // Inside a transition's transaction (on this database): the row waits
        // on it and is written as it commits; a row that cannot be written
        // fails the step, and nothing of it is kept: no state change stands
        // without its entry.
        if (open !== undefined && open.sql === sql) {
          return Effect.try({ try: () => values(entry), catch: (cause) => cause }).pipe(
            Effect.flatMap((row) =>
              Effect.sync(() => {
                open.flush ??= writeRows
                open.rows.push(row)
              })
            ),
            Effect.orDie
          )
        }
        // A sink never fails the call it records: a database that refuses the
        // row (or a value JSON cannot write) costs the entry, said in the log.
        return Effect.suspend(() => grouped(values(entry))).pipe(
          Effect.catchCause((cause) =>
            Effect.logWarning("@graded/sql: an audit entry was not stored", cause).pipe(
              Effect.annotateLogs({ type: entry.type, traceId: entry.traceId ?? "" })
            )
          )
        )
      })
  })
})

export const decodeEntry = Schema.decodeUnknownResult(Schema.fromJsonString(Audit.Entry))
export const issueOf = (error: Schema.SchemaError) => error.message.split("\n")[0] ?? ""

// The entries whose rows match `where`, in the order they were written, each
// decoded: a row written by hand, or by an older graded, is named rather than
// trusted.
const select = <E>(
  where: (sql: SqlClient.SqlClient) => Statement.Fragment,
  limit: number | undefined,
  corrupt: (seq: number, issue: string) => E
): Effect.Effect<ReadonlyArray<Audit.Entry>, SqlError | E, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ readonly seq: unknown; readonly entry: unknown }>`SELECT seq, entry FROM graded_audit
      WHERE ${where(sql)} ORDER BY seq ${limit !== undefined ? sql`LIMIT ${limit}` : sql``}`.withoutTransform
    const entries: Array<Audit.Entry> = []
    for (const row of rows) {
      const entry = decodeEntry(row.entry)
      if (Result.isFailure(entry)) return yield* Effect.fail(corrupt(Number(row.seq), issueOf(entry.failure)))
      entries.push(entry.success)
    }
    return entries
  })

export const read = <E>(
  filter: Filter | undefined,
  corrupt: (seq: number, issue: string) => E
): Effect.Effect<ReadonlyArray<Audit.Entry>, SqlError | E, SqlClient.SqlClient> =>
  select(
    (sql) =>
      sql.and([
        ...(filter?.traceId !== undefined ? [sql`trace_id = ${filter.traceId}`] : []),
        ...(filter?.tool !== undefined ? [sql`tool = ${filter.tool}`] : []),
        ...(filter?.type !== undefined ? [sql`type = ${filter.type}`] : []),
        ...(filter?.gate !== undefined ? [sql`gate = ${filter.gate}`] : []),
        ...(filter?.actor !== undefined ? [sql`actor = ${filter.actor}`] : []),
        ...(filter?.since !== undefined ? [sql`at >= ${filter.since}`] : []),
        ...(filter?.until !== undefined ? [sql`at < ${filter.until}`] : [])
      ]),
    filter?.limit,
    corrupt
  )

// What a human was asked and decided on a run, what was delivered, and what
// the gates refused.
const decisionTypes = ["confirm-requested", "decided", "delivered", "refused"] as const

export const decisions = <E>(traceId: string, corrupt: (seq: number, issue: string) => E) =>
  select((sql) => sql`trace_id = ${traceId} AND ${sql.in("type", decisionTypes)}`, undefined, corrupt)

export const refusals = <E>(gate: string | undefined, corrupt: (seq: number, issue: string) => E) =>
  select(
    (sql) => gate === undefined ? sql`type = 'refused'` : sql`gate = ${gate} AND type = 'refused'`,
    undefined,
    corrupt
  )

// An approval (edited or not) and the deliveries it allowed: `decided_by` is
// the `by` of both.
export const confirmedBy = <E>(by: string, corrupt: (seq: number, issue: string) => E) =>
  select(
    (sql) => sql`decided_by = ${by} AND (type = 'delivered' OR (type = 'decided' AND decision = 'approved'))`,
    undefined,
    corrupt
  )

// A URL as it may be shown: without its password.
const shown = (url: string): string => {
  try {
    const parsed = new URL(url)
    if (parsed.password !== "") parsed.password = "***"
    return parsed.href
  } catch {
    return "(a URL that does not parse)"
  }
}

// The driver's own words: node:sqlite's (with SQLite's code), the server's or the socket's.
const firstLine = (error: unknown): string => {
  const cause = isSqlError(error)
    ? error.reason.cause
    : typeof error === "object" && error !== null && "cause" in error
    ? error.cause
    : undefined
  const text = cause instanceof Error
    ? sqlite.reasonOf(cause)
    : error instanceof Error
    ? error.message
    : Cause.isCause(error)
    ? Cause.pretty(error)
    : String(error)
  return text.split("\n")[0] ?? ""
}

const fail = <E>(error: E): Layer.Layer<SqlClient.SqlClient, E> => Layer.effectContext(Effect.fail(error))

// Made again for each build (Invocation.freshLayer): an app keeps the layer
// `SqlAudit.open` returns, and `Layer.unwrap`'s and `effectDiscard`'s effects
// would be the same objects at every build.
export const open = <E>(
  source: Source,
  unreadable: (database: string, reason: string) => E
): Layer.Layer<SqlClient.SqlClient, E> => Invocation.freshLayer(() => Layer.build(opened(source, unreadable)))

const opened = <E>(
  source: Source,
  unreadable: (database: string, reason: string) => E
): Layer.Layer<SqlClient.SqlClient, E> => {
  const client: Layer.Layer<SqlClient.SqlClient, E> = "sqlite" in source
    ? Layer.unwrap(Effect.sync(() =>
      fs.existsSync(source.sqlite)
        // No WAL pragma: a reader leaves the file's journal as it is, and does not wait for writers.
        ? sqlite.layer(source.sqlite, { wal: false }).pipe(
          Layer.catchCause((cause) => {
            const reason = firstLine(Cause.squash(cause))
            // SQLite reads the file's header as it opens it.
            return fail(unreadable(
              source.sqlite,
              reason.startsWith("SQLITE_NOTADB") ? `it cannot be read as a database: ${reason}`
                : `cannot open it: ${reason}`
            ))
          })
        )
        : fail(unreadable(source.sqlite, "there is no such file"))
    ))
    : Layer.unwrap(Effect.gen(function*() {
      const url = Redacted.isRedacted(source.postgres) ? Redacted.value(source.postgres) : source.postgres
      const valid = URL.canParse(url) && ["postgres:", "postgresql:"].includes(new URL(url).protocol)
      if (!valid) {
        return fail(unreadable(shown(url), "not a PostgreSQL URL (postgres://user:password@host:port/database)"))
      }
      const loaded = yield* Effect.result(postgres.pg)
      if (Result.isFailure(loaded)) {
        return fail(unreadable(shown(url), `reading PostgreSQL needs ${postgres.driver}, and ${loaded.failure}`))
      }
      // The pool connects when first asked: asked here, so that a server that does not answer is named as such.
      const connected = postgres.client(loaded.success.PgClient, {
        url: Redacted.make(url),
        maxConnections: 1,
        applicationName: "graded audit",
        connectTimeout: Duration.seconds(10)
      }).pipe(Layer.tap((context) => Context.get(context, SqlClient.SqlClient)`SELECT 1`))
      return connected.pipe(
        Layer.catchCause((cause) => fail(unreadable(shown(url), `cannot connect: ${firstLine(Cause.squash(cause))}`)))
      )
    }))
  const database = "sqlite" in source
    ? source.sqlite
    : shown(Redacted.isRedacted(source.postgres) ? Redacted.value(source.postgres) : source.postgres)
  // Asked once, up front: a database without graded's table, or with the
  // table of a graded that predates the decision columns, is named as such.
  const check = Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const has = (columns: string) =>
      Effect.isSuccess(sql.unsafe(`SELECT ${columns} FROM graded_audit WHERE 1 = 0`).withoutTransform)
    if (!(yield* has("seq"))) {
      // A file that is not SQLite fails once its schema is read; say that rather than "no table".
      const any = yield* Effect.result(sql.onDialectOrElse({
        sqlite: () => sql`SELECT count(*) AS tables FROM sqlite_master`.withoutTransform,
        orElse: () => sql`SELECT 1 AS one`.withoutTransform
      }))
      return yield* Effect.fail(unreadable(
        database,
        Result.isFailure(any)
          ? `it cannot be read as a database: ${firstLine(any.failure)}`
          : "it holds no graded_audit table (graded's audit is written there by Sql.sqlite or Sql.postgres from @graded/sql)"
      ))
    }
    if (!(yield* has("decided_by, decision"))) {
      return yield* Effect.fail(unreadable(
        database,
        "its graded_audit table is from an older @graded/sql: start the app once with this version, which migrates it"
      ))
    }
  })
  return Layer.effectDiscard(check).pipe(Layer.provideMerge(client))
}

// Sealed where they are made (Invocation.seal): each is shared by every
// fiber, and a tool's code that finds one must not rewrite it in place.
Invocation.seal(make)
