/**
 * The policy's `Fallback.Store` on a database, beside the proposals: quota
 * counters in `graded_fallback_quota`, the review queue in
 * `graded_review_cases`, guideline drafts in `graded_guideline_drafts`. It
 * behaves as `Fallback.memory` does, call for call, across restarts and
 * across processes:
 *
 * 1. `take` counts a run against both quotas and queues its case in one
 *    transaction, the quota rows locked (SQLite: one writer at a time;
 *    PostgreSQL: `SELECT ... FOR UPDATE`): of processes racing for the last
 *    slot, exactly one gets it.
 * 2. A case leaves `pending`, a draft leaves `draft`, by one conditional
 *    UPDATE: the first decision stands, the others fail with
 *    `Fallback.AlreadyDecided` naming who decided and when.
 * 3. The guards (a human from the invocation context, valid drafts, audit)
 *    are `Fallback.makeStore`'s, the same as in memory.
 *
 * Ids are `c-<row number>` and `d-<row number>`. `Sql.sqlite`, `Sql.postgres`
 * and `Sql.layer` migrate the tables; `beside` adds this store to one of them.
 *
 * Imported from `@graded/sql/SqlFallbackStore`, not from the package's index:
 * it needs @graded/policy, an optional peer of @graded/sql that an app without
 * a fallback does not install.
 *
 * @since 0.1.0
 */
import { type Effect, Layer } from "effect"
import type * as SqlClient from "effect/sql/SqlClient"
import { Invocation } from "@graded/core"
import { Fallback } from "@graded/policy"
import * as database from "./internal/database.js"
import * as internal from "./internal/fallbackStore.js"

/**
 * Makes the store on the `SqlClient` in context, whose database already holds
 * the tables (`SqlMigrations.run`).
 *
 * @since 0.1.0
 * @category constructors
 */
export const make: Effect.Effect<Fallback.Store.Service, never, SqlClient.SqlClient> = internal.store

/**
 * The store as a layer on the `SqlClient` in context; it does not migrate
 * (`Sql.layer` does both).
 *
 * @example
 * import { PgClient } from "@effect/sql-pg"
 * import { Layer, Redacted } from "effect"
 * import * as SqlFallbackStore from "@graded/sql/SqlFallbackStore"
 * // A PgClient of your own, on a database SqlMigrations.run has migrated:
 * const store = SqlFallbackStore.layer.pipe(
 *   Layer.provide(PgClient.layer({ url: Redacted.make("postgres://graded@db.internal/graded") }))
 * )
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<Fallback.Store, never, SqlClient.SqlClient> = Invocation.freshLayer(
  Fallback.Store,
  () => internal.store
)

/**
 * `sql` (`Sql.sqlite`, `Sql.postgres` or `Sql.layer`) with this store on its
 * database, beside the proposals.
 *
 * @example
 * import { Sql } from "@graded/sql"
 * import * as SqlFallbackStore from "@graded/sql/SqlFallbackStore"
 * const durable = SqlFallbackStore.beside(Sql.sqlite({ filename: "graded.db" }))
 *
 * @since 0.1.0
 * @category layers
 */
export const beside = <A, E, R>(
  sql: Layer.Layer<A | database.GradedDatabase, E, R>
): Layer.Layer<A | database.GradedDatabase | Fallback.Store, E, R> => onDatabase.pipe(Layer.provideMerge(sql))

// The store on graded's database, through its token.
const onDatabase: Layer.Layer<Fallback.Store, never, database.GradedDatabase> = Invocation.freshLayer(
  Fallback.Store,
  () => database.use(internal.store)
)

// Sealed where they are made (Invocation.seal): each is shared by every
// fiber, and a tool's code that finds one must not rewrite it in place.
Invocation.seal(make)
Invocation.seal(layer)
Invocation.seal(onDatabase)
