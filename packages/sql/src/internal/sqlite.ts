// The SQLite client graded's layer opens on a file: an @effect/sql SqlClient
// of our own (on SqlClient.make, as @effect/sql-libsql's is) over libsql
// (prebuilt for Node, no compiler), in WAL mode, so readers do not wait for a
// writer. Our own rather than @effect/sql-libsql's for two reasons: its errors
// say only "Failed to execute statement", SQLite's reason left in the cause,
// where ours name SQLite's code and message and the file ("SQLite refused the
// write: SQLITE_READONLY (attempt to write a readonly database) on
// graded.db"); and a BEGIN that fails there (0.42) keeps the client's permit,
// so every later statement waits forever, where ours gives it back.
//
// SQLite lets one connection write a file at a time; a statement that finds
// it locked by another connection (another process, or another pool in this
// one) fails at once with SQLITE_BUSY, having done nothing. And a connection
// keeps what it met when it was opened. So:
// - After any failure the connection is closed, before any other statement
//   runs on it, and the next statement opens a new one. libsql (0.4 and 0.5
//   alike) leaves a statement that failed with SQLITE_BUSY open, and the
//   connection then holds the file's lock and never commits again: every
//   write it makes afterwards is lost, and every other connection is locked
//   out. A connection opened while the file could not be written (made
//   read-only, a full or failing disk) stays read-only once it can be, and
//   fails every write with SQLITE_READONLY until it is closed; libsql opens
//   one after every transaction, so any statement may be the first on it.
//   Should opening fail, that statement fails, and the next tries again.
// - A statement that met SQLITE_BUSY is tried again after a short wait,
//   growing to 100 ms, for up to 10 seconds: a timer, not SQLite's busy
//   timeout, which would block the whole Node process (every fiber, every
//   request) while it waits. BEGIN too.
// This sits below Effect, inside the Promise-based libsql client, which is why
// it waits with a timer rather than the Effect Clock.
// Who may import this: Sql.ts only.
import * as Reactivity from "@effect/experimental/Reactivity"
import * as SqlClient from "@effect/sql/SqlClient"
import type { Connection } from "@effect/sql/SqlConnection"
import { SqlError } from "@effect/sql/SqlError"
import * as Statement from "@effect/sql/Statement"
import { type Client, createClient, type InValue, LibsqlError, type ResultSet, type Transaction } from "@libsql/client"
import { Context, Effect, Exit, FiberRef, Layer, Option, Scope, Stream } from "effect"
import * as path from "node:path"
import { pathToFileURL } from "node:url"
import { durableCommit } from "./transaction.js"

const busyWaitMillis = 10_000

// A statement that returns rows fails, while reading them, with a bare Error
// whose message is SQLite's for SQLITE_BUSY; the others carry the code.
const isBusy = (error: unknown): boolean =>
  typeof error === "object" && error !== null && (
    ("code" in error && typeof error.code === "string" && error.code.startsWith("SQLITE_BUSY")) ||
    (error instanceof Error && error.message === "database is locked")
  )

const pause = (millis: number) => new Promise((resolve) => setTimeout(resolve, millis))

// SQLite's primary result codes and their messages (sqlite3_errstr), for a
// file libsql could not open: it names only the number.
const primary: Readonly<Record<number, readonly [string, string]>> = {
  5: ["SQLITE_BUSY", "database is locked"],
  8: ["SQLITE_READONLY", "attempt to write a readonly database"],
  10: ["SQLITE_IOERR", "disk I/O error"],
  11: ["SQLITE_CORRUPT", "database disk image is malformed"],
  13: ["SQLITE_FULL", "database or disk is full"],
  14: ["SQLITE_CANTOPEN", "unable to open database file"],
  26: ["SQLITE_NOTADB", "file is not a database"]
}

/** SQLite's reason for a failure, as its code and message: `SQLITE_READONLY (attempt to write a readonly database)`. */
export const reasonOf = (error: unknown): string => {
  if (typeof error === "object" && error !== null && "code" in error && typeof error.code === "string" && error.code) {
    const message = error instanceof Error ? error.message : ""
    // libsql writes the code in front of SQLite's message.
    const text = message.startsWith(`${error.code}: `) ? message.slice(error.code.length + 2) : message
    return text === "" ? error.code : `${error.code} (${text.split("\n")[0]})`
  }
  if (error instanceof Error) {
    const opening = /Unable to open connection to local database .*: (\d+)"?\)?$/.exec(error.message)
    if (opening !== null) {
      const code = Number(opening[1])
      const known = primary[code & 0xff]
      return known === undefined ? `SQLite result code ${code}` : `${known[0]} (${known[1]})`
    }
    if (error.message === "database is locked") return "SQLITE_BUSY (database is locked)"
    return error.message.split("\n")[0] ?? ""
  }
  return String(error)
}

// What a statement was, in words, for its error.
const what = (sql: string): string =>
  /^\s*SELECT\b/i.test(sql)
    ? "the read"
    : /^\s*(INSERT|UPDATE|DELETE|REPLACE|CREATE|DROP|ALTER)\b/i.test(sql)
    ? "the write"
    : "the statement"

const refused = (filename: string, action: string) => (cause: unknown) =>
  new SqlError({ cause, message: `SQLite refused ${action}: ${reasonOf(cause)} on ${filename}` })

// The libsql client statements go through: one statement at a time, each
// with its retries, and a new connection after any failure (above).
interface Patient {
  readonly execute: (sql: string, args: ReadonlyArray<unknown>) => Promise<ResultSet>
  /** A write transaction; `durable`: its commit synced to disk whatever `synchronous` says. */
  readonly transaction: (durable: boolean) => Promise<Transaction>
  readonly close: () => void
}

/**
 * How commits reach the disk (SQLite's `synchronous`, in WAL mode). `normal`:
 * a commit survives the process being killed at once, and survives a power
 * loss once a later commit is synced (a delivery's record always is: its
 * commit syncs it and everything before it); `full`: every commit is synced.
 */
export type Synchronous = "normal" | "full"

const patient = (url: string, synchronous: Synchronous): Patient => {
  const setting = `PRAGMA synchronous = ${synchronous === "full" ? "FULL" : "NORMAL"}`
  // Opened at once: a file that cannot be opened fails the layer.
  let current: Client | undefined = createClient({ url })
  // Each connection libsql opens (at first, after a failure, after it hands
  // one to a transaction) is told the setting before its first statement.
  let untold = true
  let closed = false
  // One statement at a time: between a statement failing and its connection
  // being closed, no other statement may run on that connection (its writes
  // would look done and then be lost). Statements run synchronously in
  // libsql anyway, so this takes no parallelism away.
  let queue: Promise<unknown> = Promise.resolve()
  const attempt = <A>(run: (client: Client) => Promise<A>): Promise<A> => {
    const result = queue.then(async () => {
      const deadline = Date.now() + busyWaitMillis
      for (let wait = 2;; wait = Math.min(wait * 2, 100)) {
        if (closed) throw new LibsqlError("The client is closed", "CLIENT_CLOSED")
        let client: Client | undefined
        try {
          client = current ??= createClient({ url })
          if (untold) {
            await client.execute(setting)
            untold = false
          }
          return await run(client)
        } catch (error) {
          if (client !== undefined) {
            client.close()
            current = undefined
            untold = true
          }
          if (!isBusy(error) || Date.now() > deadline) throw error
          // Jittered, so processes that met once do not meet again.
          await pause(wait * (0.5 + Math.random()))
        }
      }
    })
    queue = result.then(() => undefined, () => undefined)
    return result
  }
  return {
    execute: (sql, args) => attempt((client) => client.execute({ sql, args: args as Array<InValue> })),
    // libsql hands the transaction its connection, and opens another for the
    // next statement (told the setting first). A durable one is set to FULL
    // before it begins: SQLite takes no change of it inside a transaction.
    transaction: (durable) =>
      attempt(async (client) => {
        if (durable && synchronous !== "full") await client.execute("PRAGMA synchronous = FULL")
        const tx = await client.transaction("write")
        untold = true
        return tx
      }),
    close: () => {
      closed = true
      current?.close()
      current = undefined
    }
  }
}

const connection = (
  filename: string,
  execute: (sql: string, args: ReadonlyArray<unknown>) => Promise<ResultSet>
): Connection => {
  const run = (sql: string, params: ReadonlyArray<unknown>) =>
    Effect.tryPromise({ try: () => execute(sql, params), catch: refused(filename, what(sql)) })
  const rows = (
    sql: string,
    params: ReadonlyArray<unknown>,
    transformRows: (<A extends object>(row: ReadonlyArray<A>) => ReadonlyArray<A>) | undefined
  ) => Effect.map(run(sql, params), (result) => transformRows === undefined ? result.rows : transformRows(result.rows))
  return {
    execute: rows,
    executeRaw: run,
    executeValues: (sql, params) => Effect.map(run(sql, params), (result) => result.rows.map((row) => Array.from(row))),
    executeUnprepared: rows,
    executeStream: () => Stream.dieMessage("SQLite: streaming a statement's rows is not supported")
  }
}

interface TransactionConnection extends Connection {
  readonly commit: Effect.Effect<void, SqlError>
  readonly rollback: Effect.Effect<void, SqlError>
}

const InTransaction = Context.GenericTag<readonly [TransactionConnection, counter: number]>(
  "@graded/sql/internal/sqlite/InTransaction"
)

const make = (filename: string, sdk: Patient) =>
  Effect.gen(function*() {
    const spanAttributes: ReadonlyArray<readonly [string, unknown]> = [["db.system.name", "sqlite"]]
    const outside = connection(filename, sdk.execute)
    // A transaction holds the permit from BEGIN to COMMIT or ROLLBACK; a
    // statement outside one waits for it.
    const semaphore = yield* Effect.makeSemaphore(1)
    const withTransaction = SqlClient.makeWithTransaction({
      transactionTag: InTransaction,
      spanAttributes,
      acquireConnection: Effect.uninterruptibleMask((restore) =>
        Effect.gen(function*() {
          const scope = yield* Scope.make()
          yield* restore(semaphore.take(1))
          yield* Scope.addFinalizer(scope, semaphore.release(1))
          const durable = yield* FiberRef.get(durableCommit)
          const tx = yield* Effect.tryPromise({
            try: () => sdk.transaction(durable),
            catch: refused(filename, "to begin a transaction")
          }).pipe(
            // A BEGIN that failed gives the permit back, so the client stays usable.
            Effect.onError(() => Scope.close(scope, Exit.void))
          )
          const inside: TransactionConnection = {
            ...connection(filename, (sql, args) => tx.execute({ sql, args: args as Array<InValue> })),
            commit: Effect.tryPromise({ try: () => tx.commit(), catch: refused(filename, "the commit") }),
            rollback: Effect.tryPromise({ try: () => tx.rollback(), catch: refused(filename, "the rollback") })
          }
          return [scope, inside] as const
        })
      ),
      // BEGIN ran as the transaction was taken.
      begin: () => Effect.void,
      savepoint: (conn, id) => conn.executeRaw(`SAVEPOINT effect_sql_${id};`, []),
      commit: (conn) => conn.commit,
      rollback: (conn) => conn.rollback,
      rollbackSavepoint: (conn, id) => conn.executeRaw(`ROLLBACK TO SAVEPOINT effect_sql_${id};`, [])
    })
    const acquirer = Effect.flatMap(
      Effect.serviceOption(InTransaction),
      Option.match({
        onNone: () => semaphore.withPermits(1)(Effect.succeed(outside)),
        onSome: ([conn]) => Effect.succeed<Connection>(conn)
      })
    )
    const client = yield* SqlClient.make({ acquirer, compiler: Statement.makeCompilerSqlite(), spanAttributes })
    return Object.assign(client, { withTransaction })
  })

export const layer = (
  filename: string,
  synchronous: Synchronous = "normal"
): Layer.Layer<SqlClient.SqlClient, SqlError> =>
  Layer.scopedContext(Effect.gen(function*() {
    const sdk = yield* Effect.acquireRelease(
      // The client opens the file as it is made, and throws when it cannot.
      Effect.try({
        try: () => patient(pathToFileURL(path.resolve(filename)).href, synchronous),
        catch: (cause) =>
          new SqlError({ cause, message: `Could not open the SQLite database ${filename}: ${reasonOf(cause)}` })
      }),
      (sdk) => Effect.sync(() => sdk.close())
    )
    const client = yield* make(filename, sdk)
    yield* client`PRAGMA journal_mode = WAL`
    return Context.make(SqlClient.SqlClient, client)
  })).pipe(Layer.provide(Reactivity.layer))
