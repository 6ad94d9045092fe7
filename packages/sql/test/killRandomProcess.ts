// One process of killRandom.test.ts, on the store given; it works until the
// test kills it (SIGKILL, at a random time), and the test starts another in
// its place. Everything goes through graded's public API.
//
//   resume <name> <store> <ledger> <journal> <runs> <seed>
//     starts the runs run-0 ... run-<runs - 1> (a few at a time: while fewer
//     than `window` runs are open) and resumes each run that can go on (a
//     waiting run whose decisions are all in, a running one whose lease
//     passed). Each run's model reads, then books an entry (a write) and
//     tells the customer (a send), then answers.
//   decide <name> <store> <ledger> <journal> <runs> <seed>
//     as a human at a review page: recovers what dead processes left, retries
//     every in-doubt delivery (approving it again as shown), and decides every
//     pending proposal: approve, approve with an edit, or reject (on the card,
//     or with Proposal.reject), the same way for the same proposal whoever
//     decides it (drawn from the seed and the proposal's id). Before each
//     decision it journals what it approved. It never marks a delivery done.
//     Each decision runs under the run's trace, so the audit of a run holds
//     its decisions.
//
// <store> is a PostgreSQL URL or a SQLite file. Expected refusals (another
// process holds the run, another human decided first) are part of the work;
// anything else is printed on stderr as one JSON line `{"unexpected": ...}`,
// which the test reports, and the work goes on.
import { Cause, Effect, Layer, Random } from "effect"
import { HumanConfirm, Invocation, type LanguageModel, Proposal, Runs, RunStore, ScriptedModel } from "@graded/core"
import { Sql } from "@graded/sql"
import { appendLine, type Decision, makeLedgerDesk } from "./ledgerDesk.js"

const [role, name, store, ledger, journal, runsText, seed] = process.argv.slice(2) as Array<string>
const runs = Number(runsText)
const desk = makeLedgerDesk(ledger!)
const lease = "4 seconds"
// How many runs may be open at once: starts spread over the whole test, so
// that kills meet runs starting as well as runs finishing.
const window = 24
const { call, calls, text } = ScriptedModel

const unexpected = (what: string) => (cause: Cause.Cause<unknown>) =>
  Effect.sync(() => console.error(JSON.stringify({ unexpected: `${name} ${what}: ${Cause.pretty(cause)}` })))

// The model of a run: a read, then a write and a send, then the answer. The
// run and the call are in each call's arguments, so that the tools can name
// them in the ledger.
const turn = (runId: string) => (request: LanguageModel.Request): LanguageModel.Response => {
  const answered = request.messages.filter((message) => message.role === "assistant").length
  if (answered === 0) return calls(call("ledger.read", { runId, callId: "c1-read" }, "c1-read"))
  if (answered === 1) {
    return calls(
      call("ledger.write", { runId, callId: "c2-write", note: `settle ${runId}` }, "c2-write"),
      call("ledger.send", { runId, callId: "c2-send", text: `Your account ${runId} is settled.` }, "c2-send")
    )
  }
  return text(`Done with ${runId}.`)
}
const modelOf = (runId: string) => ScriptedModel.layer([turn(runId), turn(runId), turn(runId)])

const expectedTags = new Set([
  "@graded/core/RunStore/RunBusy",
  "@graded/core/RunStore/RunExists",
  "@graded/core/ProposalStore/AlreadyDecided",
  "@graded/core/ProposalStore/NotFound"
])
const expectedOr = (what: string, also: ReadonlySet<string> = new Set()) => <A, E, R>(self: Effect.Effect<A, E, R>) =>
  self.pipe(
    Effect.asVoid,
    Effect.catchIf(
      (error): error is E =>
        typeof error === "object" && error !== null && "_tag" in error &&
        (expectedTags.has(String(error._tag)) || also.has(String(error._tag))),
      () => Effect.void
    ),
    Effect.catchCause(unexpected(what))
  )

const resumer = Effect.gen(function*() {
  const store = yield* RunStore.RunStore
  const ids = Array.from({ length: runs }, (_, i) => `run-${i}`)
  // Runs this process knows were started (by anyone); the rest it may start.
  const started = new Set((yield* store.list()).map((run) => run.id))
  const order = Array.from(yield* Random.shuffle(ids))
  for (;;) {
    const now = new Date().toISOString()
    const open = [...(yield* store.list({ status: "waiting" })), ...(yield* store.list({ status: "running" }))]
    for (const run of open) started.add(run.id)
    let worked = false
    for (const run of yield* Random.shuffle(open)) {
      if (run.status === "running" && run.leaseUntil !== undefined && run.leaseUntil >= now) continue
      if (run.status === "waiting") {
        // While a decision is open, Runs.resume would answer `waiting` and touch nothing.
        const waitsOn = run.state.turn?.outcomes.flatMap((outcome) => "proposal" in outcome ? [outcome.proposal] : [])
        const proposals = yield* Proposal.list({ runId: run.id })
        const stillOpen = proposals.some((proposal) =>
          waitsOn?.includes(proposal.id) &&
          ["pending", "approving", "delivering", "in-doubt"].includes(proposal.status)
        )
        if (stillOpen) continue
      }
      worked = true
      yield* Runs.resume(run.id, { toolkit: desk, lease }).pipe(
        Effect.provide(modelOf(run.id)),
        expectedOr(`resuming ${run.id}`)
      )
    }
    let room = window - open.length
    for (const id of order) {
      if (room <= 0) break
      if (started.has(id)) continue
      started.add(id)
      room--
      worked = true
      yield* Runs.start({
        toolkit: desk,
        prompt: `Settle account ${id} and tell the customer.`,
        runId: id,
        lease,
        context: { actor: "agent:desk", traceId: `t-${id}` }
      }).pipe(Effect.provide(modelOf(id)), expectedOr(`starting ${id}`))
    }
    yield* Effect.sleep(worked ? 20 : 150)
  }
})

// The same decision for the same proposal, in any process: an approval that
// stopped half way is decided again the same way, with the same edit.
const decisionOf = (proposal: Proposal.Proposal) =>
  Effect.map(
    Random.withSeed(Random.next, `${seed}/${proposal.id}`),
    (draw): Decision["mode"] => draw < 0.45 ? "approve" : draw < 0.8 ? "edit" : "reject"
  )

const editOf = (proposal: Proposal.Proposal) => {
  const payload = proposal.payload as Record<string, string>
  return proposal.tool === "ledger.write"
    ? { ...payload, note: `${payload.note} (edited on ${proposal.id})` }
    : { ...payload, text: `${payload.text} (edited on ${proposal.id})` }
}

const by = `agent:${name}`
// A human who takes a moment to read the card, then answers.
const human = (answer: (view: HumanConfirm.View) => HumanConfirm.Decision): HumanConfirm.UI => ({
  confirm: (view) => Effect.delay(Effect.sync(() => answer(view)), Math.floor(Math.random() * 100))
})
const as = (proposal: Proposal.Proposal) => Invocation.within({ actor: by, traceId: proposal.traceId })

const record = (proposal: Proposal.Proposal, mode: Decision["mode"], payload?: unknown) =>
  Effect.sync(() =>
    appendLine(
      journal!,
      {
        by,
        pid: process.pid,
        proposal: proposal.id,
        runId: proposal.runId,
        callId: proposal.callId,
        tool: proposal.tool,
        mode,
        ...(payload === undefined ? {} : { payload })
      } satisfies Decision
    )
  )

const decideOne = (proposal: Proposal.Proposal) =>
  Effect.gen(function*() {
    const mode = yield* decisionOf(proposal)
    const reason = `not for ${proposal.runId}`
    if (mode === "reject") {
      yield* record(proposal, mode)
      // Half on the card, half with Proposal.reject.
      const onCard = (yield* Random.withSeed(Random.next, `${seed}/${proposal.id}/card`)) < 0.5
      return yield* onCard
        ? Proposal.approve(desk, proposal.id, { lease }).pipe(
          Effect.provide(HumanConfirm.layer(human(() => HumanConfirm.reject(by, reason)))),
          as(proposal),
          expectedOr(`rejecting ${proposal.id} on its card`, new Set(["@graded/core/ToolError/Rejected"]))
        )
        : Proposal.reject(proposal.id, { by, reason }).pipe(as(proposal), expectedOr(`rejecting ${proposal.id}`))
    }
    const approved = mode === "edit" ? editOf(proposal) : proposal.payload
    yield* record(proposal, mode, approved)
    yield* Proposal.approve(desk, proposal.id, { lease }).pipe(
      Effect.provide(
        HumanConfirm.layer(human(() => mode === "edit" ? HumanConfirm.approve(by, approved) : HumanConfirm.approve(by)))
      ),
      as(proposal),
      expectedOr(`approving ${proposal.id}`)
    )
  })

const retryOne = (proposal: Proposal.Proposal) =>
  Effect.andThen(
    record(proposal, "retry"),
    Proposal.retry(desk, proposal.id, { lease }).pipe(
      Effect.provide(HumanConfirm.layer(human(() => HumanConfirm.approve(by)))),
      as(proposal),
      expectedOr(`retrying ${proposal.id}`)
    )
  )

const decider = Effect.gen(function*() {
  for (;;) {
    yield* Proposal.recover
    const inDoubt = yield* Proposal.list({ status: "in-doubt" })
    for (const proposal of yield* Random.shuffle(inDoubt)) yield* retryOne(proposal)
    // A few at a time, then a fresh look: the other decider takes some meanwhile.
    const pending = Array.from(yield* Random.shuffle(yield* Proposal.list({ status: "pending" }))).slice(0, 8)
    for (const proposal of pending) yield* decideOne(proposal)
    if (inDoubt.length === 0 && pending.length === 0) yield* Effect.sleep(100)
  }
})

// A child whose test process died (a timeout, a crash) stops too, rather than work on forever.
const parent = process.ppid
setInterval(() => {
  if (process.ppid !== parent) process.exit(2)
}, 1000).unref()

const layer = /^postgres(ql)?:/.test(store!)
  ? Layer.orDie(Sql.postgres({ url: store! }))
  : Layer.orDie(Sql.sqlite({ filename: store! }))
const program = Effect.gen(function*() {
  console.log("ready")
  return yield* role === "resume" ? resumer : role === "decide" ? decider : Effect.die(new Error(`no role ${role}`))
}).pipe(
  Random.withSeed(`${seed}/${name}/${process.pid}`),
  Effect.provide(layer)
)

Effect.runPromise(program).then(
  () => process.exit(0),
  (error) => {
    console.error(error)
    process.exit(1)
  }
)
