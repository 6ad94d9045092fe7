// Four processes on one PostgreSQL database decide the same pending calls at
// once. Supervised runs (Runs.start with a scripted model, four sends a run)
// leave the proposals pending; then four child processes each try to approve
// every one of them, as four humans on four servers clicking the same cards.
// Each call must go out exactly once (the outside system sees each message
// once, under the key graded recorded), every other attempt must get
// AlreadyDecided, and the audit must say who decided and delivered each one,
// once. On PGlite's wire server (one WebAssembly PostgreSQL, which runs one
// statement at a time) with 52 calls; with 252 on the server GRADED_PG_URL
// names; .ci/run (GRADED_PROPERTY_SCALE=4, and a server) 200 and 1,000.
import { SqlClient } from "effect/sql/SqlClient"
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { Proposal, Runs, ScriptedModel } from "@graded/core"
import { Sql, SqlAudit } from "@graded/sql"
import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { built } from "../../../test/built.js"
import { propertyRuns } from "../../../test/propertyRuns.js"
import { createDatabase, startPglite, tempDir } from "./databases.js"
import { createOutbox, outbox } from "./outbox.js"
import { storeClient } from "./storeClient.js"

const root = fileURLToPath(new URL("../../..", import.meta.url))
const { call, calls } = ScriptedModel

interface Report {
  readonly won: ReadonlyArray<string>
  readonly lost: ReadonlyArray<{ readonly id: string; readonly status: string; readonly by: string }>
  readonly errors: ReadonlyArray<string>
}

// Starts the process and resolves once it is connected and says "ready";
// `go` lets it start deciding, `done` is what it printed last.
const startProcess = (url: string, idsFile: string) =>
  new Promise<{ go: () => void; done: Promise<Report> }>((ready, failed) => {
    const proc = spawn(process.execPath, [built("packages/sql/test/postgresProcess.ts"), url, idsFile], { cwd: root })
    let stdout = ""
    let stderr = ""
    proc.stderr.on("data", (chunk) => stderr += chunk)
    const done = new Promise<Report>((resolve, reject) => {
      proc.on("exit", (code) => {
        const last = stdout.trim().split("\n").at(-1) ?? ""
        if (code === 0) resolve(JSON.parse(last) as Report)
        else reject(new Error(`process ${proc.pid} exited with ${code}: ${stderr}`))
      })
    })
    done.catch(failed)
    proc.stdout.on("data", (chunk) => {
      stdout += chunk
      if (stdout.startsWith("ready\n")) ready({ go: () => proc.stdin.end("go\n"), done })
    })
  })

const cleanup: Array<() => Promise<void>> = []
afterAll(async () => {
  for (const stop of cleanup.reverse()) await stop()
})

const suite = (
  name: string,
  skip: boolean,
  count: number,
  start: () => Promise<{ url: string; stop: () => Promise<void> }>
) =>
  describe.skipIf(skip)(name, () => {
    it.live(
      `4 processes race to approve each of ${count} pending calls: each delivered exactly once, every loser told AlreadyDecided, the audit complete`,
      () =>
        Effect.gen(function*() {
          const started = yield* Effect.promise(start)
          cleanup.push(started.stop)
          const url = started.url
          const context = yield* Layer.build(Sql.postgres({ url }))
          const sql = storeClient(context)
          yield* createOutbox.pipe(Effect.provideService(SqlClient, sql))

          // The runs: each model turn asks for four sends, which wait for a human.
          const runs = count / 4
          const waiting = yield* Effect.forEach(
            Array.from({ length: runs }, (_, i) => i),
            (i) =>
              Runs.start({ toolkit: outbox, prompt: `Tell customer ${i}.`, runId: `run-${i}` }).pipe(
                Effect.provide(ScriptedModel.layer([
                  calls(...Array.from({ length: 4 }, (_, j) => call("outbox.send", { text: `run-${i} call-${j}` })))
                ])),
                Effect.provide(context),
                // What the toolkit's deliver writes with (the process's own pool in postgresProcess.ts).
                Effect.provideService(SqlClient, sql)
              ),
            { concurrency: 8 }
          )
          const ids = waiting.flatMap((outcome) => outcome.status === "waiting" ? outcome.pending.map((p) => p.id) : [])
          expect(ids).toHaveLength(count)
          expect((yield* Proposal.list({ status: "pending" }).pipe(Effect.provide(context))).map((p) => p.id).sort())
            .toEqual([...ids].sort())

          // Four processes, connected, then let go together; each tries every proposal.
          const idsFile = path.join(yield* tempDir, "ids.json")
          fs.writeFileSync(idsFile, JSON.stringify(ids))
          const processes = yield* Effect.promise(() =>
            Promise.all(Array.from({ length: 4 }, () => startProcess(url, idsFile)))
          )
          for (const p of processes) p.go()
          const reports = yield* Effect.promise(() => Promise.all(processes.map((p) => p.done)))

          expect(reports.flatMap((r) => r.errors)).toEqual([])
          const won = reports.flatMap((r) => r.won)
          // Each proposal won by exactly one process.
          expect([...won].sort()).toEqual([...ids].sort())
          // Every other attempt lost, with AlreadyDecided naming another process.
          const lost = reports.flatMap((r, i) => r.lost.map((l) => ({ ...l, loser: i })))
          expect(lost).toHaveLength(3 * count)
          const winner = new Map(reports.flatMap((r, i) => r.won.map((id) => [id, i] as const)))
          for (const l of lost) {
            expect(winner.get(l.id)).not.toBe(l.loser)
            expect(l.by).toMatch(/^process:\d+$/)
          }
          // Not a race won by one process alone: the four shared the work.
          expect(reports.filter((r) => r.won.length > 0).length).toBeGreaterThan(1)

          // The outside system: each message once, under the key graded recorded for it.
          const proposals = yield* Proposal.list({}).pipe(Effect.provide(context))
          expect(proposals).toHaveLength(count)
          expect(proposals.every((p) => p.status === "delivered")).toBe(true)
          const sent = yield* sql<{ key: string; text: string; pid: number }>`SELECT key, text, pid FROM outbox`
          expect(sent).toHaveLength(count)
          expect(new Set(sent.map((s) => s.key)).size).toBe(count)
          const byKey = new Map(sent.map((s) => [s.key, s]))
          for (const p of proposals) {
            expect(byKey.get(p.deliveryKey!)?.text).toBe((p.payload as { text: string }).text)
            expect(`process:${byKey.get(p.deliveryKey!)?.pid}`).toBe(p.decision?.by)
          }
          expect(sent.map((s) => s.text).sort()).toEqual(
            Array.from({ length: runs }, (_, i) => Array.from({ length: 4 }, (_, j) => `run-${i} call-${j}`)).flat()
              .sort()
          )

          // The audit, on the same database: per proposal, the winner's attempt
          // asked, decided and delivered once under the proposal's key, on the
          // run's trace (not the approver's); the losers' attempts wrote nothing.
          const entries = yield* SqlAudit.entries().pipe(Effect.provide(context))
          const traced = yield* sql<{ trace_id: string | null }>`SELECT trace_id FROM graded_audit ORDER BY seq`
          expect(traced).toHaveLength(entries.length)
          expect(traced.filter((row) => row.trace_id?.startsWith("approve:"))).toEqual([])
          for (const p of proposals) {
            const onRun = entries.filter((e) => e.traceId === p.traceId)
            const text = (p.payload as { text: string }).text
            expect(onRun.filter((e) => e.type === "confirm-requested" && JSON.stringify(e.payload).includes(text)))
              .toHaveLength(1)
            expect(onRun.filter((e) => e.type === "delivered" && e.key === p.deliveryKey)).toMatchObject([{
              by: p.decision!.by
            }])
          }
          const decided = entries.filter((e) => e.type === "decided")
          expect(decided).toHaveLength(count)
          expect(decided.every((e) => e.type === "decided" && e.decision === "approved" && /^process:\d+$/.test(e.by)))
            .toBe(true)
          const delivered = entries.filter((e) => e.type === "delivered")
          expect(delivered).toHaveLength(count)
          expect(new Set(delivered.map((e) => e.type === "delivered" && e.key))).toEqual(
            new Set(proposals.map((p) => p.deliveryKey))
          )
          expect(entries.filter((e) => e.type === "decided")).toHaveLength(count)
          // And each call was proposed once, by its run.
          expect(entries.filter((e) => e.type === "proposed").map((e) => e.type === "proposed" && e.proposal).sort())
            .toEqual([...ids].sort())
        }).pipe(Effect.scoped),
      // Generous: four processes start, and the machines this
      // runs on are shared (under load, 200 calls on PGlite took 70 s).
      count * 300 + 120_000
    )
  })

// Four sends a run: the counts are runs times four.
suite("PGlite's wire server on 127.0.0.1", false, 4 * propertyRuns(12.5), startPglite)
suite(
  "the PostgreSQL server GRADED_PG_URL names",
  process.env.GRADED_PG_URL === undefined || process.env.GRADED_PG_URL === "",
  4 * propertyRuns(62.5),
  async () => {
    const database = await createDatabase(process.env.GRADED_PG_URL!)
    return { url: database.url, stop: database.drop }
  }
)
