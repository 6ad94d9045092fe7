// The databases the suites run on, as subjects: a SQLite file in a temp
// folder, and a PostgreSQL database (PGlite's wire server started by the test
// on 127.0.0.1, or a database of its own on the server GRADED_PG_URL names).
// Each test gets an empty database; `open` connects a new pool to it.
import { PGlite } from "@electric-sql/pglite"
import { PGLiteSocketServer } from "@electric-sql/pglite-socket"
import { SqlClient } from "effect/sql/SqlClient"
import { PgClient } from "@effect/sql-pg"
import { Context, Effect, Layer, Redacted, type Scope } from "effect"
import { type Audit, ProposalStore, type RunStore } from "@graded/core"
import { Fallback } from "@graded/policy"
import { Sql, type SqlAudit } from "@graded/sql"
import * as SqlFallbackStore from "@graded/sql/SqlFallbackStore"
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import type { AuditSubject } from "./auditContract.js"
import { type RunSubject, sqlDatabase } from "./runStoreContract.js"
import type { Subject } from "./storeContract.js"
import type { FallbackSubject } from "../../policy/test/fallbackContract.js"
import type { GradedDatabase } from "./storeClient.js"

export const tempDir = Effect.acquireRelease(
  Effect.sync(() => fs.mkdtempSync(path.join(os.tmpdir(), "graded-sql-"))),
  (dir) => Effect.sync(() => fs.rmSync(dir, { recursive: true, force: true }))
)

const subjects = (
  name: string,
  layer: Effect.Effect<
    {
      readonly layer: Layer.Layer<
        ProposalStore.ProposalStore | RunStore.RunStore | Audit.Audit | GradedDatabase,
        unknown
      >
      readonly source: SqlAudit.Source
    },
    unknown,
    Scope.Scope
  >
): {
  readonly store: Subject
  readonly audit: AuditSubject
  readonly runs: RunSubject
  readonly fallback: FallbackSubject
} => ({
  store: {
    name,
    database: Effect.map(layer, ({ layer: open }) => ({
      open: Effect.map(Layer.build(open), Context.get(ProposalStore.ProposalStore))
    }))
  },
  audit: { name, database: Effect.map(layer, ({ layer: open, source }) => ({ open: Layer.build(open), source })) },
  runs: { name, database: Effect.map(layer, ({ layer: open }) => sqlDatabase(open)) },
  fallback: {
    name,
    database: Effect.map(layer, ({ layer: open }) => ({
      open: Effect.map(Layer.build(SqlFallbackStore.beside(open)), Context.get(Fallback.Store))
    }))
  }
})

/** A new SQLite file per test. */
export const sqlite = subjects(
  "Sql.sqlite on a temp file",
  Effect.map(tempDir, (dir) => {
    const filename = path.join(dir, "graded.db")
    return { layer: Sql.sqlite({ filename }), source: { sqlite: filename } }
  })
)

/**
 * One PostgreSQL database for the whole file, made new for each test (tests
 * in a file run one after another) by dropping graded's tables: the first
 * layer a test builds migrates it again. `url` is read when a test starts.
 */
export const postgres = (name: string, url: () => string) => {
  const reset = Effect.scoped(Effect.gen(function*() {
    const sql = Context.get(yield* Layer.build(PgClient.layer({ url: Redacted.make(url()) })), SqlClient)
    yield* sql`DROP TABLE IF EXISTS graded_proposals, graded_audit, graded_deliveries, graded_runs,
      graded_fallback_quota, graded_review_cases, graded_guideline_drafts, graded_audit_forwarded, graded_migrations`
  }))
  return {
    reset,
    ...subjects(
      name,
      Effect.andThen(reset, Effect.sync(() => ({ layer: Sql.postgres({ url: url() }), source: { postgres: url() } })))
    )
  }
}

/**
 * PGlite (PostgreSQL in WebAssembly, from npm) behind its wire server on 127.0.0.1 and a free port (or `port`). One
 * backend serves every connection, message by message: patches/@electric-sql__pglite-socket@0.2.17.patch keeps a
 * connection's extended-protocol sequence (Parse to Sync) together, as it already kept a transaction, so that
 * another connection's Parse cannot replace the statement a Bind is for.
 */
export const startPglite = async (port = 0) => {
  const db = await freshPglite()
  // Every pool the tests open at once (up to 10 connections each) must fit.
  const server = new PGLiteSocketServer({ db, host: "127.0.0.1", port, maxConnections: 200 })
  await server.start()
  return {
    url: `postgres://postgres@${server.getServerConn()}/postgres`,
    stop: async () => {
      await server.stop()
      await db.close()
    }
  }
}

// PGlite's first start runs initdb in WebAssembly, about 5 CPU-seconds; a start
// that loads the data directory a first start made takes about 1. So the first
// start keeps its fresh data directory (before any statement of a test) under
// node_modules/.cache, named by the PGlite it came from, and later starts, in
// this run and the next, each load it into a database of their own.
const pgliteModule = createRequire(import.meta.url).resolve("@electric-sql/pglite")
const freshDataDir = fileURLToPath(
  new URL(
    `../../../node_modules/.cache/graded-pglite/${
      createHash("sha256").update(pgliteModule).digest("hex").slice(0, 16)
    }.tar`,
    import.meta.url
  )
)
const freshPglite = async () => {
  if (fs.existsSync(freshDataDir)) return PGlite.create({ loadDataDir: new Blob([fs.readFileSync(freshDataDir)]) })
  const db = await PGlite.create()
  const dump = Buffer.from(await (await db.dumpDataDir("none")).arrayBuffer())
  fs.mkdirSync(path.dirname(freshDataDir), { recursive: true })
  // Renamed into place whole: a start beside this one reads all of it or none.
  const partial = `${freshDataDir}.${process.pid}`
  fs.writeFileSync(partial, dump)
  fs.renameSync(partial, freshDataDir)
  return db
}

/** A database of its own on a real server, dropped afterwards. */
export const createDatabase = async (serverUrl: string) => {
  const name = `graded_test_${process.pid}_${Date.now()}`
  const admin = (statement: string) =>
    Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const context = yield* Layer.build(PgClient.layer({ url: Redacted.make(serverUrl) }))
      yield* Context.get(context, SqlClient).unsafe(statement)
    })))
  await admin(`CREATE DATABASE ${name}`)
  const url = new URL(serverUrl)
  url.pathname = `/${name}`
  return { url: url.href, drop: () => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) }
}

/** A port on 127.0.0.1 that nothing listens on (it was free a moment ago). */
export const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const probe = net.createServer()
    probe.once("error", reject)
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address()
      probe.close(() => typeof address === "object" && address !== null ? resolve(address.port) : reject(address))
    })
  })
