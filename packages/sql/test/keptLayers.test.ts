// A read tool's code builds a layer of graded's SQL the app keeps (its
// module exports it) while watching with a tracer's `context` hook, and
// rewrites every writable effect object it was handed; the app builds the
// same layer next, in a human's fiber (packages/core/test/watching.ts).
// Nothing goes out: the layers make their effects again for each build
// (Invocation.freshLayer). Each use builds its database anew: a database the
// tool's code and the app share once built is another matter.
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as SqlClient from "effect/sql/SqlClient"
import { Audit, Proposal, ProposalStore, RunStore } from "@graded/core"
import { Fallback } from "@graded/policy"
import { Sql, SqlAudit, SqlProposalStore, SqlRunStore } from "@graded/sql"
import * as SqlFallbackStore from "@graded/sql/SqlFallbackStore"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { buildTwice, nothingSent } from "../../core/test/watching.js"
import { startPglite } from "./databases.js"
import { storeClient } from "./storeClient.js"

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "graded-kept-"))
const filename = path.join(dir, "graded.db")
let server: Awaited<ReturnType<typeof startPglite>> | undefined
// The app's PostgreSQL layer, made once the server listens, then kept.
let postgres: ReturnType<typeof Sql.postgres> | undefined
beforeAll(async () => {
  server = await startPglite()
  postgres = Sql.postgres({ url: server.url })
  // SqlAudit.open reads a database graded made.
  await Effect.runPromise(Effect.scoped(Layer.build(Sql.sqlite({ filename }))))
}, 60_000)
afterAll(async () => {
  await server?.stop()
  fs.rmSync(dir, { recursive: true, force: true })
})

const app = {
  sqlite: Sql.sqlite({ filename }),
  withFallback: SqlFallbackStore.beside(Sql.sqlite({ filename })),
  open: SqlAudit.open({ sqlite: filename }),
  forwarding: SqlAudit.forwarding({ sink: "kept", to: Audit.layer(() => Effect.void) })
}

// A store layer on a client of the app's own: here, the client of a database built for this use.
const onItsClient = <A, E>(self: Effect.Effect<A, E, SqlClient.SqlClient>) =>
  Effect.scoped(Effect.flatMap(
    Layer.build(Sql.sqlite({ filename })),
    (database) => Effect.provideService(self, SqlClient.SqlClient, storeClient(database))
  ))

const kept: ReadonlyArray<readonly [string, () => Effect.Effect<unknown, unknown>]> = [
  ["Sql.sqlite", () => Effect.provide(Proposal.list(), app.sqlite)],
  ["Sql.postgres", () => Effect.provide(Proposal.list(), postgres!)],
  ["SqlFallbackStore.beside", () => Effect.provide(Fallback.Store.use((store) => store.cases()), app.withFallback)],
  ["SqlAudit.open", () => Effect.provide(SqlAudit.entries(), app.open)],
  ["SqlAudit.forwarding", () => Effect.provide(Effect.void, Layer.provide(app.forwarding, app.sqlite))],
  [
    "SqlAudit.layer",
    () => onItsClient(Effect.provide(Audit.record({ type: "called", tool: "app.note", input: {} }), SqlAudit.layer))
  ],
  [
    "SqlProposalStore.layer",
    () => onItsClient(Effect.provide(Effect.service(ProposalStore.ProposalStore), SqlProposalStore.layer))
  ],
  ["SqlRunStore.layer", () => onItsClient(Effect.provide(Effect.service(RunStore.RunStore), SqlRunStore.layer))],
  [
    "SqlFallbackStore.layer",
    () => onItsClient(Effect.provide(Fallback.Store.use((store) => store.cases()), SqlFallbackStore.layer))
  ]
]

describe("A read tool rewrites what a SQL layer the app keeps runs when it is built", () => {
  for (const [name, use] of kept) {
    it.live(`${name}: nothing is sent`, () =>
      Effect.map(buildTwice(use), (result) => expect(result).toEqual(nothingSent)))
  }
})
