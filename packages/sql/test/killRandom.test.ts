// kill -9 at random: N supervised runs on one store, four processes that
// start and resume them and two that decide their writes and sends (approve,
// approve with an edit, reject, retry what is in doubt; never mark a delivery
// done), all through graded's public API (killRandomProcess.ts). This process
// SIGKILLs one of the six at random times and starts another in its place,
// until every run has ended. Then it reads back the store, its audit, the
// outside ledger the tools append to with fsync (ledgerDesk.ts) and the
// deciders' journal, and checks: 0 calls lost, 0 delivered twice, 0 delivered
// other than approved, 0 audit gaps (killRandomChecks.ts says each precisely).
//
// Sized by environment variables: GRADED_CRASH_RUNS (50 on SQLite, 250 on the
// PostgreSQL server GRADED_PG_URL names, when set, each times
// GRADED_PROPERTY_SCALE: 200 and 1,000 in .ci/run), GRADED_CRASH_KILLS
// (one kill per 5 runs), GRADED_CRASH_SEED (the kill schedule and the
// decisions; printed, so a failing schedule can be played again, though the
// processes' timing is the machine's).
//
// The children are the program test/built.ts builds, started with plain node:
// through tsx each start costs seconds of CPU, built under one, which buys
// more kills for the same time.
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Random } from "effect"
import { type Audit, Proposal, type ProposalStore, RunStore } from "@graded/core"
import { Sql, SqlAudit } from "@graded/sql"
import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { built } from "../../../test/built.js"
import { propertyRuns } from "../../../test/propertyRuns.js"
import { createDatabase, tempDir } from "./databases.js"
import { check, type Findings } from "./killRandomChecks.js"
import { type Decision, type Delivery, readLines } from "./ledgerDesk.js"
import type { GradedDatabase } from "./storeClient.js"

const root = fileURLToPath(new URL("../../..", import.meta.url))
const artifacts = path.join(root, ".artifacts")

const envNumber = (name: string) => {
  const value = process.env[name]
  return value === undefined || value === "" ? undefined : Number(value)
}

type Role = "resume" | "decide"

interface Child {
  readonly name: string
  readonly role: Role
  readonly process: ChildProcess
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
  readonly log: Array<string>
  killed: boolean
}

// The store the children are given (a SQLite file or a PostgreSQL URL), its layer, and its files to keep on a failure.
interface Opened {
  readonly store: string
  readonly layer: Layer.Layer<ProposalStore.ProposalStore | RunStore.RunStore | Audit.Audit | GradedDatabase, unknown>
  readonly files: ReadonlyArray<string>
}

const cleanup: Array<() => Promise<void>> = []
afterAll(async () => {
  for (const stop of cleanup.reverse()) await stop()
})

const suite = (
  dialect: string,
  slug: string,
  skip: boolean,
  defaultRuns: number,
  open: (dir: string) => Promise<Opened>
) => {
  const runCount = envNumber("GRADED_CRASH_RUNS") ?? defaultRuns
  const kills = envNumber("GRADED_CRASH_KILLS") ?? Math.round(runCount / 5)
  // Generous: the machine is shared, and a child's start is slow under load.
  const patience = 300_000 + runCount * 600
  describe.skipIf(skip)(dialect, () => {
    it.live(
      `${runCount} runs, 4 resuming and 2 deciding processes, ${kills} random kill -9s: 0 lost, 0 delivered twice, 0 delivered other than approved, 0 audit gaps`,
      () =>
        Effect.gen(function*() {
          const seed = envNumber("GRADED_CRASH_SEED") ?? Math.floor(Math.random() * 2 ** 31)
          const began = Date.now()
          const dir = yield* tempDir
          const ledger = path.join(dir, "ledger.jsonl")
          const journal = path.join(dir, "journal.jsonl")
          const { files, layer, store } = yield* Effect.promise(() => open(dir))
          // Migrated here, before any child starts.
          const context = yield* Layer.build(layer)
          const app = <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.provide(self, context)
          const program = built("packages/sql/test/killRandomProcess.ts")
          console.log(`kill -9 test on ${dialect}: ${runCount} runs, ${kills} kills, GRADED_CRASH_SEED=${seed}`)

          const spawnChild = (role: Role, name: string): Child => {
            const proc = spawn(
              process.execPath,
              [program, role, name, store, ledger, journal, String(runCount), String(seed)],
              { cwd: root, stdio: ["ignore", "pipe", "pipe"] }
            )
            const log: Array<string> = []
            const keep = (chunk: Buffer) => {
              log.push(String(chunk))
              if (log.length > 1000) log.shift()
            }
            proc.stdout!.on("data", keep)
            proc.stderr!.on("data", keep)
            const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
              proc.once("exit", (code, signal) => resolve({ code, signal }))
            )
            return { name, role, process: proc, exited, log, killed: false }
          }
          const children: Array<Child> = [
            ...Array.from({ length: 4 }, (_, i) => spawnChild("resume", `resumer-${i + 1}`)),
            ...Array.from({ length: 2 }, (_, i) => spawnChild("decide", `decider-${i + 1}`))
          ]
          const gone: Array<Child> = []
          const stopAll = async () => {
            for (const child of children) {
              child.killed = true
              child.process.kill("SIGKILL")
              await child.exited
            }
          }
          cleanup.push(stopAll)
          const unexpectedExits: Array<string> = []

          // Every run ended, and no proposal still open (an orphan a run no longer waits on is decided too).
          const allEnded = app(Effect.gen(function*() {
            const runs = yield* Effect.flatMap(RunStore.RunStore, (store) => store.list())
            const proposals = yield* Proposal.list()
            return runs.length === runCount && runs.every((run) => run.state.ended !== undefined) &&
              proposals.every((p) => !["pending", "approving", "delivering", "in-doubt"].includes(p.status))
          }))

          // The kill schedule: a random child at random intervals, restarted at once.
          const random = yield* Random.withSeed(Random.Random, seed)
          const schedule = {
            // In [min, max), as Effect 3's was.
            nextIntBetween: (min: number, max: number) =>
              Effect.provideService(Random.nextIntBetween(min, max, { halfOpen: true }), Random.Random, random)
          }
          const killed: Array<string> = []
          let nextKill = Date.now() + (yield* schedule.nextIntBetween(200, 1600))
          let nextLook = Date.now()
          let ended = false
          while (Date.now() < began + patience) {
            if (Date.now() >= nextLook) {
              if (yield* allEnded) {
                ended = true
                break
              }
              nextLook = Date.now() + 500
            }
            for (const [i, child] of children.entries()) {
              if (child.killed || (child.process.exitCode === null && child.process.signalCode === null)) continue
              unexpectedExits.push(
                `${child.name} (pid ${child.process.pid}) exited by itself (${
                  child.process.exitCode ?? child.process.signalCode
                }):\n${child.log.join("")}`
              )
              gone.push(child)
              children[i] = spawnChild(child.role, child.name)
            }
            if (killed.length < kills && Date.now() >= nextKill) {
              const i = yield* schedule.nextIntBetween(0, children.length)
              const victim = children[i]!
              victim.killed = true
              victim.process.kill("SIGKILL")
              yield* Effect.promise(() => victim.exited)
              killed.push(`${victim.name} (pid ${victim.process.pid}) at ${((Date.now() - began) / 1000).toFixed(1)} s`)
              gone.push(victim)
              children[i] = spawnChild(victim.role, victim.name)
              nextKill = Date.now() + (yield* schedule.nextIntBetween(200, 1600))
            }
            yield* Effect.sleep(50)
          }
          yield* Effect.promise(stopAll)
          const wall = (Date.now() - began) / 1000

          // What is left, read back.
          const runs = yield* app(Effect.flatMap(RunStore.RunStore, (store) => store.list()))
          const proposals = yield* app(Proposal.list())
          const audit: ReadonlyArray<Audit.Entry> = yield* app(SqlAudit.entries())
          const deliveries = readLines<Delivery>(ledger)
          const decisions = readLines<Decision>(journal)
          const unexpected = [...gone, ...children].flatMap((child) =>
            child.log.join("").split("\n").filter((line) => line.startsWith("{\"unexpected\""))
          )
          const findings: Findings = check({
            runIds: Array.from({ length: runCount }, (_, i) => `run-${i}`),
            runs,
            proposals,
            deliveries: deliveries.lines,
            decisions: decisions.lines,
            audit
          })

          const count = (items: ReadonlyArray<string>) =>
            items.reduce<Record<string, number>>((counts, item) => {
              counts[item] = (counts[item] ?? 0) + 1
              return counts
            }, {})
          const section = (title: string, items: ReadonlyArray<string>) =>
            [
              `${title}: ${items.length}`,
              ...items.slice(0, 30).map((item) => `  ${item}`),
              ...(items.length > 30 ? [`  ... and ${items.length - 30} more`] : [])
            ].join("\n")
          const report = [
            `kill -9 test on ${dialect}, GRADED_CRASH_SEED=${seed} GRADED_CRASH_RUNS=${runCount} GRADED_CRASH_KILLS=${kills}`,
            `${wall.toFixed(1)} s; ${
              ended ? "every run ended" : `gave up after ${patience / 1000} s`
            }; ${killed.length} kills: ${killed.join(", ")}`,
            `runs: ${JSON.stringify(count(runs.map((run) => run.state.ended?.status ?? run.status)))}; proposals: ${
              JSON.stringify(count(proposals.map((p) => p.status)))
            }; decisions journaled: ${
              JSON.stringify(count(decisions.lines.map((d) => d.mode)))
            }; ledger lines: ${deliveries.lines.length}; in doubt surfaced: ${
              audit.filter((e) => e.type === "in-doubt" && e.action === "surfaced").length
            }; audit entries: ${audit.length}, of which \`run\` entries ${
              audit.filter((e) => e.type === "run").length
            } (${audit.filter((e) => e.type === "run" && e.traceId !== undefined).length} under a trace)`,
            section("lost", findings.lost),
            section("delivered twice", findings.twice),
            section("delivered ≠ approved", findings.mismatched),
            section("audit gaps", findings.gaps),
            section("torn ledger or journal lines", [...deliveries.torn, ...decisions.torn]),
            section("unexpected errors in the processes", unexpected),
            section("processes that exited by themselves", unexpectedExits)
          ].join("\n")
          const summary = {
            lost: findings.lost.length,
            "delivered twice": findings.twice.length,
            "delivered ≠ approved": findings.mismatched.length,
            "audit gaps": findings.gaps.length,
            torn: deliveries.torn.length + decisions.torn.length,
            unexpected: unexpected.length + unexpectedExits.length
          }
          const clean = Object.values(summary).every((n) => n === 0)
          // A failure's report is the assertion's message; a pass prints it once, for the record.
          if (clean) console.log(report)
          else {
            // Kept for a look: the report, the ledger, the journal, the database file, the children's last words.
            const kept = path.join(artifacts, `killRandom-${slug}-${seed}`)
            fs.mkdirSync(kept, { recursive: true })
            for (const file of [ledger, journal, ...files]) {
              if (fs.existsSync(file)) fs.copyFileSync(file, path.join(kept, path.basename(file)))
            }
            fs.writeFileSync(path.join(kept, "report.txt"), `${report}\n`)
            fs.writeFileSync(
              path.join(kept, "children.txt"),
              [...gone, ...children].map((c) => `== ${c.name} pid ${c.process.pid}\n${c.log.join("")}`).join("\n")
            )
          }
          expect(summary, report).toEqual({
            lost: 0,
            "delivered twice": 0,
            "delivered ≠ approved": 0,
            "audit gaps": 0,
            torn: 0,
            unexpected: 0
          })
        }).pipe(Effect.scoped),
      patience + 120_000
    )
  })
}

suite("SQLite, one file", "sqlite", false, propertyRuns(50), async (dir) => {
  const filename = path.join(dir, "graded.db")
  return { store: filename, layer: Sql.sqlite({ filename }), files: [filename, `${filename}-wal`] }
})
suite(
  "PostgreSQL, the server GRADED_PG_URL names",
  "postgres",
  process.env.GRADED_PG_URL === undefined || process.env.GRADED_PG_URL === "",
  propertyRuns(250),
  async () => {
    const database = await createDatabase(process.env.GRADED_PG_URL!)
    cleanup.push(database.drop)
    return { store: database.url, layer: Sql.postgres({ url: database.url }), files: [] }
  }
)
