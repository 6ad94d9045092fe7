// Fault injection at every write of a durable run (faults.ts): a run with a
// read, a write the human edits and a send, on memory, SQLite and PostgreSQL
// (PGlite, and the server GRADED_PG_URL names). For every k, the process dies
// at write k (kill -9: nothing more of it happens, an open transaction rolls
// back), or write k fails once (the store refused it); new processes then go
// on until the run finishes. After each: nothing lost, nothing delivered
// twice (by model call or by key), nothing delivered other than what alice
// approved, no audit entry missing, and the model asked again at most for
// the one answer that died before it was stored.
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Effect, Layer, type Scope } from "effect"
import { Audit, Proposal, ProposalStore, RunStore } from "@graded/core"
import { Sql, SqlAudit } from "@graded/sql"
import * as path from "node:path"
import { createDatabase, startPglite, tempDir } from "./databases.js"
import { check, drive, makeScenario, plan, type Plan, runId } from "./faults.js"
import { type GradedDatabase, storeClient } from "./storeClient.js"

type Opened = Layer.Layer<ProposalStore.ProposalStore | RunStore.RunStore | Audit.Audit, unknown>

interface Database {
  /** A new process's layer on the database. */
  readonly open: () => Opened
  /** The run's audit trail and its proposals, read back after. */
  readonly trail: Effect.Effect<{
    readonly audit: ReadonlyArray<Audit.Entry>
    readonly proposals: ReadonlyArray<Proposal.Proposal>
  }, unknown>
}

const sqlTrail = (layer: Layer.Layer<ProposalStore.ProposalStore | RunStore.RunStore | GradedDatabase, unknown>) =>
  Effect.scoped(
    Effect.gen(function*() {
      const runs = yield* RunStore.RunStore
      const run = yield* runs.get(runId)
      return { audit: yield* SqlAudit.trace(run.traceId), proposals: yield* Proposal.list() }
    }).pipe(Effect.provide(layer))
  )

const memory: Effect.Effect<Database> = Effect.gen(function*() {
  // One store for every "process": memory outlives none, so only store failures are tried on it.
  const stores = yield* Effect.scoped(Layer.build(Layer.merge(ProposalStore.memory, RunStore.memory)))
  const audit = Audit.memory()
  const open = () => Layer.merge(Layer.succeedContext(stores), audit.layer)
  return {
    open,
    trail: Effect.map(
      Proposal.list().pipe(Effect.provide(open())),
      (proposals) => ({ audit: audit.entries, proposals })
    )
  }
})

const sqlite: Effect.Effect<Database, never, Scope.Scope> = Effect.map(tempDir, (dir) => {
  const open = () => Sql.sqlite({ filename: path.join(dir, "graded.db") })
  return { open, trail: sqlTrail(open()) }
})

const postgres = (url: () => Promise<{ readonly url: string; readonly drop: () => Promise<void> }>) =>
  Effect.map(
    Effect.acquireRelease(Effect.promise(url), (database) => Effect.promise(database.drop)),
    (database): Database => {
      const open = () => Sql.postgres({ url: database.url, maxConnections: 4 })
      return { open, trail: sqlTrail(open()) }
    }
  )

const trial = (database: Effect.Effect<Database, never, Scope.Scope>, faults: Plan, nested: boolean) =>
  Effect.scoped(Effect.gen(function*() {
    const { open, trail } = yield* database
    const scenario = makeScenario(nested)
    const processes = yield* drive(scenario, open, faults)
    const { audit, proposals } = yield* trail
    // Each run's turns once; a fault loses at most the one answer that died.
    const turns = nested ? 5 : 3
    return {
      processes,
      writes: faults.writes,
      problems: check(faults.mode === "none" ? turns : turns + 1, scenario, proposals, audit)
    }
  }))

// Every write of a run with no fault, then a fault at each one.
const everyWrite = (
  name: string,
  database: Effect.Effect<Database, never, Scope.Scope>,
  modes: ReadonlyArray<"kill" | "fail">
) =>
  [false, true].forEach((nested) =>
    it.live(
      `${name}${
        nested ? ", the tools held by a sub-agent (a nested run)" : ""
      }: a fault at every write leaves 0 lost, 0 twice, 0 unapproved, 0 audit gaps`,
      () =>
        Effect.gen(function*() {
          const clean = yield* trial(database, plan("none"), nested)
          expect(clean).toMatchObject({ processes: 1, problems: [] })
          expect(clean.writes).toBeGreaterThan(10)
          const found: Array<string> = []
          for (const mode of modes) {
            for (let at = 1; at <= clean.writes; at++) {
              const { problems } = yield* trial(database, plan(mode, at), nested)
              for (const problem of problems) found.push(`${mode} at write ${at}: ${problem}`)
            }
          }
          expect(found).toEqual([])
        }),
      600_000
    )
  )

describe("faults at every write of a durable run", () => {
  everyWrite("memory", Effect.suspend(() => memory), ["fail"])
  everyWrite("Sql.sqlite", sqlite, ["kill", "fail"])

  describe("PGlite", () => {
    let server: Awaited<ReturnType<typeof startPglite>> | undefined
    beforeAll(async () => {
      server = await startPglite()
    }, 120_000)
    afterAll(async () => {
      await server?.stop()
    })
    // PGlite holds one database: each trial drops graded's tables first.
    everyWrite(
      "Sql.postgres on PGlite",
      postgres(async () => {
        const url = server!.url
        await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
          const context = yield* Layer.build(Sql.postgres({ url }))
          const sql = storeClient(context)
          yield* sql`DELETE FROM graded_audit`
          yield* sql`DELETE FROM graded_deliveries`
          yield* sql`DELETE FROM graded_proposals`
          yield* sql`DELETE FROM graded_runs`
        })))
        return { url, drop: async () => {} }
      }),
      ["kill", "fail"]
    )
  })

  const serverUrl = process.env.GRADED_PG_URL
  describe.skipIf(serverUrl === undefined)("PostgreSQL server (GRADED_PG_URL)", () => {
    everyWrite("Sql.postgres", postgres(() => createDatabase(serverUrl!)), ["kill", "fail"])
  })
})
