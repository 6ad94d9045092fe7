// The PostgreSQL client graded's layer opens, and what it waits for at start.
//
// A process may start while its database does not answer yet (the server is
// restarting, the container beside it is still coming up). @effect/sql-pg's
// PgClient fails at once then (`PgClient: Failed to connect`), and the
// process with it. Here a start tries again instead: the pool is made and
// graded's tables migrated as one try; a try that fails with a SqlError
// (connecting, or a statement of the migration) is logged, its pool closed,
// and the next one made after a wait that doubles from 100 ms up to 5 s, with
// jitter so that processes which met once do not meet again. Once the budget
// (`connectTimeout`, 60 s unless given) would be passed by the next wait, the
// start fails with the host and the last reason PostgreSQL or the network
// gave. A failing migration itself (a defect, or the Migrator's own errors)
// is not tried again: it would fail the same way.
// @effect/sql-pg is an optional peer: it is imported here, when an app asks
// for PostgreSQL, so that an app on SQLite alone neither installs nor loads it.
// Who may import this: Sql.ts and audit.ts (SqlAudit.open).
import type * as Pg from "@effect/sql-pg"
import { Clock, Context, Duration, Effect, Exit, Layer, Random, Redacted, Scope } from "effect"
import * as Reactivity from "effect/reactivity/Reactivity"
import type { MigrationError } from "effect/sql/Migrator"
import * as SqlClient from "effect/sql/SqlClient"
import type { SqlError } from "effect/sql/SqlError"
import { Invocation } from "@graded/core"

/** The package `Sql.postgres` and `SqlAudit.open({ postgres })` load. */
export const driver = "@effect/sql-pg"

/**
 * @effect/sql-pg, imported; or why it could not be: "it is not installed", or
 * the import's own error.
 */
export const pg: Effect.Effect<typeof Pg, string> = Effect.tryPromise({
  try: () => import("@effect/sql-pg"),
  catch: (cause) =>
    typeof cause === "object" && cause !== null && "code" in cause && cause.code === "ERR_MODULE_NOT_FOUND" &&
      cause instanceof Error && cause.message.includes(driver)
      ? "it is not installed"
      : (cause instanceof Error ? cause.message : String(cause)).split("\n")[0] ?? ""
})

/** Why a start did not come up, for the error Sql.ts makes of it. */
export interface Failure {
  readonly host: string
  readonly stage: "connect" | "migrate"
  readonly reason: string
  readonly tries: number
  readonly millis: number
}

export interface Options {
  readonly url: Redacted.Redacted
  readonly maxConnections?: number | undefined
  readonly applicationName: string
  readonly connectTimeout: Duration.Input
}

/**
 * A pool of @effect/sql-pg's, made for each build, with a Reactivity of its
 * own: `PgClient.layer` builds Effect's shared `Reactivity.layer`, whose
 * effect every build runs (Invocation.freshLayer says why that matters).
 */
export const client = (
  PgClient: typeof Pg.PgClient,
  config: Pg.PgClient.PgPoolConfig
): Layer.Layer<SqlClient.SqlClient, SqlError> =>
  Invocation.freshLayer(
    SqlClient.SqlClient,
    () => PgClient.make(config).pipe(Effect.provideServiceEffect(Reactivity.Reactivity, Reactivity.make))
  )

const firstWaitMillis = 100
const longestWaitMillis = 5_000

// Where the URL points, as it may be shown: host and port, never the user or
// the password; a socket folder given as `?host=` is shown as it is.
export const hostOf = (url: string): string => {
  try {
    const parsed = new URL(url)
    const socket = parsed.searchParams.get("host")
    if (parsed.hostname === "" && socket !== null) return socket
    return `${parsed.hostname === "" ? "localhost" : parsed.hostname}:${parsed.port === "" ? "5432" : parsed.port}`
  } catch {
    return "(a URL that does not parse)"
  }
}

// The reason as PostgreSQL or the network gave it, in one line: the server's
// message with its SQLSTATE, the socket's error (`connect ECONNREFUSED ...`),
// or each address's for a name that resolves to several.
const reasonOf = (error: SqlError): string => {
  const cause: unknown = error.reason.cause
  const one = (value: unknown): string => {
    if (value instanceof AggregateError && value.errors.length > 0) {
      return [...new Set(value.errors.map(one))].join("; ")
    }
    if (value instanceof Error) {
      const code = "code" in value && typeof value.code === "string" ? value.code : undefined
      // A server's answer has a severity; its code is the SQLSTATE.
      const sqlstate = code !== undefined && "severity" in value ? ` (SQLSTATE ${code})` : ""
      const text = value.message !== "" ? value.message : code ?? value.name
      return `${text}${sqlstate}`
    }
    return String(value)
  }
  const text = cause === undefined ? error.message : one(cause)
  return (text.split("\n")[0] ?? "").trim() || error.message
}

export const layer = <ROut, E, M>(
  options: Options,
  migrated: Layer.Layer<ROut, SqlError | MigrationError, SqlClient.SqlClient>,
  unavailable: (failure: Failure) => E,
  missing: (reason: string) => M
): Layer.Layer<ROut, E | M | MigrationError> =>
  Invocation.freshLayer(() =>
    Effect.gen(function*() {
      const { PgClient } = yield* Effect.mapError(pg, missing)
      const outer = yield* Effect.scope
      const host = hostOf(Redacted.value(options.url))
      const budget = Duration.toMillis(Duration.fromInputUnsafe(options.connectTimeout))
      const started = yield* Clock.currentTimeMillis
      const pool = client(PgClient, {
        url: options.url,
        maxConnections: options.maxConnections,
        applicationName: options.applicationName
      })
      // One try, in a scope of its own: closed when the try fails, so a pool
      // that connected and then failed to migrate does not stay open.
      const attempt = Effect.gen(function*() {
        const scope = yield* Scope.fork(outer, "sequential")
        return yield* Effect.gen(function*() {
          // The pool connects when first asked: asked here, so that a server
          // that does not answer fails the try as connecting, not migrating.
          const connected = yield* Layer.buildWithScope(pool, scope).pipe(
            Effect.tap((context) => Context.get(context, SqlClient.SqlClient)`SELECT 1`),
            Effect.mapError((error) => ({ stage: "connect" as const, error }))
          )
          // Only what `migrated` provides: the pool stays graded's (Sql.ts).
          return yield* Layer.buildWithScope(Layer.provide(migrated, Layer.succeedContext(connected)), scope)
            .pipe(Effect.mapError((error) => ({ stage: "migrate" as const, error })))
        }).pipe(Effect.onError((cause) => Scope.close(scope, Exit.failCause(cause))))
      })
      const loop = (
        tries: number,
        wait: number
      ): Effect.Effect<Context.Context<ROut>, E | MigrationError> =>
        Effect.catch(attempt, (failed) =>
          Effect.gen(function*() {
            if (failed.error._tag !== "SqlError") return yield* Effect.fail(failed.error)
            const reason = reasonOf(failed.error)
            const millis = (yield* Clock.currentTimeMillis) - started
            const next = Math.round(wait * (0.5 + (yield* Random.next)))
            const what = failed.stage === "connect" ? "connect to" : "migrate"
            if (millis + next > budget) {
              yield* Effect.logWarning(
                `@graded/sql: could not ${what} PostgreSQL at ${host} (try ${tries}): ${reason}; giving up after ${
                  Math.round(millis / 100) / 10
                } s`
              )
              return yield* Effect.fail(unavailable({ host, stage: failed.stage, reason, tries, millis }))
            }
            yield* Effect.logWarning(
              `@graded/sql: could not ${what} PostgreSQL at ${host} (try ${tries}): ${reason}; trying again in ${next} ms`
            )
            yield* Effect.sleep(Duration.millis(next))
            return yield* loop(tries + 1, Math.min(wait * 2, longestWaitMillis))
          }))
      return yield* loop(1, firstWaitMillis)
    })
  )

// Sealed where it is made (Invocation.seal): shared by every fiber that
// opens PostgreSQL, and a tool's code that finds it must not rewrite it.
Invocation.seal(pg)
