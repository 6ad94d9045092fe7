// One transaction of graded's database, as the stores offer it to core
// (`withTransaction`): a run's save, the proposals it makes and the audit
// entries of the step commit together or not at all. Inside one, the audit
// sink fails the step rather than drop its entry: a transition whose entry
// cannot be written does not happen.
// Who may import this: the stores (proposalStore.ts, runStore.ts) and the sink (audit.ts).
import type * as SqlClient from "@effect/sql/SqlClient"
import { SqlError } from "@effect/sql/SqlError"
import { Effect, FiberRef } from "effect"

/** Whether the current fiber writes inside a transaction graded began. */
export const inTransaction: FiberRef.FiberRef<boolean> = FiberRef.unsafeMake(false)

/**
 * Whether the transaction begun in this fiber must be on disk when it
 * commits, whatever the database's setting for others: a delivery's record,
 * which must outlive a power loss before the tool runs. SQLite syncs it (and
 * so everything before it) with `synchronous = FULL`.
 */
export const durableCommit: FiberRef.FiberRef<boolean> = FiberRef.unsafeMake(false)

/** `self` as one transaction whose commit is on disk before it returns. */
export const durably = (sql: SqlClient.SqlClient) => <A, E, R>(self: Effect.Effect<A, E, R>) =>
  Effect.locally(transactional(sql)(self), durableCommit, true)

export const transactional = (sql: SqlClient.SqlClient) => <A, E, R>(self: Effect.Effect<A, E, R>) =>
  sql.withTransaction(Effect.locally(self, inTransaction, true)).pipe(
    // Beginning or committing failed: the database's answer, a defect of the step.
    Effect.catchIf((error): error is SqlError => error instanceof SqlError, (error) => Effect.die(error))
  ) as Effect.Effect<A, E, R>
