/**
 * graded's durable parts in one layer: the tables (migrated at start), the
 * `ProposalStore`, the `RunStore` and the `Audit` sink, on one database (and
 * the policy's `Fallback.Store` beside them: `SqlFallbackStore.beside`).
 *
 * - `Sql.sqlite({ filename })`: one file beside the app, the embedded default.
 *   Several processes on one machine may share the file: it uses WAL, and a
 *   statement that finds the file locked by another waits for it (up to 10 s).
 * - `Sql.postgres({ url })`: one PostgreSQL database for many processes on
 *   many machines. A start while the server does not answer tries again, for
 *   up to a minute (`connectTimeout`), then fails with `Sql.Unavailable`.
 * - `Sql.layer`: the same on a `SqlClient` you provide (another driver's
 *   settings); SQLite and PostgreSQL only.
 *
 * `Sql.sqlite` and `Sql.postgres` keep the client they open to graded: they
 * provide no `SqlClient`, so a tool that asks for one is not handed the
 * client that writes graded's tables (the proposals a human decides, the
 * audit). `SqlAudit.entries` and the other reads run on what each layer
 * provides; give your own queries a client of their own.
 *
 * @since 0.1.0
 */
import { Context, Duration, Effect, Layer, Redacted, Schema } from "effect"
import type { MigrationError } from "effect/sql/Migrator"
import type * as SqlClient from "effect/sql/SqlClient"
import type { SqlError } from "effect/sql/SqlError"
import { type Audit, Invocation, type ProposalStore, type RunStore } from "@graded/core"
import * as database from "./internal/database.js"
import * as postgresClient from "./internal/postgres.js"
import * as sqliteClient from "./internal/sqlite.js"
import * as SqlAudit from "./SqlAudit.js"
import * as SqlMigrations from "./SqlMigrations.js"
import * as SqlProposalStore from "./SqlProposalStore.js"
import * as SqlRunStore from "./SqlRunStore.js"

type Provided =
  | ProposalStore.ProposalStore
  | RunStore.RunStore
  | Audit.Audit
  | database.GradedDatabase

/**
 * Migrates the database of the `SqlClient` in context, then provides the
 * proposal store, the run store, the audit sink and the fallback store on it
 * (and `SqlAudit.entries` and the other reads). @graded/policy's fallback
 * store goes beside them with `SqlFallbackStore.beside`.
 *
 * Every service that holds this client can write graded's tables: approve a
 * proposal row, delete audit rows. Provide it to this layer only
 * (`Layer.provide`, not `Layer.provideMerge`) and give your own queries, and
 * your tools, a client (a pool) of their own.
 *
 * @example
 * import { PgClient } from "@effect/sql-pg"
 * import { Duration, Layer, Redacted } from "effect"
 * import { Sql } from "@graded/sql"
 * // PostgreSQL with settings of your own, its client kept to graded:
 * const durable = Sql.layer.pipe(Layer.provide(PgClient.layer({
 *   url: Redacted.make("postgres://graded@db.internal/graded"),
 *   ssl: true,
 *   connectTimeout: Duration.seconds(10)
 * })))
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<Provided, SqlError | MigrationError, SqlClient.SqlClient> = Layer.mergeAll(
  SqlProposalStore.layer,
  SqlRunStore.layer,
  SqlAudit.layer,
  database.layer
).pipe(
  Layer.provide(Invocation.freshLayer(() => Effect.as(SqlMigrations.run, Context.empty())))
)

/**
 * Where `Sql.sqlite` keeps its database.
 *
 * @since 0.1.0
 * @category models
 */
export interface SqliteOptions {
  /** The database file, made with its tables when missing (its folder must exist). */
  readonly filename: string
  /**
   * How commits reach the disk (SQLite's `synchronous`; the file is in WAL
   * mode). `"normal"` (the default): every commit survives the process being
   * killed; a delivery's record, and every commit before it, is synced before
   * the tool runs, so it survives a power loss too, while a commit after the
   * last delivery record (an audit entry, a run's step) may be lost to one.
   * `"full"`: every commit is synced, at about 0.7 ms a commit on a plain disk.
   *
   * @since 0.3.0
   */
  readonly synchronous?: "normal" | "full" | undefined
}

/**
 * graded's durable parts in a SQLite file (through Node's built-in
 * `node:sqlite`): the embedded default, for one app or a few processes on one
 * machine. A statement SQLite
 * refuses fails with a `SqlError` naming SQLite's code and message and the
 * file (`SQLite refused the write: SQLITE_READONLY (attempt to write a
 * readonly database) on graded.db`); the connection that met it is replaced,
 * so the next statement works once the file does. It provides no `SqlClient`:
 * the connection is graded's.
 *
 * @example
 * import { Effect } from "effect"
 * import { Proposal } from "@graded/core"
 * import { Sql } from "@graded/sql"
 * const pending = Proposal.list({ status: "pending" }).pipe(Effect.provide(Sql.sqlite({ filename: "graded.db" })))
 *
 * @since 0.1.0
 * @category layers
 */
export const sqlite = (
  options: SqliteOptions
): Layer.Layer<Provided, SqlError | MigrationError> =>
  Invocation.seal(layer.pipe(Layer.provide(sqliteClient.layer(options.filename, { synchronous: options.synchronous }))))

/**
 * Where `Sql.postgres` connects.
 *
 * @since 0.1.0
 * @category models
 */
export interface PostgresOptions {
  /** `postgres://user:password@host:port/database`. */
  readonly url: string | Redacted.Redacted
  /** The pool's size (default 10). */
  readonly maxConnections?: number | undefined
  /** Shown in `pg_stat_activity` (default `graded`). */
  readonly applicationName?: string | undefined
  /**
   * How long a start keeps trying to connect and migrate while the server
   * does not answer (default 60 seconds): it tries again after 100 ms, then
   * twice as long each time, up to 5 s between tries, logging each failed
   * try; past it, the layer fails with `Sql.Unavailable`.
   *
   * @since 0.2.0
   */
  readonly connectTimeout?: Duration.Input | undefined
}

/**
 * How long `Sql.postgres` keeps trying to connect at start when no
 * `connectTimeout` is given: 60 seconds.
 *
 * @since 0.2.0
 * @category constructors
 */
export const defaultConnectTimeout: Duration.Duration = Duration.seconds(60)

/**
 * `Sql.postgres` did not come up within its `connectTimeout`: the server at
 * `host` did not answer (`stage: "connect"`), or answered and then failed a
 * statement of the migration (`stage: "migrate"`), on every try. `reason` is
 * the last one PostgreSQL or the network gave (`connect ECONNREFUSED
 * 10.0.0.5:5432`, `the database system is starting up (SQLSTATE 57P03)`);
 * `host` never holds the user or the password.
 *
 * @since 0.2.0
 * @category errors
 */
export class Unavailable extends Schema.TaggedError<Unavailable>()("@graded/sql/Sql/Unavailable", {
  host: Schema.String,
  stage: Schema.Literals(["connect", "migrate"]),
  reason: Schema.String,
  tries: Schema.Number,
  millis: Schema.Number
}) {
  override get message(): string {
    return `Could not ${this.stage === "connect" ? "connect to" : "migrate"} PostgreSQL at ${this.host} in ${
      Math.round(this.millis / 100) / 10
    } s (${this.tries} ${this.tries === 1 ? "try" : "tries"}): ${this.reason}`
  }
}

/**
 * A package graded needs for what the app asked was not there, or did not
 * load: `Sql.postgres` needs @effect/sql-pg, an optional peer of @graded/sql
 * that an app on SQLite alone does not install. `reason` is "it is not
 * installed", or the import's own error.
 *
 * @since 0.4.0
 * @category errors
 */
export class MissingPackage extends Schema.TaggedError<MissingPackage>()("@graded/sql/Sql/MissingPackage", {
  package: Schema.String,
  needed: Schema.String,
  reason: Schema.String
}) {
  override get message(): string {
    return `${this.needed} needs ${this.package}, and ${this.reason}: add it to the app (npm install ${this.package})`
  }
}

/**
 * graded's durable parts in PostgreSQL (through @effect/sql-pg): for many
 * processes, on many machines, sharing one queue of proposals and one audit.
 * A start while the server does not answer (it is restarting, its container
 * is still coming up) tries again, with growing waits, for up to
 * `connectTimeout`, logging each failed try, then fails with
 * `Sql.Unavailable`. It provides no `SqlClient`: the pool is graded's.
 * @effect/sql-pg is an optional peer, loaded when this layer is built: where
 * it is not installed, the layer fails with `Sql.MissingPackage`.
 *
 * @example
 * import { Effect, Redacted } from "effect"
 * import { Proposal } from "@graded/core"
 * import { Sql } from "@graded/sql"
 * const durable = Sql.postgres({ url: Redacted.make("postgres://graded@db.internal/graded") })
 * const recovered = Proposal.recover.pipe(Effect.provide(durable))
 *
 * @since 0.1.0
 * @category layers
 */
export const postgres = (
  options: PostgresOptions
): Layer.Layer<Provided, Unavailable | MissingPackage | MigrationError> =>
  Invocation.seal(postgresClient.layer(
    {
      url: Redacted.isRedacted(options.url) ? options.url : Redacted.make(options.url),
      maxConnections: options.maxConnections,
      applicationName: options.applicationName ?? "graded",
      connectTimeout: options.connectTimeout ?? defaultConnectTimeout
    },
    layer,
    (failure) => new Unavailable(failure),
    (reason) => new MissingPackage({ package: postgresClient.driver, needed: "Sql.postgres", reason })
  ))

// Sealed where they are made (Invocation.seal): each is shared by every
// fiber, and a tool's code that finds one must not rewrite it in place.
Invocation.seal(layer)
