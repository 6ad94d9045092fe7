// The SqlClient behind `Sql.sqlite`'s or `Sql.postgres`'s GradedDatabase:
// the tests look at (and break) graded's tables with the stores' own client,
// which the layers keep from the app.
import * as SqlClient from "effect/sql/SqlClient"
import { type Context, Effect } from "effect"
import * as Database from "../src/internal/database.js"

export const storeClient = (context: Context.Context<Database.GradedDatabase>): SqlClient.SqlClient =>
  Effect.runSync(Effect.provide(Database.use(SqlClient.SqlClient), context))

export type GradedDatabase = Database.GradedDatabase

/** The same client, from the GradedDatabase in context. */
export const currentStoreClient: Effect.Effect<SqlClient.SqlClient, never, GradedDatabase> = Database.use(
  SqlClient.SqlClient
)
