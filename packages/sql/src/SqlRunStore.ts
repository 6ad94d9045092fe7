/**
 * graded's `RunStore` on a database: supervised runs keep their state in the
 * table `graded_runs`, so `Runs.resume` goes on after a restart, in any
 * process that shares the database. It behaves as `RunStore.memory` does:
 *
 * 1. `claim` takes a waiting run, or a running one whose lease has passed,
 *    with one conditional UPDATE: of two processes, one gets the run, the
 *    other `RunStore.RunBusy`.
 * 2. `save` replaces a run only at the version it was read at; a process that
 *    lost the run (its lease passed and another took it) saves nothing.
 * 3. A run's state is one JSON document, decoded with `RunStore.State` when
 *    read: a row that does not decode is a defect, never trusted.
 *
 * The table comes from `SqlMigrations`; `Sql.sqlite` and `Sql.postgres`
 * provide this store.
 *
 * @since 0.1.0
 */
import type { Effect, Layer } from "effect"
import type * as SqlClient from "effect/sql/SqlClient"
import { RunStore, Invocation } from "@graded/core"
import * as internal from "./internal/runStore.js"

/**
 * Makes the store on the `SqlClient` in context, whose database already holds
 * the tables (`SqlMigrations.run`).
 *
 * @since 0.1.0
 * @category constructors
 */
export const make: Effect.Effect<RunStore.RunStore.Service, never, SqlClient.SqlClient> = internal.make

/**
 * The store as a layer on the `SqlClient` in context; it does not migrate
 * (`Sql.layer` does both).
 *
 * @example
 * import { Layer } from "effect"
 * import { Sql, SqlRunStore } from "@graded/sql"
 * // Sql.sqlite already provides it; on a client of your own, migrated:
 * declare const client: Layer.Layer<import("effect/sql/SqlClient").SqlClient>
 * const runs = SqlRunStore.layer.pipe(Layer.provide(client))
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<RunStore.RunStore, never, SqlClient.SqlClient> = Invocation.freshLayer(
  RunStore.RunStore,
  () => internal.make
)

// Sealed where they are made (Invocation.seal): each is shared by every
// fiber, and a tool's code that finds one must not rewrite it in place.
Invocation.seal(make)
Invocation.seal(layer)
