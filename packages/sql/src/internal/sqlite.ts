// The SQLite client graded's layer opens on a file: @effect/sql-libsql
// (prebuilt for Node, no compiler) on a libsql client of our own making, in
// WAL mode, so readers do not wait for a writer.
//
// SQLite lets one connection write a file at a time; a statement that finds
// it locked by another connection (another process, or another pool in this
// one) fails at once with SQLITE_BUSY, having done nothing. Two things make
// that safe here:
// - libsql (0.4 and 0.5 alike) leaves the failed statement open, and the
//   connection then holds the file's lock and never commits again: every
//   write it makes afterwards is lost, and every other connection is locked
//   out. After SQLITE_BUSY the connection is closed and a new one opened,
//   before any other statement runs.
// - The statement is tried again after a short wait, growing to 100 ms, for up
//   to 10 seconds: a timer, not SQLite's busy timeout, which would block the
//   whole Node process (every fiber, every request) while it waits. This holds
//   for BEGIN too, which @effect/sql-libsql 0.42 must never see fail: when it
//   does, the client's connection permit is not given back and every later
//   statement waits forever.
// This sits below Effect, inside the Promise-based client @effect/sql-libsql
// drives, which is why it waits with a timer rather than the Effect Clock.
// Who may import this: Sql.ts only.
import * as Reactivity from "@effect/experimental/Reactivity"
import { LibsqlClient } from "@effect/sql-libsql"
import { SqlClient } from "@effect/sql/SqlClient"
import { SqlError } from "@effect/sql/SqlError"
import { type Client, createClient, type TransactionMode } from "@libsql/client"
import { Context, Effect, Layer } from "effect"
import * as path from "node:path"
import { pathToFileURL } from "node:url"

const busyWaitMillis = 10_000

// A statement that returns rows fails, while reading them, with a bare Error
// whose message is SQLite's for SQLITE_BUSY; the others carry the code.
const isBusy = (error: unknown): boolean =>
  typeof error === "object" && error !== null && (
    ("code" in error && typeof error.code === "string" && error.code.startsWith("SQLITE_BUSY")) ||
    (error instanceof Error && error.message === "database is locked")
  )

const pause = (millis: number) => new Promise((resolve) => setTimeout(resolve, millis))

const patient = (url: string): Client => {
  let current = createClient({ url })
  // One statement at a time, each with its retries: between a statement
  // failing with SQLITE_BUSY and its connection being replaced, no other
  // statement may run on that connection (its writes would look done and
  // then be lost). Statements run synchronously in libsql anyway, so this
  // takes no parallelism away.
  let queue: Promise<unknown> = Promise.resolve()
  const attempt = <A>(run: (client: Client) => Promise<A>): Promise<A> => {
    const result = queue.then(async () => {
      const deadline = Date.now() + busyWaitMillis
      for (let wait = 2;; wait = Math.min(wait * 2, 100)) {
        const client = current
        try {
          return await run(client)
        } catch (error) {
          if (!isBusy(error) || Date.now() > deadline) throw error
          // Closed first: should opening fail, later statements fail too
          // rather than run on the connection that lost its writes.
          client.close()
          current = createClient({ url })
          // Jittered, so processes that met once do not meet again.
          await pause(wait * (0.5 + Math.random()))
        }
      }
    })
    queue = result.then(() => undefined, () => undefined)
    return result
  }
  return {
    execute: (statement) => attempt((client) => client.execute(statement)),
    batch: (statements, mode) => attempt((client) => client.batch(statements, mode)),
    migrate: (statements) => attempt((client) => client.migrate(statements)),
    transaction: (mode?: TransactionMode) => attempt((client) => client.transaction(mode)),
    executeMultiple: (sql) => attempt((client) => client.executeMultiple(sql)),
    sync: () => current.sync(),
    close: () => current.close(),
    get closed() {
      return current.closed
    },
    get protocol() {
      return current.protocol
    }
  }
}

export const layer = (filename: string): Layer.Layer<SqlClient, SqlError> =>
  Layer.scopedContext(Effect.gen(function*() {
    const sdk = yield* Effect.acquireRelease(
      // The client opens the file as it is made, and throws when it cannot.
      Effect.try({
        try: () => patient(pathToFileURL(path.resolve(filename)).href),
        catch: (cause) => new SqlError({ cause, message: `Could not open the SQLite database ${filename}` })
      }),
      (sdk) => Effect.sync(() => sdk.close())
    )
    const client = yield* LibsqlClient.make({ liveClient: sdk })
    yield* client`PRAGMA journal_mode = WAL`
    return Context.make(SqlClient, client)
  })).pipe(Layer.provide(Reactivity.layer))
