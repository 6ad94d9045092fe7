// The audit as an outbox (issue 33): what a step commits reaches another sink
// after commit, at least once, with stable ids; what a step rolled back never
// does; a sink that fails gets the same entries again. On a PostgreSQL server,
// a row numbered before another but committed after it is not passed over.
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { NodeFileSystem } from "@effect/platform-node"
import { Context, Deferred, Effect, Fiber, Layer, Schedule, type Scope } from "effect"
import { Audit, RunStore } from "@graded/core"
import { Sql, SqlAudit } from "@graded/sql"
import * as path from "node:path"
import { createDatabase, postgres, startPglite, tempDir } from "./databases.js"
import { type GradedDatabase, storeClient } from "./storeClient.js"

type Db = Layer.Layer<Audit.Audit | GradedDatabase | RunStore.RunStore, unknown>

const event = (tool: string): Audit.Event => ({ type: "called", tool, input: {} })

// A sink that keeps what it is given, and fails the first `failures` batches.
const keeping = (failures = 0) => {
  const got: Array<Audit.Entry> = []
  let left = failures
  const sink: Audit.Audit.Service = {
    write: (entry) => Effect.sync(() => void got.push(entry)),
    writeBatch: (entries) =>
      Effect.suspend(() =>
        left-- > 0 ? Effect.fail(new Error("disk full")) : Effect.sync(() => void got.push(...entries))
      )
  }
  return { got, sink }
}

const tools = (entries: ReadonlyArray<Audit.Entry>) => entries.map((entry) => "tool" in entry ? entry.tool : entry.type)

const suite = (name: string, open: () => Effect.Effect<Db, unknown, Scope.Scope>) =>
  describe(name, () => {
    it.effect("a step's entries commit with it; a nested step rolled back takes its own entries, not the outer's", () =>
      Effect.gen(function*() {
        const db = yield* Effect.map(open(), Layer.build).pipe(Effect.flatten)
        // The stores' transaction, as a run's step takes it.
        const step = Context.get(db, RunStore.RunStore).withTransaction!
        yield* step(Effect.gen(function*() {
          yield* Audit.record(event("outer"))
          yield* Effect.ignore(step(Effect.andThen(Audit.record(event("undone")), Effect.fail("no"))))
          yield* step(Audit.record(event("nested")))
          yield* Audit.record(event("after"))
        })).pipe(Effect.provide(db))
        yield* Effect.ignore(step(Effect.andThen(Audit.record(event("rolled back")), Effect.fail("no"))))
          .pipe(Effect.provide(db))
        const { got, sink } = keeping()
        yield* SqlAudit.forward({ sink: "copy" }, sink).pipe(Effect.provide(db))
        expect(tools(got)).toEqual(["outer", "nested", "after"])
      }))

    it.effect("forwards what committed, once, in order, each with its id; a step rolled back, never", () =>
      Effect.gen(function*() {
        const db = yield* Effect.map(open(), Layer.build).pipe(Effect.flatten)
        const sql = storeClient(db)
        yield* Effect.gen(function*() {
          yield* Audit.record(event("a"))
          yield* sql.withTransaction(Effect.andThen(Audit.record(event("b")), Audit.record(event("c"))))
          yield* Effect.ignore(sql.withTransaction(Effect.andThen(Audit.record(event("undone")), Effect.fail("no"))))
          yield* Audit.record(event("d"))
        }).pipe(Effect.provide(db))
        const { got, sink } = keeping()
        const forwarded = yield* SqlAudit.forward({ sink: "copy" }, sink).pipe(Effect.provide(db))
        expect(forwarded).toBe(4)
        expect(tools(got)).toEqual(["a", "b", "c", "d"])
        const ids = got.map((entry) => Number(entry.id))
        expect(ids).toEqual([...ids].sort((x, y) => x - y))
        expect(new Set(ids).size).toBe(4)
        // Nothing new: nothing again. Another sink starts from the beginning.
        expect(yield* SqlAudit.forward({ sink: "copy" }, sink).pipe(Effect.provide(db))).toBe(0)
        yield* Audit.record(event("e")).pipe(Effect.provide(db))
        expect(yield* SqlAudit.forward({ sink: "copy" }, sink).pipe(Effect.provide(db))).toBe(1)
        expect(tools(got)).toEqual(["a", "b", "c", "d", "e"])
        const other = keeping()
        yield* SqlAudit.forward({ sink: "other", limit: 2 }, other.sink).pipe(Effect.provide(db))
        expect(tools(other.got)).toEqual(["a", "b"])
      }))

    it.effect("a sink that fails is marked fed with nothing: the next pass forwards the same entries, same ids", () =>
      Effect.gen(function*() {
        const db = yield* Effect.map(open(), Layer.build).pipe(Effect.flatten)
        yield* Effect.andThen(Audit.record(event("a")), Audit.record(event("b"))).pipe(Effect.provide(db))
        const { got, sink } = keeping(1)
        const failed = yield* Effect.flip(SqlAudit.forward({ sink: "copy" }, sink).pipe(Effect.provide(db)))
        expect(failed).toMatchObject({ _tag: "@graded/sql/SqlAudit/ForwardFailed", sink: "copy" })
        expect(failed.message).toContain("disk full")
        expect(yield* SqlAudit.forward({ sink: "copy" }, sink).pipe(Effect.provide(db))).toBe(2)
        expect(tools(got)).toEqual(["a", "b"])
      }))

    it.effect("SqlAudit.forwarding feeds a JSON Lines file, and its last pass runs as the scope closes", () =>
      Effect.gen(function*() {
        const dir = yield* tempDir
        const file = path.join(dir, "audit.jsonl")
        const db = yield* Effect.map(open(), Layer.build).pipe(Effect.flatten)
        const forwarding = SqlAudit.forwarding({
          sink: "audit.jsonl",
          every: "1 hour",
          to: Audit.jsonl(file).pipe(Layer.provide(NodeFileSystem.layer))
        })
        yield* Effect.scoped(Effect.gen(function*() {
          yield* Layer.build(forwarding)
          yield* Audit.record(event("a"))
          yield* Audit.record(event("b"))
        })).pipe(Effect.provide(db))
        const lines = yield* Audit.readJsonl(file).pipe(Effect.provide(NodeFileSystem.layer))
        expect(tools(lines)).toEqual(["a", "b"])
        expect(lines.every((entry) => entry.id !== undefined)).toBe(true)
      }))
  })

suite("Sql.sqlite", () => Effect.map(tempDir, (dir) => Sql.sqlite({ filename: path.join(dir, "graded.db") })))

describe("PGlite", () => {
  let server: Awaited<ReturnType<typeof startPglite>> | undefined
  beforeAll(async () => {
    server = await startPglite()
  }, 60_000)
  afterAll(() => server?.stop())
  // One database for every connection: each test starts from no tables.
  const { reset } = postgres("PGlite", () => server!.url)
  suite("Sql.postgres on PGlite", () => Effect.as(reset, Sql.postgres({ url: server!.url })))
})

// Concurrent transactions need a server with a session per connection
// (PGlite has one session for all): .ci/run starts Debian's PostgreSQL.
const serverUrl = process.env.GRADED_PG_URL
describe.skipIf(serverUrl === undefined)("PostgreSQL server (GRADED_PG_URL)", () => {
  // Live: the forwarder is asked again on real time below (the server is real, and shared).
  it.live("a row numbered first and committed last is forwarded, not passed over", () =>
    Effect.gen(function*() {
      const database = yield* Effect.acquireRelease(
        Effect.promise(() => createDatabase(serverUrl!)),
        (created) => Effect.promise(() => created.drop())
      )
      const db = yield* Layer.build(Sql.postgres({ url: database.url, maxConnections: 4 }))
      const sql = storeClient(db)
      const written = yield* Deferred.make<void>()
      const go = yield* Deferred.make<void>()
      // A step that numbers its row, then holds its transaction open.
      const slow = yield* Effect.forkChild(
        sql.withTransaction(Effect.andThen(
          Effect.andThen(Audit.record(event("first")), Deferred.succeed(written, undefined)),
          Deferred.await(go)
        )).pipe(Effect.provide(db))
      )
      // However the checks end, the held transaction ends too.
      yield* Effect.addFinalizer(() => Deferred.succeed(go, undefined))
      yield* Deferred.await(written)
      yield* Audit.record(event("second")).pipe(Effect.provide(db))
      const { got, sink } = keeping()
      // "second" committed, but behind a transaction still open: it waits.
      yield* SqlAudit.forward({ sink: "copy" }, sink).pipe(Effect.provide(db))
      expect(tools(got)).toEqual([])
      yield* Deferred.succeed(go, undefined)
      yield* Fiber.join(slow)
      // Any transaction open on the server holds the forwarder back as this one did, in any of its databases
      // (pg_snapshot_xmin is the server's): the suites beside this one have theirs, so it is asked until it
      // has caught up. What must hold is the order: nothing passed over, nothing twice.
      yield* SqlAudit.forward({ sink: "copy" }, sink).pipe(
        Effect.provide(db),
        Effect.repeat({ until: () => got.length >= 2, schedule: Schedule.spaced("100 millis") }),
        Effect.timeout("60 seconds"),
        Effect.ignore
      )
      expect(tools(got)).toEqual(["first", "second"])
    }))
})
