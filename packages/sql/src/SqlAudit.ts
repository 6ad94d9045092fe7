/**
 * graded's audit in a database: each entry is a row of `graded_audit`, with
 * the columns a query selects on (type, tool, refusal gate, time, trace id,
 * actor, autonomous) and the whole entry as JSON, which is what reads back,
 * decoded with `Audit.Entry`. Entries read back in the order they were
 * written; `trace` gives one run's.
 *
 * Three questions have a query of their own, each on an index: `decisions`
 * (what a human was asked and decided on one run, what was delivered and
 * refused), `refusals` (every refusal, or those of one gate) and
 * `confirmedBy` (every approval one person gave, and the deliveries it
 * allowed). `open` reads a database without migrating it, for a tool that
 * only looks, such as `graded audit --sqlite`.
 *
 * Like every sink, it never fails the call it records: an entry the database
 * refuses is dropped with a warning in the log, and the tool call goes on.
 *
 * @since 0.1.0
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import { Effect, Layer, type Redacted, Schema } from "effect"
import { Audit, Invocation } from "@graded/core"
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

const corrupt = (seq: number, issue: string) => new CorruptRow({ seq, issue })

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
  internal.read(filter, corrupt)

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

/**
 * Every decision on one run (one trace id), in the order it happened: what a
 * human was asked to confirm (`confirm-requested`), what they decided
 * (`decided`: approved, edited, rejected, or an invalid edit), what went out
 * (`delivered`) and what a gate refused (`refused`).
 *
 * @example
 * import { Effect } from "effect"
 * import { Audit } from "@graded/core"
 * import { Sql, SqlAudit } from "@graded/sql"
 * const story = SqlAudit.decisions("t-42").pipe(
 *   Effect.map((entries) => entries.map(Audit.describe)),
 *   Effect.provide(Sql.sqlite({ filename: "graded.db" }))
 * )
 *
 * @since 0.1.0
 * @category constructors
 */
export const decisions = (
  traceId: string
): Effect.Effect<ReadonlyArray<Audit.Entry>, SqlError | CorruptRow, SqlClient.SqlClient> =>
  internal.decisions(traceId, corrupt)

/**
 * Which refusals `refusals` reads: those of one gate (`"autonomous"`,
 * `"offered"`, `"lease"`, ...), or all of them when `gate` is left out.
 *
 * @since 0.1.0
 * @category models
 */
export interface RefusalFilter {
  readonly gate?: string | undefined
}

/**
 * Every refusal, or every refusal at one gate, in the order they happened.
 *
 * @example
 * import { Effect } from "effect"
 * import { Sql, SqlAudit } from "@graded/sql"
 * // What models tried that only a human may do:
 * const attempts = SqlAudit.refusals({ gate: "autonomous" }).pipe(
 *   Effect.map((entries) => entries.length),
 *   Effect.provide(Sql.sqlite({ filename: "graded.db" }))
 * )
 *
 * @since 0.1.0
 * @category constructors
 */
export const refusals = (
  filter: RefusalFilter = {}
): Effect.Effect<ReadonlyArray<Audit.Entry>, SqlError | CorruptRow, SqlClient.SqlClient> =>
  internal.refusals(filter.gate, corrupt)

/**
 * Everything one person confirmed: each approval they gave (edited or not,
 * `decided` with `decision: "approved"` and `by` them) and each delivery it
 * allowed (`delivered`, confirmed `by` them), in the order they happened.
 * `by` is the decider as the `HumanConfirm` UI named them (`agent:alice`,
 * `cli:alice`), not the actor the call ran for.
 *
 * @example
 * import { Effect } from "effect"
 * import { Sql, SqlAudit } from "@graded/sql"
 * const alice = SqlAudit.confirmedBy("agent:alice").pipe(Effect.provide(Sql.sqlite({ filename: "graded.db" })))
 *
 * @since 0.1.0
 * @category constructors
 */
export const confirmedBy = (
  by: string
): Effect.Effect<ReadonlyArray<Audit.Entry>, SqlError | CorruptRow, SqlClient.SqlClient> =>
  internal.confirmedBy(by, corrupt)

/**
 * A database to read the audit from: a SQLite file (`{ sqlite: "graded.db" }`)
 * or a PostgreSQL URL (`{ postgres: "postgres://user@host/db" }`).
 *
 * @since 0.1.0
 * @category models
 */
export type Source =
  | { readonly sqlite: string }
  | { readonly postgres: string | Redacted.Redacted }

/**
 * The audit cannot be read from a database: the file is missing or is not
 * SQLite, the server does not answer, the URL does not parse, or the database
 * holds no `graded_audit` table. `database` is the file or the URL, without
 * its password.
 *
 * @since 0.1.0
 * @category errors
 */
export class Unreadable extends Schema.TaggedError<Unreadable>()("@graded/sql/SqlAudit/Unreadable", {
  database: Schema.String,
  reason: Schema.String
}) {
  override get message(): string {
    return `Cannot read the audit in ${this.database}: ${this.reason}`
  }
}

/**
 * A `SqlClient` on a database graded wrote its audit to, only to read it
 * (`entries`, `decisions`, ...): unlike `Sql.sqlite` it makes no file and
 * migrates nothing. It fails with `Unreadable` when the file is missing, the
 * server does not answer, or the database holds no `graded_audit` table (or
 * one an older @graded/sql made and nothing has migrated since).
 *
 * @example
 * import { Effect } from "effect"
 * import { SqlAudit } from "@graded/sql"
 * const refused = SqlAudit.refusals().pipe(Effect.provide(SqlAudit.open({ sqlite: "graded.db" })))
 *
 * @since 0.1.0
 * @category layers
 */
export const open = (source: Source): Layer.Layer<SqlClient.SqlClient, Unreadable> =>
  Invocation.seal(internal.open(source, (database, reason) => new Unreadable({ database, reason })))

// Sealed where they are made (Invocation.seal): each is shared by every
// fiber, and a tool's code that finds one must not rewrite it in place.
Invocation.seal(make)
Invocation.seal(layer)
