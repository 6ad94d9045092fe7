// The SQLite client graded's layer opens on a file: an @effect/sql SqlClient
// of our own (on SqlClient.make, as @effect/sql-libsql's is) over libsql's
// native binding (prebuilt for Node, no compiler), in WAL mode, so readers do
// not wait for a writer. Our own rather than @effect/sql-libsql's: its errors
// say only "Failed to execute statement", SQLite's reason left in the cause,
// where ours name SQLite's code and message and the file ("SQLite refused the
// write: SQLITE_READONLY (attempt to write a readonly database) on
// graded.db"); a BEGIN that fails there (0.42) keeps the client's permit, so
// every later statement waits forever, where ours gives it back; and its
// client (@libsql/client) opens a new connection after every transaction and
// prepares every statement again, which cost a durable run most of its time.
//
// One connection, whose prepared statements are kept; one statement or one
// transaction on it at a time (the permit below). SQLite lets one connection
// write a file at a time; a statement that finds it locked by another
// connection (another process) fails at once with SQLITE_BUSY, having done
// nothing. And a connection keeps what it met when it was opened. So:
// - After a statement fails outside a transaction, the connection is closed
//   before any other statement runs on it, and the next statement opens a new
//   one. libsql leaves a statement that failed with SQLITE_BUSY open, and the
//   connection then holds the file's lock and never commits again: every write
//   it makes afterwards is lost, and every other connection is locked out. A
//   connection opened while the file could not be written (made read-only, a
//   full or failing disk) stays read-only once it can be, and fails every
//   write with SQLITE_READONLY until it is closed. Inside a transaction a
//   failed statement is the transaction's to handle (SQLite undid only that
//   statement); the connection is closed when the transaction ends.
// - A statement that met SQLITE_BUSY is tried again after a short wait,
//   growing to 100 ms, for up to 10 seconds: a timer, not SQLite's busy
//   timeout, which would block the whole Node process (every fiber, every
//   request) while it waits. BEGIN too. libsql runs a statement synchronously,
//   so a statement that does not wait costs no promise.
// Who may import this: Sql.ts only.
import * as Reactivity from "@effect/experimental/Reactivity"
import * as SqlClient from "@effect/sql/SqlClient"
import type { Connection } from "@effect/sql/SqlConnection"
import { SqlError } from "@effect/sql/SqlError"
import * as Statement from "@effect/sql/Statement"
import { Context, Effect, Exit, FiberRef, Layer, Option, Scope, Stream } from "effect"
import Database from "libsql"
import * as path from "node:path"
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

/**
 * How commits reach the disk (SQLite's `synchronous`, in WAL mode). `normal`:
 * a commit survives the process being killed at once, and survives a power
 * loss once a later commit is synced (a delivery's record always is: its
 * commit syncs it and everything before it); `full`: every commit is synced.
 */
export type Synchronous = "normal" | "full"

type Rows = ReadonlyArray<any>
type Shape = "objects" | "arrays"

// What SQLite takes for a parameter, as @libsql/client converted it.
const bindable = (value: unknown): unknown => {
  if (typeof value === "boolean") return value ? 1 : 0
  if (value instanceof Date) return value.valueOf()
  if (value instanceof ArrayBuffer) return Buffer.from(value)
  if (value === undefined) throw new TypeError("undefined cannot be passed as argument to the database")
  return value
}

// A prepared statement and whether it returns rows.
interface Prepared {
  readonly statement: Database.Statement
  readonly reader: boolean
}
const cacheSize = 256

// The file's one connection (opened again after a failure, see above).
const native = (filename: string, synchronous: Synchronous) => {
  const setting = synchronous === "full" ? "FULL" : "NORMAL"
  let current: Database.Database | undefined
  let prepared = new Map<string, Prepared>()
  let closed = false
  // Whether a transaction is open, and whether a statement in it failed.
  let inTransaction = false
  let failedInTransaction = false
  let durable = false

  const connection = (): Database.Database => {
    if (closed) throw new Error("The SQLite client is closed")
    if (current === undefined) {
      const db = new Database(filename)
      try {
        db.exec(`PRAGMA synchronous = ${setting}`)
      } catch (error) {
        db.close()
        throw error
      }
      current = db
    }
    return current
  }
  const drop = () => {
    const db = current
    current = undefined
    prepared = new Map()
    inTransaction = false
    try {
      db?.close()
    } catch {
      // Closing is best effort: the connection is not used again.
    }
  }
  const prepare = (sql: string, shape: Shape): Prepared => {
    const key = shape === "arrays" ? `arrays:${sql}` : sql
    let found = prepared.get(key)
    if (found === undefined) {
      const statement = connection().prepare(sql)
      const reader = statement.reader
      if (reader && shape === "arrays") statement.raw(true)
      found = { statement, reader }
      if (prepared.size >= cacheSize) prepared.delete(prepared.keys().next().value!)
      prepared.set(key, found)
    }
    return found
  }
  const once = (sql: string, params: ReadonlyArray<unknown>, shape: Shape): Rows => {
    const { reader, statement } = prepare(sql, shape)
    const args = params.map(bindable)
    if (reader) return statement.all(args)
    statement.run(args)
    return []
  }
  // Outside a transaction: a failure closes the connection; SQLITE_BUSY is
  // waited out (above). Synchronous unless it waits.
  const patiently = <A>(run: () => A): A | Promise<A> => {
    const attempt = (): A => {
      try {
        return run()
      } catch (error) {
        drop()
        throw error
      }
    }
    try {
      return attempt()
    } catch (error) {
      if (!isBusy(error)) throw error
      return (async () => {
        const deadline = Date.now() + busyWaitMillis
        for (let wait = 2;; wait = Math.min(wait * 2, 100)) {
          // Jittered, so processes that met once do not meet again.
          await pause(wait * (0.5 + Math.random()))
          try {
            return attempt()
          } catch (again) {
            if (!isBusy(again) || Date.now() > deadline) throw again
          }
        }
      })()
    }
  }
  return {
    execute: (sql: string, params: ReadonlyArray<unknown>, shape: Shape): Rows | Promise<Rows> => {
      if (!inTransaction) return patiently(() => once(sql, params, shape))
      try {
        return once(sql, params, shape)
      } catch (error) {
        failedInTransaction = true
        throw error
      }
    },
    // A durable transaction's commit is synced (FULL) whatever the setting:
    // SQLite takes no change of it inside a transaction, so it is set before.
    begin: (syncedCommit: boolean): void | Promise<void> =>
      patiently(() => {
        const db = connection()
        if (syncedCommit && synchronous !== "full") db.exec("PRAGMA synchronous = FULL")
        durable = syncedCommit
        db.exec("BEGIN IMMEDIATE")
        inTransaction = true
        failedInTransaction = false
      }),
    end: (how: "COMMIT" | "ROLLBACK"): void => {
      try {
        connection().exec(how)
        inTransaction = false
        if (failedInTransaction) drop()
        else if (durable && synchronous !== "full") connection().exec(`PRAGMA synchronous = ${setting}`)
      } catch (error) {
        // A transaction that could not end is ended by closing its connection.
        drop()
        throw error
      } finally {
        durable = false
      }
    },
    close: () => {
      closed = true
      drop()
    }
  }
}
type Native = ReturnType<typeof native>

const make = (filename: string, sdk: Native) =>
  Effect.gen(function*() {
    const spanAttributes: ReadonlyArray<readonly [string, unknown]> = [["db.system.name", "sqlite"]]
    const attempt = <A>(action: (sql: string) => string, sql: string, run: () => A | Promise<A>) =>
      Effect.suspend(() => {
        try {
          const result = run()
          return result instanceof Promise
            ? Effect.tryPromise({ try: () => result, catch: refused(filename, action(sql)) })
            : Effect.succeed(result)
        } catch (error) {
          return Effect.fail(refused(filename, action(sql))(error))
        }
      })
    const execute = (sql: string, params: ReadonlyArray<unknown>, shape: Shape) =>
      attempt(what, sql, () => sdk.execute(sql, params, shape))
    const rows = (
      sql: string,
      params: ReadonlyArray<unknown>,
      transformRows: (<A extends object>(row: ReadonlyArray<A>) => ReadonlyArray<A>) | undefined
    ) => Effect.map(execute(sql, params, "objects"), (rows) => transformRows === undefined ? rows : transformRows(rows))
    const conn: Connection = {
      execute: rows,
      executeRaw: (sql, params) => execute(sql, params, "objects"),
      executeValues: (sql, params) => execute(sql, params, "arrays"),
      executeUnprepared: rows,
      executeStream: () => Stream.dieMessage("SQLite: streaming a statement's rows is not supported")
    }
    // One statement or one transaction at a time on the connection: a
    // transaction holds the permit from BEGIN to its end, a statement
    // outside one while it runs.
    const semaphore = yield* Effect.makeSemaphore(1)
    const permit = Effect.acquireRelease(semaphore.take(1), () => semaphore.release(1))
    const end = (how: "COMMIT" | "ROLLBACK") => attempt(() => `the ${how.toLowerCase()}`, how, () => sdk.end(how))
    const withTransaction = SqlClient.makeWithTransaction({
      transactionTag: InTransaction,
      spanAttributes,
      acquireConnection: Effect.uninterruptibleMask((restore) =>
        Effect.gen(function*() {
          const scope = yield* Scope.make()
          yield* restore(Scope.extend(permit, scope))
          const durable = yield* FiberRef.get(durableCommit)
          // A BEGIN that failed gives the permit back, so the client stays usable.
          yield* attempt(() => "to begin a transaction", "BEGIN", () => sdk.begin(durable)).pipe(
            Effect.onError(() => Scope.close(scope, Exit.void))
          )
          return [scope, conn] as const
        })
      ),
      // BEGIN ran as the transaction was taken.
      begin: () => Effect.void,
      savepoint: (conn, id) => conn.executeRaw(`SAVEPOINT effect_sql_${id};`, []),
      commit: () => end("COMMIT"),
      rollback: () => end("ROLLBACK"),
      rollbackSavepoint: (conn, id) => conn.executeRaw(`ROLLBACK TO SAVEPOINT effect_sql_${id};`, [])
    })
    const acquirer = Effect.flatMap(
      Effect.serviceOption(InTransaction),
      Option.match({
        onNone: () => Effect.as(permit, conn),
        onSome: ([conn]) => Effect.succeed(conn)
      })
    )
    const client = yield* SqlClient.make({ acquirer, compiler: Statement.makeCompilerSqlite(), spanAttributes })
    return Object.assign(client, { withTransaction })
  })

const InTransaction = Context.GenericTag<readonly [Connection, counter: number]>(
  "@graded/sql/internal/sqlite/InTransaction"
)

export const layer = (
  filename: string,
  synchronous: Synchronous = "normal"
): Layer.Layer<SqlClient.SqlClient, SqlError> =>
  Layer.scopedContext(Effect.gen(function*() {
    const sdk = yield* Effect.acquireRelease(
      Effect.tryPromise({
        try: async () => {
          const sdk = native(path.resolve(filename), synchronous)
          // Opened at once: a file that cannot be opened fails the layer.
          await sdk.execute("SELECT 1", [], "arrays")
          return sdk
        },
        catch: (cause) =>
          new SqlError({ cause, message: `Could not open the SQLite database ${filename}: ${reasonOf(cause)}` })
      }),
      (sdk) => Effect.sync(() => sdk.close())
    )
    const client = yield* make(filename, sdk)
    yield* client`PRAGMA journal_mode = WAL`
    return Context.make(SqlClient.SqlClient, client)
  })).pipe(Layer.provide(Reactivity.layer))
