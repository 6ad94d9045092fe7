/**
 * graded's `ProposalStore` on a database: proposals wait in the table
 * `graded_proposals` for a human, across restarts and across processes. It
 * behaves as `ProposalStore.memory` does, call for call, and each decision
 * still happens once when many processes share the database:
 *
 * 1. `add` keeps only records `Tool.proposal` made (`Proposal.isNew`); any other
 *    record is a defect, as in the memory store.
 * 2. `claim` and `reject` take a `pending` proposal, `renew` and `settle` an
 *    `approving` one, each with one conditional UPDATE: of two processes racing,
 *    one moves it, the other fails with `ProposalStore.AlreadyDecided` naming
 *    its state and who decided.
 * 3. `expire` settles as `failed` each approval whose lease has passed, once,
 *    whichever process runs it; a renewal in between keeps its proposal.
 * 4. `delivered`, `failed` and `rejected` are final: no call leaves them.
 *
 * Ids are `p-<row number>`. The tables come from `SqlMigrations`; `Sql.sqlite`
 * and `Sql.postgres` run them and provide this store. A statement the
 * database refuses is a defect of that call: the service's error channel
 * holds only the store's own answers.
 *
 * @since 0.1.0
 */
import type { Effect, Layer } from "effect"
import type * as SqlClient from "effect/sql/SqlClient"
import { ProposalStore, Invocation } from "@graded/core"
import * as internal from "./internal/proposalStore.js"

/**
 * Makes the store on the `SqlClient` in context, whose database already holds
 * the tables (`SqlMigrations.run`); for code that wraps the service, most apps
 * want `Sql.sqlite` or `Sql.postgres`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make: Effect.Effect<ProposalStore.ProposalStore.Service, never, SqlClient.SqlClient> = internal.make

/**
 * The store as a layer on the `SqlClient` in context; it does not migrate
 * (`Sql.layer` does both).
 *
 * @example
 * import { PgClient } from "@effect/sql-pg"
 * import { Layer, Redacted } from "effect"
 * import { SqlProposalStore } from "@graded/sql"
 * // A PgClient of your own, on a database SqlMigrations.run has migrated:
 * const store = SqlProposalStore.layer.pipe(
 *   Layer.provide(PgClient.layer({ url: Redacted.make("postgres://graded@db.internal/graded") }))
 * )
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<ProposalStore.ProposalStore, never, SqlClient.SqlClient> = Invocation.freshLayer(
  ProposalStore.ProposalStore,
  () => internal.make
)

// Sealed where they are made (Invocation.seal): each is shared by every
// fiber, and a tool's code that finds one must not rewrite it in place.
Invocation.seal(make)
Invocation.seal(layer)
