// Everything on PostgreSQL: PGlite's wire server, started here on 127.0.0.1
// (PostgreSQL compiled to WebAssembly, from npm, so this runs wherever Node
// does), and, when GRADED_PG_URL names a server, a database of its own on
// that server too (.ci/run starts Debian's postgresql for it).
import { SqlClient } from "effect/sql/SqlClient"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Context, Effect, Fiber, Layer, Logger } from "effect"
import { ProposalStore } from "@graded/core"
import { Sql, SqlAudit, SqlMigrations } from "@graded/sql"
import { fallbackContract } from "../../policy/test/fallbackContract.js"
import { auditContract } from "./auditContract.js"
import { createDatabase, freePort, postgres, startPglite } from "./databases.js"
import { runStoreContract } from "./runStoreContract.js"
import { sharedQueue, storeContract } from "./storeContract.js"
import { transitionsContract } from "./transitionsContract.js"
import { storeClient } from "./storeClient.js"

const cleanup: Array<() => Promise<void>> = []
afterAll(async () => {
  for (const stop of cleanup.reverse()) await stop()
})

const suite = (name: string, skip: boolean, start: () => Promise<{ url: string; stop: () => Promise<void> }>) =>
  describe.skipIf(skip)(name, () => {
    let url = ""
    beforeAll(async () => {
      const started = await start()
      cleanup.push(started.stop)
      url = started.url
    })
    const subjects = postgres(name, () => url)
    storeContract(subjects.store)
    transitionsContract(subjects.store)
    auditContract(subjects.audit)
    runStoreContract(subjects.runs)
    fallbackContract(subjects.fallback)

    describe("Sql.postgres", () => {
      it.effect("makes its tables, records its migrations apart from the app's, and migrates once", () =>
        Effect.gen(function*() {
          yield* subjects.reset
          const sql = storeClient(yield* Layer.build(Sql.postgres({ url })))
          const tables = yield* sql<{ table_name: string }>`SELECT table_name FROM information_schema.tables
            WHERE table_schema = current_schema() AND table_name LIKE 'graded_%' ORDER BY table_name`
          expect(tables.map((t) => t.table_name)).toEqual([
            "graded_audit",
            "graded_audit_forwarded",
            "graded_deliveries",
            "graded_fallback_quota",
            "graded_guideline_drafts",
            "graded_migrations",
            "graded_proposals",
            "graded_review_cases",
            "graded_runs"
          ])
          expect(yield* SqlMigrations.run.pipe(Effect.provideService(SqlClient, sql))).toEqual([])
        }))

      it.live("processes starting at once on one database all come up and share one queue", () =>
        Effect.gen(function*() {
          yield* subjects.reset
          const stores = yield* Effect.forEach(
            Array.from({ length: 4 }, () => Sql.postgres({ url })),
            (layer) => Effect.map(Layer.build(layer), Context.get(ProposalStore.ProposalStore)),
            { concurrency: "unbounded" }
          )
          expect(yield* Effect.forEach(stores, (store) => store.list())).toEqual([[], [], [], []])
          yield* sharedQueue(stores)
        }).pipe(Effect.scoped))

      it.effect("SqlAudit.open names what it cannot read: a URL that is not PostgreSQL's, a server nobody answers at, no graded table", () =>
        Effect.gen(function*() {
          yield* subjects.reset
          const reason = (postgres: string) =>
            Effect.map(Effect.flip(Layer.build(SqlAudit.open({ postgres }))), (error) => error.message)
          expect(yield* reason("mysql://root@localhost/db")).toBe(
            "Cannot read the audit in mysql://root@localhost/db: not a PostgreSQL URL (postgres://user:password@host:port/database)"
          )
          expect(yield* reason("not a url")).toMatch(/^Cannot read the audit in \(a URL that does not parse\): /)
          const closed = new URL(url)
          closed.port = "1"
          closed.password = "secret"
          const refused = yield* reason(closed.href)
          // The user is the server's (postgres on PGlite, graded in .ci/run); the password is masked.
          expect(refused).toMatch(
            new RegExp(
              `^Cannot read the audit in postgres://${closed.username}:\\*\\*\\*@127\\.0\\.0\\.1:1/\\w+: cannot connect: `
            )
          )
          expect(refused).not.toContain("secret")
          expect(yield* reason(url)).toMatch(/: it holds no graded_audit table/)
        }))

      it.live("a server nobody answers at fails the layer, once its connectTimeout is spent, naming the host and the reason", () =>
        Effect.gen(function*() {
          const closed = new URL(url)
          closed.port = "1"
          closed.password = "secret"
          const { logger, logged } = capture()
          const error = yield* Effect.flip(
            Layer.build(Sql.postgres({ url: closed.href, connectTimeout: "1 second" })).pipe(Effect.provide(logger))
          )
          // On PGlite's server 127.0.0.1:1; on GRADED_PG_URL's, its host.
          const host = `${closed.hostname}:1`.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")
          expect(error).toBeInstanceOf(Sql.Unavailable)
          expect(error).toMatchObject({ host: `${closed.hostname}:1`, stage: "connect" })
          expect(error.message).toMatch(
            new RegExp(
              `^Could not connect to PostgreSQL at ${host} in [0-9.]+ s \\(\\d+ tries\\): connect ECONNREFUSED `
            )
          )
          expect(error.message).not.toContain("secret")
          // Every try is logged; the last says it gave up.
          expect(logged.length).toBe((error as Sql.Unavailable).tries)
          expect(logged[0]).toMatch(
            new RegExp(
              `^@graded/sql: could not connect to PostgreSQL at ${host} \\(try 1\\): connect ECONNREFUSED .*; trying again in \\d+ ms$`
            )
          )
          expect(logged.at(-1)).toMatch(/; giving up after [0-9.]+ s$/)
        }).pipe(Effect.scoped))

      // PGlite's wire server serves one database whatever the name: only a real server refuses it.
      it.live.skipIf(name.startsWith("PostgreSQL (PGlite"))(
        "a server that answers with a refusal: the failure gives PostgreSQL's own reason and its SQLSTATE",
        () =>
          Effect.gen(function*() {
            const missing = new URL(url)
            missing.pathname = "/graded_no_such_database"
            const error = yield* Effect.flip(
              Layer.build(Sql.postgres({ url: missing.href, connectTimeout: "300 millis" })).pipe(
                Effect.provide(capture().logger)
              )
            )
            expect(error.message).toMatch(
              /\): database "graded_no_such_database" does not exist \(SQLSTATE 3D000\)$/
            )
          }).pipe(Effect.scoped)
      )
    })
  })

// What every failed try logs, as lines.
const capture = () => {
  const logged: Array<string> = []
  const logger = Logger.layer([
    Logger.make(({ message }) => {
      logged.push(Array.isArray(message) ? message.join(" ") : String(message))
    })
  ])
  return { logger, logged }
}

describe("Sql.postgres started while the server is down", () => {
  it.live(
    "tries again until the server answers, then comes up migrated; each failed try is logged",
    () =>
      Effect.gen(function*() {
        const port = yield* Effect.promise(freePort)
        const url = `postgres://postgres@127.0.0.1:${port}/postgres`
        const { logger, logged } = capture()
        const starting = yield* Effect.forkChild(
          Layer.build(Sql.postgres({ url, connectTimeout: "2 minutes" })).pipe(Effect.provide(logger))
        )
        // The server starts only once the layer has met it down (twice).
        while (logged.length < 2 && starting.pollUnsafe() === undefined) yield* Effect.sleep("10 millis")
        yield* Effect.acquireRelease(
          Effect.promise(() => startPglite(port)),
          (server) => Effect.promise(server.stop)
        )
        const context = yield* Fiber.join(starting)
        expect(yield* Context.get(context, ProposalStore.ProposalStore).list()).toEqual([])
        const sql = storeClient(context)
        expect(yield* SqlMigrations.run.pipe(Effect.provideService(SqlClient, sql))).toEqual([])
        expect(logged[0]).toMatch(
          new RegExp(
            `^@graded/sql: could not connect to PostgreSQL at 127\\.0\\.0\\.1:${port} \\(try 1\\): connect ECONNREFUSED 127\\.0\\.0\\.1:${port}; trying again in \\d+ ms$`
          )
        )
        expect(logged.every((line) => !line.includes("giving up"))).toBe(true)
      }).pipe(Effect.scoped),
    120_000
  )
})

suite("PostgreSQL (PGlite's wire server on 127.0.0.1)", false, startPglite)
suite(
  `PostgreSQL (the server GRADED_PG_URL names)`,
  process.env.GRADED_PG_URL === undefined || process.env.GRADED_PG_URL === "",
  async () => {
    const database = await createDatabase(process.env.GRADED_PG_URL!)
    return { url: database.url, stop: database.drop }
  }
)
