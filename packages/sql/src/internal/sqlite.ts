// The SQLite client graded's layer opens on a file: an effect/sql SqlClient
// of our own (on SqlClient.make) over Node's built-in `node:sqlite`
// (DatabaseSync: no native addon, no compiler, no download), in WAL mode, so
// readers do not wait for a writer. Our own because the Effect 4 SQLite
// drivers on npm (@effect/sql-sqlite-node and @effect/sql-libsql, 4.0.0 betas)
// import `effect/unstable/sql/*`, which effect 4.1 no longer has; and because
// its errors name SQLite's code, message and the file ("SQLite refused the
// write: SQLITE_READONLY (attempt to write a readonly database) on graded.db"),
// where node:sqlite gives the message and a number.
//
// One connection, whose prepared statements are kept; one statement or one
// transaction on it at a time (the permit below). SQLite lets one connection
// write a file at a time; a statement that finds it locked by another
// connection (another process) fails at once with SQLITE_BUSY, having done
// nothing. And a connection keeps what it met when it was opened. So:
// - After a statement fails outside a transaction, the connection is closed
//   before any other statement runs on it, and the next statement opens a new
//   one. A connection opened while the file could not be written (made
//   read-only, a full or failing disk) stays read-only once it can be, and
//   fails every write with SQLITE_READONLY until it is closed; and a
//   statement left half-stepped by a failure must not keep the file locked.
//   Inside a transaction a failed statement is the transaction's to handle
//   (SQLite undid only that statement); the connection is closed when the
//   transaction ends.
// - SQLite makes a WAL file's companions (-shm, -wal) with the file's
//   permissions: one made while the file was read-only stays read-only once
//   the file is writable, and every connection opened after it would be
//   read-only for good (restarts too). So a new connection first gives them
//   the file's permissions back, SQLite's own rule, only ever adding some.
// - A statement that met SQLITE_BUSY outside a transaction is tried again
//   after a short wait, growing to 100 ms, for up to 10 seconds: a timer, not
//   SQLite's busy timeout, which would block the whole Node process (every
//   fiber, every request) while it waits. BEGIN too.
// node:sqlite is loaded when a file is opened, not when this module is: Node
// 22 warns that it is experimental the moment it loads, and an app on
// PostgreSQL need not hear it.
// Who may import this: Sql.ts and audit.ts (SqlAudit.open).
import { Context, Effect, Layer, Semaphore, Stream } from "effect"
import * as Reactivity from "effect/reactivity/Reactivity"
import * as SqlClient from "effect/sql/SqlClient"
import type { Connection } from "effect/sql/SqlConnection"
import { classifySqliteError, SqlError } from "effect/sql/SqlError"
import * as Statement from "effect/sql/Statement"
import * as fs from "node:fs"
import * as path from "node:path"
import type { DatabaseSync, StatementSync } from "node:sqlite"
import { Invocation } from "@graded/core"
import { durableCommit } from "./transaction.js"

const busyWaitMillis = 10_000

// SQLite's result codes by name (sqlite3.h): the primary code is the low
// byte, an extended code adds its number (from 1) in the byte above.
const primaryNames = ("OK ERROR INTERNAL PERM ABORT BUSY LOCKED NOMEM READONLY INTERRUPT IOERR CORRUPT NOTFOUND FULL " +
  "CANTOPEN PROTOCOL EMPTY SCHEMA TOOBIG CONSTRAINT MISMATCH MISUSE NOLFS AUTH FORMAT RANGE NOTADB NOTICE WARNING")
  .split(" ")
const extendedNames: Readonly<Record<number, string>> = {
  1: "MISSING_COLLSEQ RETRY SNAPSHOT",
  4: "- ROLLBACK",
  5: "RECOVERY SNAPSHOT TIMEOUT",
  6: "SHAREDCACHE VTAB",
  8: "RECOVERY CANTLOCK ROLLBACK DBMOVED CANTINIT DIRECTORY",
  10: "READ SHORT_READ WRITE FSYNC DIR_FSYNC TRUNCATE FSTAT UNLOCK RDLOCK DELETE BLOCKED NOMEM ACCESS " +
    "CHECKRESERVEDLOCK LOCK CLOSE DIR_CLOSE SHMOPEN SHMSIZE SHMLOCK SHMMAP SEEK DELETE_NOENT MMAP GETTEMPPATH " +
    "CONVPATH VNODE AUTH BEGIN_ATOMIC COMMIT_ATOMIC ROLLBACK_ATOMIC DATA CORRUPTFS IN_PAGE",
  11: "VTAB SEQUENCE INDEX",
  14: "NOTEMPDIR ISDIR FULLPATH CONVPATH DIRTYWAL SYMLINK",
  19: "CHECK COMMITHOOK FOREIGNKEY FUNCTION NOTNULL PRIMARYKEY TRIGGER UNIQUE VTAB ROWID PINNED DATATYPE",
  23: "USER",
  27: "RECOVER_WAL RECOVER_ROLLBACK",
  28: "AUTOINDEX"
}

/** A result code's name: `SQLITE_IOERR_FSYNC` for 1034. */
export const codeName = (code: number): string => {
  const primary = primaryNames[code & 0xff]
  const extended = extendedNames[code & 0xff]?.split(" ")[(code >> 8) - 1]
  if (primary === undefined) return `SQLite result code ${code}`
  return `SQLITE_${primary}${extended === undefined || extended === "-" ? "" : `_${extended}`}`
}

// node:sqlite's errors carry SQLite's (extended) result code as `errcode`.
const resultCode = (error: unknown): number | undefined =>
  typeof error === "object" && error !== null && "errcode" in error && typeof error.errcode === "number"
    ? error.errcode
    : undefined

const isBusy = (error: unknown): boolean => ((resultCode(error) ?? 0) & 0xff) === 5

/** SQLite's reason for a failure, as its code and message: `SQLITE_READONLY (attempt to write a readonly database)`. */
export const reasonOf = (error: unknown): string => {
  const text = (error instanceof Error ? error.message : String(error)).split("\n")[0] ?? ""
  const code = resultCode(error)
  return code === undefined ? text : `${codeName(code)} (${text})`
}

// What a statement was, in words, for its error.
const what = (sql: string): string =>
  /^\s*SELECT\b/i.test(sql)
    ? "the read"
    : /^\s*(INSERT|UPDATE|DELETE|REPLACE|CREATE|DROP|ALTER)\b/i.test(sql)
    ? "the write"
    : "the statement"

// A SqlError whose reason effect/sql classifies by the code (LockTimeoutError
// for SQLITE_BUSY, ConnectionError for SQLITE_CANTOPEN, ...; it reads the
// number as `errno`), whose message says it in words, and whose reason's
// cause is node:sqlite's error.
const sqlError = (cause: unknown, message: string, operation: string) => {
  const code = resultCode(cause)
  if (code !== undefined) Object.assign(cause as object, { errno: code })
  return new SqlError({ reason: classifySqliteError(cause, { message, operation }) })
}

const refused = (filename: string, action: string, operation: string) => (cause: unknown) =>
  sqlError(cause, `SQLite refused ${action}: ${reasonOf(cause)} on ${filename}`, operation)

/**
 * How commits reach the disk (SQLite's `synchronous`, in WAL mode). `normal`:
 * a commit survives the process being killed at once, and survives a power
 * loss once a later commit is synced (a delivery's record always is: its
 * commit syncs it and everything before it); `full`: every commit is synced.
 */
export type Synchronous = "normal" | "full"

type Rows = ReadonlyArray<any>
type Shape = "objects" | "arrays"

// What SQLite takes for a parameter (Node 22 binds no boolean).
const bindable = (value: unknown): any => {
  if (typeof value === "boolean") return value ? 1 : 0
  if (value instanceof Date) return value.valueOf()
  if (value instanceof ArrayBuffer) return new Uint8Array(value)
  if (value === undefined) throw new TypeError("undefined cannot be passed as argument to the database")
  return value
}

// A prepared statement and whether it returns rows.
interface Prepared {
  readonly statement: StatementSync
  readonly reader: boolean
}
const cacheSize = 256

// The -shm and -wal given the permissions the file has that they lack (above).
const companionsFollow = (filename: string) => {
  for (const companion of [`${filename}-shm`, `${filename}-wal`]) {
    try {
      const [file, own] = [fs.statSync(filename).mode & 0o777, fs.statSync(companion).mode & 0o777]
      if ((file & ~own) !== 0) fs.chmodSync(companion, own | file)
    } catch {
      // No such companion (or not ours to change): SQLite says what it meets.
    }
  }
}

// The file's one connection (opened again after a failure, see above). Every
// method runs synchronously and throws node:sqlite's error.
const native = (filename: string, synchronous: Synchronous) => {
  const { DatabaseSync } = process.getBuiltinModule("node:sqlite")
  const setting = synchronous === "full" ? "FULL" : "NORMAL"
  let current: DatabaseSync | undefined
  let prepared = new Map<string, Prepared>()
  let closed = false
  // Whether a transaction is open, whether a statement in it failed, and
  // whether its commit is synced.
  let inTransaction = false
  let failedInTransaction = false
  let durable = false

  const connection = (): DatabaseSync => {
    if (closed) throw new Error("The SQLite client is closed")
    if (current === undefined) {
      companionsFollow(filename)
      const db = new DatabaseSync(filename)
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
      const reader = statement.columns().length > 0
      if (reader && shape === "arrays") statement.setReturnArrays(true)
      found = { statement, reader }
      if (prepared.size >= cacheSize) prepared.delete(prepared.keys().next().value!)
      prepared.set(key, found)
    }
    return found
  }
  const once = (sql: string, params: ReadonlyArray<unknown>, shape: Shape): Rows => {
    const { reader, statement } = prepare(sql, shape)
    const args = params.map(bindable)
    if (reader) return statement.all(...args)
    statement.run(...args)
    return []
  }
  // Outside a transaction a failure closes the connection (see above).
  const outside = <A>(run: () => A): A => {
    try {
      return run()
    } catch (error) {
      drop()
      throw error
    }
  }
  return {
    get inTransaction() {
      return inTransaction
    },
    execute: (sql: string, params: ReadonlyArray<unknown>, shape: Shape): Rows => {
      if (!inTransaction) return outside(() => once(sql, params, shape))
      try {
        return once(sql, params, shape)
      } catch (error) {
        failedInTransaction = true
        throw error
      }
    },
    // A durable transaction's commit is synced (FULL) whatever the setting:
    // SQLite takes no change of it inside a transaction, so it is set before.
    begin: (syncedCommit: boolean): void =>
      outside(() => {
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

// A wait on a timer, not the Clock: a test's TestClock must not hold a
// statement that waits for another process's lock.
const pause = (millis: number) =>
  Effect.callback<void>((resume) => {
    const timer = setTimeout(() => resume(Effect.void), millis)
    return Effect.sync(() => clearTimeout(timer))
  })

// `run` once; outside a transaction, SQLITE_BUSY is waited out (above).
const attempt = <A>(run: () => A, patient: boolean, error: (cause: unknown) => SqlError): Effect.Effect<A, SqlError> =>
  Effect.suspend(() => {
    const deadline = Date.now() + busyWaitMillis
    const loop = (wait: number): Effect.Effect<A, SqlError> => {
      try {
        return Effect.succeed(run())
      } catch (cause) {
        if (!patient || !isBusy(cause) || Date.now() > deadline) return Effect.fail(error(cause))
        // Jittered, so processes that met once do not meet again.
        return Effect.andThen(pause(wait * (0.5 + Math.random())), Effect.suspend(() => loop(Math.min(wait * 2, 100))))
      }
    }
    return loop(2)
  })

let clients = 0

const make = (filename: string, sdk: Native) =>
  Effect.gen(function*() {
    const spanAttributes: ReadonlyArray<readonly [string, unknown]> = [["db.system.name", "sqlite"]]
    const execute = (sql: string, params: ReadonlyArray<unknown>, shape: Shape) =>
      Effect.suspend(() =>
        attempt(() => sdk.execute(sql, params, shape), !sdk.inTransaction, refused(filename, what(sql), "execute"))
      )
    const rows = (
      sql: string,
      params: ReadonlyArray<unknown>,
      transformRows: (<A extends object>(row: ReadonlyArray<A>) => ReadonlyArray<A>) | undefined
    ) => Effect.map(execute(sql, params, "objects"), (rows) => transformRows === undefined ? rows : transformRows(rows))
    const conn: Connection = {
      execute: rows,
      executeRaw: (sql, params) => execute(sql, params, "objects"),
      executeValues: (sql, params) => execute(sql, params, "arrays"),
      executeValuesUnprepared: (sql, params) => execute(sql, params, "arrays"),
      executeUnprepared: rows,
      executeStream: () => Stream.die(new Error("SQLite: streaming a statement's rows is not supported"))
    }
    // One statement or one transaction at a time on the connection: a
    // transaction holds the permit from BEGIN to its end, a statement
    // outside one while it runs.
    const semaphore = yield* Semaphore.make(1)
    const lease = Effect.as(semaphore.takeScoped(1), conn)
    const end = (how: "COMMIT" | "ROLLBACK") =>
      attempt(() => sdk.end(how), false, refused(filename, `the ${how.toLowerCase()}`, how.toLowerCase()))
    // Each client its own: a transaction on one client is not another's.
    const transactionService = Context.Service<
      SqlClient.TransactionConnection,
      SqlClient.TransactionConnection.Service
    >(
      `@graded/sql/internal/sqlite/Transaction/${clients++}`
    )
    const withTransaction = SqlClient.makeWithTransaction({
      transactionService,
      spanAttributes,
      acquireConnection: (restore) => restore(lease),
      // A BEGIN that fails closes the transaction's scope, and so gives the permit back.
      begin: () =>
        Effect.flatMap(
          durableCommit,
          (durable) => attempt(() => sdk.begin(durable), true, refused(filename, "to begin a transaction", "begin"))
        ),
      savepoint: (conn, id) => Effect.asVoid(conn.executeRaw(`SAVEPOINT effect_sql_${id}`, [])),
      commit: () => end("COMMIT"),
      rollback: () => end("ROLLBACK"),
      rollbackSavepoint: (conn, id) => Effect.asVoid(conn.executeRaw(`ROLLBACK TO SAVEPOINT effect_sql_${id}`, []))
    })
    const client = yield* SqlClient.make({
      acquirer: lease,
      borrower: (f) => semaphore.withPermit(f(conn)),
      compiler: Statement.makeCompilerSqlite(),
      driver: "graded-sqlite",
      spanAttributes,
      transactionService
    })
    return Object.assign(client, { withTransaction })
  })

/**
 * A client on the file. `wal: false` (SqlAudit.open, which only reads) leaves
 * the file's journal as it is.
 */
export const layer = (
  filename: string,
  options: { readonly synchronous?: Synchronous | undefined; readonly wal?: boolean | undefined } = {}
): Layer.Layer<SqlClient.SqlClient, SqlError> =>
  Invocation.freshLayer(() =>
    Effect.gen(function*() {
      const sdk = yield* Effect.acquireRelease(
        Effect.sync(() => native(path.resolve(filename), options.synchronous ?? "normal")),
        (sdk) => Effect.sync(() => sdk.close())
      )
      // Opened at once (waiting out another process's lock): a file that cannot be opened fails the layer.
      yield* attempt(
        () => sdk.execute("SELECT 1", [], "arrays"),
        true,
        (cause) => sqlError(cause, `Could not open the SQLite database ${filename}: ${reasonOf(cause)}`, "connect")
      )
      const client = yield* make(filename, sdk)
      if (options.wal !== false) yield* client`PRAGMA journal_mode = WAL`
      return Context.make(SqlClient.SqlClient, client)
    }).pipe(Effect.provideServiceEffect(Reactivity.Reactivity, Reactivity.make))
  )
