// One transaction of graded's database, as the stores offer it to core
// (`withTransaction`): a run's save, the proposals it makes and the audit
// entries of the step commit together or not at all. Inside one, the audit
// sink fails the step rather than drop its entry: a transition whose entry
// cannot be written does not happen.
// The step's audit rows wait on the transaction and go in one statement just
// before it commits: a step writes several entries, and a statement costs
// more than a row.
// Who may import this: the stores (proposalStore.ts, runStore.ts) and the sink (audit.ts).
import { Context, Effect } from "effect"
import type * as SqlClient from "effect/sql/SqlClient"
import { isSqlError, type SqlError } from "effect/sql/SqlError"
import { Invocation } from "@graded/core"

/** A transaction graded began in this fiber: its database and the audit rows it will write. */
export interface Open {
  readonly sql: SqlClient.SqlClient
  readonly rows: Array<ReadonlyArray<unknown>>
  /** Writes `rows` (one statement): set by the audit sink of the same database. */
  flush?: ((rows: ReadonlyArray<ReadonlyArray<unknown>>) => Effect.Effect<void, unknown>) | undefined
}

/** The transaction the current fiber writes inside, if graded began one. */
export const currentTransaction: Context.Reference<Open | undefined> = Context.Reference<Open | undefined>(
  "@graded/sql/internal/transaction/currentTransaction",
  { defaultValue: () => undefined }
)

/**
 * Whether the transaction begun in this fiber must be on disk when it
 * commits, whatever the database's setting for others: a delivery's record,
 * which must outlive a power loss before the tool runs. SQLite syncs it (and
 * so everything before it) with `synchronous = FULL`.
 */
export const durableCommit: Context.Reference<boolean> = Context.Reference<boolean>(
  "@graded/sql/internal/transaction/durableCommit",
  { defaultValue: () => false }
)

/** `self` as one transaction whose commit is on disk before it returns. */
export const durably = (sql: SqlClient.SqlClient) => <A, E, R>(self: Effect.Effect<A, E, R>) =>
  Effect.provideService(transactional(sql)(self), durableCommit, true)

// The audit rows written before the transaction commits.
const flushed = (open: Open) =>
  Effect.suspend(() => {
    const rows = open.rows.splice(0)
    return rows.length === 0 || open.flush === undefined ? Effect.void : Effect.orDie(open.flush(rows))
  })

export const transactional = (sql: SqlClient.SqlClient) => <A, E, R>(self: Effect.Effect<A, E, R>) =>
  Effect.flatMap(currentTransaction, (outer) => {
    // Nested in one of this database's: a savepoint, whose rows the outer
    // transaction writes (and forgets if the savepoint rolls back).
    if (outer !== undefined && outer.sql === sql) {
      const mark = outer.rows.length
      return sql.withTransaction(self).pipe(
        Effect.onError(() => Effect.sync(() => outer.rows.splice(mark)))
      )
    }
    const open: Open = { sql, rows: [] }
    return sql.withTransaction(
      Effect.provideService(Effect.tap(self, () => flushed(open)), currentTransaction, open)
    )
  }).pipe(
    // Beginning or committing failed: the database's answer, a defect of the step.
    Effect.catchIf((error): error is SqlError => isSqlError(error), (error) => Effect.die(error))
  ) as Effect.Effect<A, E, R>

// Sealed where they are made (Invocation.seal): each is shared by every
// fiber, and a tool's code that finds one must not rewrite it in place.
Invocation.seal(currentTransaction)
Invocation.seal(durableCommit)
