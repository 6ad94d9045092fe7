// A property over durable runs (issue 33): random scripted runs on the desk of
// propertyDesk.ts (reads; an untrusted read and an untrusted write, after
// which the open-world read must be refused; facts a read and a write record,
// and a guard on them that hides one write and refuses another; writes and a
// send the human approves, edits, or rejects on the card or with
// Proposal.reject; repeated calls; round and call limits), with a restart (a
// new store layer on the same database: a new "process") at random before
// any step (start, each decision, each resume), and at random a resume while
// decisions are open, which must answer "waiting".
//
// Each scenario runs as a durable run in memory, on SQLite and on PGlite (and
// on the server GRADED_PG_URL names, when set), with the same restarts, and
// as Agent.supervised under a HumanConfirm that decides the same way. Checked:
// - every store ends as memory does: the same calls (id, tool, ok or code,
//   input and output), answer (the model's last turn says what it was told of
//   each call: ok with its data, or the code), untrusted marks and outside
//   ledger (what each tool did, with which payload), and the same audit of
//   the run's trace (each entry's type, tool, decision, edit, who, gate,
//   status, offer; no times, ids, keys or reasons);
// - the memory run ends as Agent.supervised does (calls, answer, untrusted,
//   ledger, and the audit where no proposal was rejected with
//   Proposal.reject, which a human at a card does not do): one loop runs both. Memory's stores outlive its
//   "processes", so a restart there changes nothing: this is the run without
//   restarts.
// - and, whatever the loops agree on, no open-world read ran once untrusted
//   content had entered the run, and the run is marked with exactly the
//   untrusted tools whose results it took in.
//
// Sized by GRADED_PROPERTY_SCALE (test/propertyRuns.ts): the examples below,
// always, and 12 random scenarios times the scale (.ci/run's 4 tries about
// the 50 this used to); GRADED_PROPERTY_SEED sets the checker's seed (printed,
// so that a failure can be played again).
import { afterAll, beforeAll, describe, it } from "@effect/vitest"
import { Effect, Exit, Layer, Scope } from "effect"
import * as Arbitrary from "effect/Arbitrary"
import { Agent, Audit, Guard, Invocation, Proposal, ProposalStore, Runs, RunStore } from "@graded/core"
import { Sql, SqlAudit } from "@graded/sql"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { propertyRuns } from "../../../test/propertyRuns.js"
import { type Arb, boolean, constantFrom, integer, oneof } from "../../../test/arbitraries.js"
import { createDatabase, startPglite } from "./databases.js"
import {
  by,
  type Call,
  type Choice,
  choiceFor,
  confirmable,
  human,
  type Line,
  makeDesk,
  model,
  frozenAccount,
  reads,
  reason,
  type Scenario,
  untrustedTools
} from "./propertyDesk.js"
import type { GradedDatabase } from "./storeClient.js"

const envNumber = (name: string) => {
  const value = process.env[name]
  return value === undefined || value === "" ? undefined : Number(value)
}
const seed = envNumber("GRADED_PROPERTY_SEED") ?? Math.floor(Math.random() * 2 ** 31)

type Stores = ProposalStore.ProposalStore | RunStore.RunStore | Audit.Audit

interface Database {
  readonly name: string
  /** A new process's layer on the database. */
  readonly process: () => Layer.Layer<Stores, unknown>
  /** The audit entries of one trace, read back after. */
  readonly trail: (traceId: string) => Effect.Effect<ReadonlyArray<Audit.Entry>, unknown>
}

// A memory store for one scenario: built once, every "process" a new layer on it.
const memory = Effect.gen(function*() {
  const stores = yield* Layer.build(Layer.merge(ProposalStore.memory, RunStore.memory))
  const audit = Audit.memory()
  return {
    name: "memory",
    process: () => Layer.merge(Layer.succeedContext(stores), audit.layer),
    trail: (traceId) => Effect.sync(() => audit.entries.filter((entry) => entry.traceId === traceId))
  } satisfies Database
})

// A SQL database shared by every scenario: each has a run and a trace of its own.
const onSql = (name: string, open: () => Layer.Layer<Stores | GradedDatabase, unknown>): Database => ({
  name,
  process: open,
  trail: (traceId) => Effect.scoped(Effect.provide(SqlAudit.trace(traceId), open()))
})

// ---------------------------------------------------------------------------
// The scenarios
// ---------------------------------------------------------------------------

const tools = [...reads, ...confirmable]
const call: Arb<Call> = Arbitrary.all({ tool: constantFrom(...tools), arg: integer(0, 2) })
const choice: Arb<Choice> = oneof(
  { weight: 3, arbitrary: Arbitrary.Constant("approve") },
  { weight: 2, arbitrary: Arbitrary.Constant("edit") },
  { weight: 1, arbitrary: Arbitrary.Constant("reject") },
  { weight: 1, arbitrary: Arbitrary.Constant("reject-store") }
)

interface Plan {
  readonly scenario: Scenario
  /** Before step i of a durable run: a restart first (cycled). */
  readonly restarts: ReadonlyArray<boolean>
  /** Before deciding a proposal: a resume first, which must answer "waiting" (cycled). */
  readonly polls: ReadonlyArray<boolean>
}

const plans: Arb<Plan> = Arbitrary.map(
  Arbitrary.all({
    turns: Arbitrary.array(Arbitrary.array(call, { minLength: 1, maxLength: 3 }), { minLength: 1, maxLength: 4 }),
    choices: Arbitrary.array(choice, { minLength: confirmable.length * 3, maxLength: confirmable.length * 3 }),
    // Mostly enough rounds for the script; now and then a limit it reaches.
    rounds: oneof(
      { weight: 6, arbitrary: Arbitrary.Constant(undefined) },
      { weight: 1, arbitrary: integer(1, 4) }
    ),
    maxCallsPerRound: oneof(
      { weight: 6, arbitrary: Arbitrary.Constant(8) },
      { weight: 1, arbitrary: integer(1, 2) }
    ),
    restarts: Arbitrary.array(boolean, { minLength: 1, maxLength: 40 }),
    polls: Arbitrary.array(boolean, { minLength: 1, maxLength: 10 })
  }),
  ({ choices, maxCallsPerRound, polls, restarts, rounds, turns }) => ({
    scenario: { turns, choices, maxRounds: rounds ?? turns.length + 1, maxCallsPerRound },
    restarts,
    polls
  })
)

// Cases this property found, played first on every run (issue 33). Each has
// a restart before every step and a resume before every decision.
const example = (turns: Scenario["turns"], choices: Partial<Record<string, Choice>> = {}): Plan => ({
  scenario: {
    turns,
    choices: confirmable.flatMap((tool) => [0, 1, 2].map((arg) => choices[`${tool}/${arg}`] ?? "approve")),
    maxRounds: turns.length + 1,
    maxCallsPerRound: 8
  },
  restarts: [true],
  polls: [true]
})
const examples: ReadonlyArray<Plan> = [
  // A call the human rejected, called again with the same arguments: the
  // durable run asked the human again (a second proposal), Agent.supervised
  // refuses it without asking (gate repeat). Fixed: a rejection folded into
  // a durable run is remembered as one decided at once is.
  example([[{ tool: "ticket.submit", arg: 0 }], [{ tool: "ticket.submit", arg: 0 }]], { "ticket.submit/0": "reject" }),
  // A read records a fact, then one turn freezes the account and pays: under
  // Agent.supervised the payment was refused by the guard when the human
  // answered at once (the freeze, delivered first, reached its sibling) and
  // delivered when they took a few milliseconds; the durable run judges it
  // when it is proposed. Fixed: a supervised turn's writes and sends are all
  // judged before any is decided.
  example([[{ tool: "account.check", arg: 0 }], [{ tool: "account.freeze", arg: 0 }, {
    tool: "payments.send",
    arg: 0
  }]]),
  // An edited write: Agent.supervised's calls gave the input the model asked
  // for, a durable run's the input the human approved. Fixed: one loop.
  example([[{ tool: "ticket.submit", arg: 0 }]], { "ticket.submit/0": "edit" })
]

// ---------------------------------------------------------------------------
// Running a scenario
// ---------------------------------------------------------------------------

interface Ending {
  readonly stopped: string
  readonly answer: string | undefined
  readonly untrusted: ReadonlyArray<string>
  readonly calls: ReadonlyArray<Record<string, unknown>>
  readonly ledger: ReadonlyArray<Line>
}

const ending = (result: Agent.Result<any>, ledger: ReadonlyArray<Line>): Ending => ({
  stopped: result.stopped,
  answer: result.answer,
  untrusted: [...result.untrusted],
  calls: result.calls.map((c) =>
    c.ok
      ? { id: c.id, tool: c.tool, ok: true, input: c.input, output: c.output }
      : { id: c.id, tool: c.tool, ok: false, code: c.error.code }
  ),
  ledger: [...ledger]
})

// An audit entry without what differs between stores and runs: times, ids, keys, reasons.
const shape = (entry: Audit.Entry): Record<string, unknown> => {
  const kept: Record<string, unknown> = { type: entry.type, actor: entry.actor, autonomous: entry.autonomous }
  const fields = entry as unknown as Record<string, unknown>
  for (const key of ["tool", "decision", "edited", "by", "gate", "status", "grade", "rounds", "pending", "tools"]) {
    if (fields[key] !== undefined) kept[key] = fields[key]
  }
  if (entry.type === "offered") kept.suppressed = entry.suppressed.map((left) => `${left.tool} (${left.gate})`)
  if (entry.type === "run") kept.proposals = entry.proposals?.length
  if (entry.type === "called") kept.input = entry.input
  return kept
}

const prompt = "Help the customer."
const guarded = Guard.within(frozenAccount)

const supervised = (scenario: Scenario, traceId: string) =>
  Effect.gen(function*() {
    const desk = makeDesk()
    const audit = Audit.memory()
    const result = yield* Agent.supervised({
      toolkit: desk.toolkit,
      prompt,
      maxRounds: scenario.maxRounds,
      maxCallsPerRound: scenario.maxCallsPerRound,
      context: { actor: "agent:bot", traceId }
    }).pipe(guarded, Effect.provide(human(scenario)), Effect.provide(model(scenario)), Effect.provide(audit.layer))
    return {
      ending: ending(result, desk.ledger),
      audit: audit.entries.filter((entry) => entry.traceId === traceId).map(shape)
    }
  })

const asSupervisor = Invocation.within({ actor: "agent:bot" })

const cycled = (flags: ReadonlyArray<boolean>, i: number) => flags[i % flags.length] === true

/** A durable run of the scenario on `database`, as `runId`: each step in the current process, or a new one. */
const durable = (plan: Plan, database: Database, runId: string) =>
  Effect.gen(function*() {
    const { scenario } = plan
    const desk = makeDesk()
    const { toolkit } = desk
    let scope = yield* Scope.make()
    // A run that fails closes its last process too.
    yield* Effect.addFinalizer(() => Effect.suspend(() => Scope.close(scope, Exit.void)))
    let context = yield* Layer.buildWithScope(database.process(), scope)
    let steps = 0
    let restarts = 0
    let polls = 0
    let polled = 0
    // Proposal.reject, which Agent.supervised's human (on a card) has no
    // means to: the audit says so, and differs from its.
    let rejectedInStore = false
    const step = <A, E>(effect: Effect.Effect<A, E, Stores>) =>
      Effect.gen(function*() {
        if (cycled(plan.restarts, steps++)) {
          yield* Scope.close(scope, Exit.void)
          scope = yield* Scope.make()
          context = yield* Layer.buildWithScope(database.process(), scope)
          restarts++
        }
        return yield* Effect.provide(effect, context)
      })
    const resume = step(Runs.resume(runId, { toolkit }).pipe(guarded, Effect.provide(model(scenario))))
    let outcome = yield* step(
      Runs.start({
        toolkit,
        prompt,
        runId,
        maxRounds: scenario.maxRounds,
        maxCallsPerRound: scenario.maxCallsPerRound,
        context: { actor: "agent:bot", traceId: runId }
      }).pipe(guarded, Effect.provide(model(scenario)))
    )
    for (let round = 0; outcome.status === "waiting"; round++) {
      if (round > 10) return yield* Effect.die(new Error(`${database.name}: the run still waits after ${round} rounds`))
      for (const proposal of outcome.pending) {
        if (cycled(plan.polls, polls++)) {
          polled++
          const answered = yield* resume
          if (answered.status !== "waiting") {
            return yield* Effect.die(new Error(`${database.name}: a resume with ${proposal.id} open went on`))
          }
        }
        const chosen = choiceFor(scenario, proposal.tool, proposal.payload)
        // The human decides as the one Agent.supervised names in its context.
        if (chosen === "reject-store") {
          rejectedInStore = true
          yield* step(Proposal.reject(proposal.id, { by, reason: reason(chosen) }).pipe(asSupervisor))
          continue
        }
        const decided = yield* step(
          Effect.result(Proposal.approve(toolkit, proposal.id).pipe(Effect.provide(human(scenario)), asSupervisor))
        )
        const rejected = decided._tag === "Failure" && decided.failure._tag === "@graded/core/ToolError/Rejected"
        if (rejected !== (chosen === "reject")) {
          return yield* Effect.die(
            new Error(
              `${database.name}: ${chosen} of ${proposal.tool} answered ${JSON.stringify(decided)}`
            )
          )
        }
      }
      outcome = yield* resume
    }
    yield* Scope.close(scope, Exit.void)
    if (outcome.status !== "finished") {
      return yield* Effect.die(new Error(`${database.name}: the run was ${outcome.status}`))
    }
    const audit = yield* database.trail(runId)
    return {
      ending: ending(outcome.result, desk.ledger),
      audit: audit.map(shape),
      restarts,
      steps,
      polls: polled,
      rejectedInStore
    }
  })

// ---------------------------------------------------------------------------
// The property
// ---------------------------------------------------------------------------

// What the scenarios exercised, printed at the end: a property that passes
// only because it never reached a case is seen to.
const seen = new Map<string, number>()
const count = (key: string, by = 1) => seen.set(key, (seen.get(key) ?? 0) + by)

let trials = 0

// Where two values first differ, as a path and both values: fast-check
// prints the message, where an assertion's diff would be cut short.
const difference = (got: unknown, want: unknown, at = ""): string | undefined => {
  if (JSON.stringify(got) === JSON.stringify(want)) return undefined
  if (typeof got === "object" && got !== null && typeof want === "object" && want !== null) {
    for (const key of new Set([...Object.keys(got), ...Object.keys(want)])) {
      const found = difference(
        (got as Record<string, unknown>)[key],
        (want as Record<string, unknown>)[key],
        `${at}.${key}`
      )
      if (found !== undefined) return found
    }
  }
  return `${at}: ${JSON.stringify(got)}, where ${JSON.stringify(want)}`
}
const same = (what: string, got: unknown, want: unknown) => {
  const found = difference(got, want)
  if (found !== undefined) throw new Error(`${what} differs at ${found}`)
}

const trial = (plan: Plan, databases: ReadonlyArray<Database>) =>
  Effect.scoped(Effect.gen(function*() {
    const runId = `run-${seed}-${++trials}`
    const { scenario } = plan
    const expected = yield* supervised(scenario, runId)
    const reference = yield* durable(plan, yield* memory, runId)
    same("the durable run in memory and Agent.supervised: the ending", reference.ending, expected.ending)
    if (!reference.rejectedInStore) {
      same("the durable run in memory and Agent.supervised: the audit", reference.audit, expected.audit)
      count("audits compared with Agent.supervised")
    }
    // What holds whatever the loops agree on: no open-world read ran once
    // untrusted content had entered the run, and the run is marked with each
    // untrusted tool whose result it took in.
    const { calls, ledger, untrusted } = reference.ending
    const entered = ledger.findIndex((line) => untrustedTools.has(line.tool))
    if (entered >= 0 && ledger.slice(entered).some((line) => line.tool === "web.fetch")) {
      throw new Error(`an open-world read ran after untrusted content: ${JSON.stringify(ledger)}`)
    }
    same(
      "the untrusted marks and the untrusted results taken in",
      [...untrusted].sort(),
      [...new Set(calls.flatMap((c) => c.ok === true && untrustedTools.has(String(c.tool)) ? [String(c.tool)] : []))]
        .sort()
    )
    for (const database of databases) {
      const got = yield* durable(plan, database, runId)
      same(`${database.name} and memory: the ending`, got.ending, reference.ending)
      same(`${database.name} and memory: the audit`, got.audit, reference.audit)
      count("restarts", got.restarts)
      count("steps", got.steps)
    }
    for (const c of reference.ending.calls) count(c.ok === true ? `${String(c.tool)} ok` : `${String(c.code)}`)
    for (const entry of reference.audit) {
      if (entry.type === "decided") {
        count(`decided ${String(entry.decision)}${entry.edited === true ? " (edited)" : ""}`)
      }
      if (entry.type === "refused") count(`refused at ${String(entry.gate)}`)
    }
    count("polls", reference.polls)
    count("delivered", reference.ending.ledger.length)
  }))

describe("durable runs at random", () => {
  let pglite: Awaited<ReturnType<typeof startPglite>> | undefined
  let server: Awaited<ReturnType<typeof createDatabase>> | undefined
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "graded-property-"))
  beforeAll(async () => {
    pglite = await startPglite()
    const serverUrl = process.env.GRADED_PG_URL
    if (serverUrl !== undefined && serverUrl !== "") server = await createDatabase(serverUrl)
  }, 120_000)
  afterAll(async () => {
    await pglite?.stop()
    await server?.drop()
    fs.rmSync(dir, { recursive: true, force: true })
  })

  it("end alike in memory, on SQLite and on PostgreSQL, with restarts anywhere, and as Agent.supervised", async () => {
    const filename = path.join(dir, "graded.db")
    const databases = [
      onSql("Sql.sqlite", () => Sql.sqlite({ filename })),
      onSql("Sql.postgres on PGlite", () => Sql.postgres({ url: pglite!.url, maxConnections: 4 })),
      ...(server === undefined
        ? []
        : [onSql("Sql.postgres (GRADED_PG_URL)", () => Sql.postgres({ url: server!.url, maxConnections: 4 }))])
    ]
    // The examples first, every time; then the random scenarios, on top, so every scale runs them all.
    const runs = propertyRuns(12)
    console.log(`durable runs property: ${examples.length + runs} scenarios, GRADED_PROPERTY_SEED=${seed}`)
    for (const plan of examples) await Effect.runPromise(trial(plan, databases))
    // A check that fails (a defect: `same` throws) is a failure the checker shrinks.
    const checked = await Effect.runPromise(Arbitrary.checkEffect(
      plans,
      (plan) => Effect.as(Effect.catchDefect(trial(plan, databases), Effect.fail), true),
      { runs, seed }
    ))
    const failure = Arbitrary.formatCheckFailure(checked)
    if (failure !== undefined) throw new Error(failure)
    console.log(`${trials} scenarios: ${[...seen].sort().map(([key, n]) => `${key} ${n}`).join(", ")}`)
  }, 600_000)
})
