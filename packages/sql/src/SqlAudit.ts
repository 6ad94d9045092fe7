/**
 * graded's audit in a database: each entry is a row of `graded_audit`, with
 * the columns a query selects on (type, tool, refusal gate, time, trace id,
 * actor, autonomous) and the whole entry as JSON, which is what reads back,
 * decoded with `Audit.Entry`. Entries read back in the order they were
 * written; `trace` gives one run's.
 *
 * Like every sink, it never fails the call it records: an entry the database
 * refuses is dropped with a warning in the log, and the tool call goes on.
 *
 * @since 0.1.0
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import { Effect, Layer, Schema } from "effect"
import { Audit } from "@graded/core"
import * as internal from "./internal/audit.js"

/**
 * A row of `graded_audit` whose JSON does not decode as an `Audit.Entry`: it
 * was not written by this sink, or was changed since.
 *
 * @since 0.1.0
 * @category errors
 */
export class CorruptRow extends Schema.TaggedError<CorruptRow>()("@graded/sql/SqlAudit/CorruptRow", {
  seq: Schema.Number,
  issue: Schema.String
}) {
  override get message(): string {
    return `graded_audit, row ${this.seq}: not an audit entry: ${this.issue}`
  }
}

/**
 * Which entries `entries` reads: every field given must match (`since` and
 * `until` bound the time, ISO text, `until` excluded); `limit` keeps the first
 * ones in the order they were written.
 *
 * @since 0.1.0
 * @category models
 */
export interface Filter {
  readonly traceId?: string | undefined
  readonly tool?: string | undefined
  readonly type?: Audit.Entry["type"] | undefined
  /** The gate of a `refused` entry. */
  readonly gate?: string | undefined
  /** The invocation's actor (who the call ran for), not who decided. */
  readonly actor?: string | undefined
  readonly since?: string | undefined
  readonly until?: string | undefined
  readonly limit?: number | undefined
}

/**
 * Makes the sink on the `SqlClient` in context, whose database already holds
 * the tables (`SqlMigrations.run`).
 *
 * @since 0.1.0
 * @category constructors
 */
export const make: Effect.Effect<Audit.Audit.Service, never, SqlClient.SqlClient> = internal.make

/**
 * The sink as a layer on the `SqlClient` in context; it does not migrate
 * (`Sql.layer` does both).
 *
 * @example
 * import { LibsqlClient } from "@effect/sql-libsql"
 * import { Layer } from "effect"
 * import { SqlAudit } from "@graded/sql"
 * // A client of your own, on a database SqlMigrations.run has migrated:
 * const audit = SqlAudit.layer.pipe(Layer.provide(LibsqlClient.layer({ url: "file:graded.db" })))
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<Audit.Audit, never, SqlClient.SqlClient> = Layer.effect(Audit.Audit, internal.make)

/**
 * Reads entries back, in the order they were written, each decoded with
 * `Audit.Entry`; a row that does not decode fails the read with `CorruptRow`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const entries = (
  filter?: Filter
): Effect.Effect<ReadonlyArray<Audit.Entry>, SqlError | CorruptRow, SqlClient.SqlClient> =>
  internal.read(filter, (seq, issue) => new CorruptRow({ seq, issue }))

/**
 * One run's entries (one trace id), in the order they were written.
 *
 * @example
 * import { Effect } from "effect"
 * import { Audit } from "@graded/core"
 * import { Sql, SqlAudit } from "@graded/sql"
 * const program = SqlAudit.trace("t-42").pipe(
 *   Effect.map((entries) => entries.map(Audit.describe)),
 *   Effect.provide(Sql.sqlite({ filename: "graded.db" }))
 * )
 *
 * @since 0.1.0
 * @category constructors
 */
export const trace = (
  traceId: string
): Effect.Effect<ReadonlyArray<Audit.Entry>, SqlError | CorruptRow, SqlClient.SqlClient> => entries({ traceId })
