/**
 * graded's tables, made and kept up to date with effect/sql's `Migrator`:
 * one schema for SQLite and PostgreSQL (`graded_proposals`,
 * `graded_audit`). Migrations that ran are recorded in their own table,
 * `graded_migrations`, so they never mix with your app's own migrations
 * (`effect_sql_migrations`) in the same database.
 *
 * Several processes may start on one database at once: on PostgreSQL the
 * Migrator locks its table, and a start that lost the race to create it tries
 * again; on SQLite each start takes the file's write lock in turn, waiting
 * for it without blocking the process.
 *
 * @since 0.1.0
 */
import { Effect, Schedule } from "effect"
import * as Migrator from "effect/sql/Migrator"
import type * as SqlClient from "effect/sql/SqlClient"
import type { SqlError } from "effect/sql/SqlError"
import { migrations } from "./internal/migrations.js"

/**
 * The table that records which of graded's migrations ran.
 *
 * @since 0.1.0
 * @category constructors
 */
export const table = "graded_migrations"

/**
 * graded's migrations, in order, for `Migrator` (ids from 1, never edited once
 * released; a change is a new migration).
 *
 * @since 0.1.0
 * @category constructors
 */
export const loader: Migrator.Loader = Migrator.fromRecord(migrations)

/**
 * Runs the migrations the database has not run yet, and returns them (`[]`
 * when it is up to date).
 *
 * @example
 * import { PgClient } from "@effect/sql-pg"
 * import { Effect, Redacted } from "effect"
 * import { SqlMigrations } from "@graded/sql"
 * const migrated = SqlMigrations.run.pipe(
 *   Effect.provide(PgClient.layer({ url: Redacted.make("postgres://graded@db.internal/graded") }))
 * )
 *
 * @since 0.1.0
 * @category constructors
 */
export const run: Effect.Effect<
  ReadonlyArray<readonly [id: number, name: string]>,
  Migrator.MigrationError | SqlError,
  SqlClient.SqlClient
> = Effect.suspend(() =>
  // Made for each run: `Effect.retry` and the Migrator keep what they run in
  // closures, beyond sealing, and every build of graded's layers runs this.
  Migrator.make({})({ loader, table }).pipe(
    // Two processes starting at once on a new PostgreSQL database may both try
    // to create the Migrator's table; the one that loses sees it on its next try.
    Effect.retry({
      while: (error) => error._tag === "SqlError",
      times: 3,
      schedule: Schedule.exponential("50 millis").pipe(Schedule.jittered)
    })
  )
)
