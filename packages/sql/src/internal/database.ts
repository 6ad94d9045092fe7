// graded's database as graded's SQL modules reach it: the SqlClient its
// stores write with, behind a token. `Sql.sqlite` and `Sql.postgres` provide
// no SqlClient: a read tool whose code asks for one (in its requirements,
// with `Effect.serviceOption`, by scanning the services it is handed) must
// not get the client that writes graded's tables. What a context holds under
// this tag is an opaque, frozen token; only this module turns it back into
// the client, for SqlAudit's reads and its outbox.
// Who may import this: Sql.ts, SqlAudit.ts and SqlFallbackStore.ts (and this package's tests,
// which look at the tables through test/storeClient.ts).
import { Context, Effect, type Layer } from "effect"
import * as SqlClient from "effect/sql/SqlClient"
import { Invocation } from "@graded/core"

/**
 * graded's database, opened by `Sql.sqlite`, `Sql.postgres`, `Sql.layer` or
 * `SqlAudit.open`: what `SqlAudit.entries` and the other reads run on.
 */
export interface Token {
  readonly _: unique symbol
}

export class GradedDatabase extends Context.Service<GradedDatabase, Token>()("@graded/sql/GradedDatabase") {}

const clients = new WeakMap<Token, SqlClient.SqlClient>()

/** The token for the `SqlClient` in context. */
export const layer: Layer.Layer<GradedDatabase, never, SqlClient.SqlClient> = Invocation.freshLayer(
  GradedDatabase,
  () =>
    Effect.map(SqlClient.SqlClient, (client) => {
      const token: Token = Object.freeze(Object.create(null))
      clients.set(token, client)
      return token
    })
)

/** `self` run on the client behind the database's token. */
export const use = <A, E, R>(
  self: Effect.Effect<A, E, R>
): Effect.Effect<A, E, Exclude<R, SqlClient.SqlClient> | GradedDatabase> =>
  Effect.flatMap(GradedDatabase, (token) => {
    const client = clients.get(token)
    // A token this module did not make (a tag rebuilt with the same key) opens nothing.
    return client === undefined
      ? Effect.die(new Error("@graded/sql: this GradedDatabase was not opened by @graded/sql"))
      : Effect.provideService(self, SqlClient.SqlClient, client)
  })

// Sealed where they are made (Invocation.seal): each is shared by every
// fiber, and a tool's code that finds one must not rewrite it in place.
Invocation.seal(GradedDatabase)
Invocation.seal(layer)
