// Deterministic faults for the durable suites: every write graded's stores
// and audit sink make is counted, across all the "processes" of a test (each
// a new layer on the same database, nothing kept in memory), and the k-th is
// where the fault lands.
// - `kill`: the process dies at write k, before it is made: that write and
//   every later step of that process (reads too) do nothing, as under kill -9;
//   an open transaction is rolled back. The next process starts clean.
// - `fail`: write k fails once, as a store refusing it (a lock held, a full
//   disk); the process goes on.
// Also here: the scenario the suites drive (a run with a read, an edited write
// and a send), an outside ledger of what its tools delivered, and the checks
// of the four zeros.
import { Context, Effect, Layer, Schema } from "effect"
import {
  Agent,
  Audit,
  HumanConfirm,
  LanguageModel,
  Proposal,
  ProposalStore,
  Runs,
  RunStore,
  ScriptedModel,
  Tool,
  Toolkit
} from "@graded/core"

export interface Plan {
  readonly mode: "kill" | "fail" | "none"
  readonly at: number
  /** Writes made so far, by every process. */
  writes: number
  /** The current process was killed: it does nothing more. */
  dead: boolean
  /** Each write by name, in order: what a failure message names. */
  readonly log: Array<string>
}

export const plan = (mode: Plan["mode"], at = 0): Plan => ({ mode, at, writes: 0, dead: false, log: [] })

export class Killed extends Error {
  constructor(readonly at: number) {
    super(`the process was killed at write ${at}`)
  }
}

// Before a write: count it, and land the fault on the k-th.
const beforeWrite = (faults: Plan, name: string) =>
  Effect.suspend(() => {
    if (faults.dead) return Effect.die(new Killed(faults.at))
    faults.writes++
    faults.log.push(name)
    if (faults.writes !== faults.at) return Effect.void
    if (faults.mode === "kill") faults.dead = true
    return faults.mode === "none" ? Effect.void : Effect.die(new Error(`the store failed write ${faults.at}`))
  })
const beforeRead = (faults: Plan) => Effect.suspend(() => faults.dead ? Effect.die(new Killed(faults.at)) : Effect.void)

const writing = <A extends ReadonlyArray<unknown>, B, E>(
  faults: Plan,
  name: string,
  method: (...args: A) => Effect.Effect<B, E>
) =>
(...args: A) => Effect.andThen(beforeWrite(faults, name), Effect.suspend(() => method(...args)))
const reading =
  <A extends ReadonlyArray<unknown>, B, E>(faults: Plan, method: (...args: A) => Effect.Effect<B, E>) => (...args: A) =>
    Effect.andThen(beforeRead(faults), Effect.suspend(() => method(...args)))

const proposalsWith = (faults: Plan, store: ProposalStore.ProposalStore.Service): ProposalStore.ProposalStore.Service =>
  ProposalStore.guardDecisions({
    add: writing(faults, "add", store.add),
    get: reading(faults, store.get),
    list: reading(faults, store.list),
    claim: writing(faults, "claim", store.claim),
    retry: writing(faults, "retry", store.retry),
    renew: writing(faults, "renew", store.renew),
    beginDelivery: writing(faults, "beginDelivery", store.beginDelivery),
    expire: writing(faults, "expire", store.expire),
    reject: writing(faults, "reject", store.reject),
    settle: writing(faults, "settle", store.settle),
    ...(store.withTransaction !== undefined ? { withTransaction: store.withTransaction } : {})
  })

const runsWith = (faults: Plan, store: RunStore.RunStore.Service): RunStore.RunStore.Service => ({
  create: writing(faults, "create", store.create),
  get: reading(faults, store.get),
  list: reading(faults, store.list),
  claim: writing(faults, "claim", store.claim),
  save: writing(faults, "save", store.save),
  ...(store.withTransaction !== undefined ? { withTransaction: store.withTransaction } : {})
})

/**
 * One process on `base`: its stores and sink with the faults of `faults`.
 * In `fail` mode the sink is left as it is: a sink that cannot write logs and
 * goes on outside a transaction, and fails the step inside one.
 */
export const faulty = <E>(
  base: Layer.Layer<ProposalStore.ProposalStore | RunStore.RunStore | Audit.Audit, E>,
  faults: Plan
): Layer.Layer<ProposalStore.ProposalStore | RunStore.RunStore | Audit.Audit, E> =>
  Layer.effectContext(Effect.map(Layer.build(base), (context) => {
    const sink = Context.get(context, Audit.Audit)
    return Context.make(
      ProposalStore.ProposalStore,
      proposalsWith(faults, Context.get(context, ProposalStore.ProposalStore))
    )
      .pipe(
        Context.add(RunStore.RunStore, runsWith(faults, Context.get(context, RunStore.RunStore))),
        Context.add(
          Audit.Audit,
          faults.mode === "kill" ? {
            write: (entry: Audit.Entry) => Effect.andThen(beforeWrite(faults, `audit ${entry.type}`), sink.write(entry))
          }
            : sink
        )
      )
  }))

// ---------------------------------------------------------------------------
// The scenario
// ---------------------------------------------------------------------------

/** What went out, as the outside system saw it: a line a delivery. */
export interface Delivered {
  readonly tool: string
  readonly key: string
  readonly payload: unknown
}

export const originalSubject = "Printer on fire"
export const editedSubject = "Printer on fire (edited by alice)"
export const message = "We are sending a technician."

const deskInstructions = "You are the support desk: look it up, file the ticket, tell the customer."

/**
 * The scenario, flat (the outer run holds the tools) or nested (`nested`:
 * the outer run holds one sub-agent, agent.desk, that holds them; its run is
 * a nested durable run, its proposals approved through the outer toolkit).
 */
export const makeScenario = (nested = false) => {
  const ledger: Array<Delivered> = []
  // Each model turn asked, by the number of answers the conversation holds.
  const asked: Array<number> = []
  const Search = Tool.read("kb.search", {
    title: "Search the knowledge base",
    description: "Find articles.",
    input: Schema.Struct({ query: Schema.String }),
    output: Schema.Array(Schema.Struct({ title: Schema.String })),
    run: ({ query }) => Effect.succeed([{ title: `About ${query}` }])
  })
  const Submit = Tool.write("ticket.submit", {
    title: "Submit a ticket",
    description: "File a ticket.",
    input: Schema.Struct({ subject: Schema.String }),
    output: Schema.Struct({ id: Schema.String }),
    run: ({ subject }, { idempotencyKey }) =>
      Effect.sync(() => {
        ledger.push({ tool: "ticket.submit", key: idempotencyKey, payload: { subject } })
        return { id: "T-1" }
      })
  })
  const Send = Tool.send("chat.sendMessage", {
    title: "Send a chat message",
    description: "Send a message to the customer.",
    input: Schema.Struct({ text: Schema.String }),
    payload: Schema.Struct({ to: Schema.String, text: Schema.String }),
    output: Schema.Struct({ delivered: Schema.Boolean }),
    prepare: ({ text }) => Effect.succeed({ to: "customer:42", text }),
    deliver: (confirmed) =>
      Effect.sync(() => {
        ledger.push({ tool: "chat.sendMessage", key: confirmed.idempotencyKey, payload: confirmed.payload })
        return { delivered: true }
      })
  })
  const desk = Toolkit.make(Search, Submit, Send)
  const toolkit = nested
    ? Toolkit.make(Agent.tool("agent.desk", {
      title: "Support desk",
      description: "Files tickets and tells customers.",
      toolkit: desk,
      instructions: deskInstructions,
      input: Schema.Struct({ issue: Schema.String })
    }))
    : desk
  const { call, calls, text } = ScriptedModel
  // The model answers by where the conversation is, whichever process asks
  // (nested: the outer run calls the desk, then answers with what it said).
  const model = Layer.succeed(LanguageModel.LanguageModel, {
    generate: (request) =>
      Effect.sync(() => {
        const answers = request.messages.filter((m) => m.role === "assistant").length
        const inner = request.messages[0]?.role === "system" && request.messages[0].content === deskInstructions
        asked.push(nested && !inner ? 10 + answers : answers)
        if (nested && !inner) {
          return answers === 0 ? calls(call("agent.desk", { issue: "printer on fire" }, "c-desk")) : text("Done.")
        }
        return answers === 0 ? calls(call("kb.search", { query: "printer" }, "c-read"))
          : answers === 1
          ? calls(
            call("ticket.submit", { subject: originalSubject }, "c-write"),
            call("chat.sendMessage", { text: message }, "c-send")
          )
          : text("Filed and told.")
      })
  })
  // Alice edits the write's subject the first time she sees it, approves the
  // rest; a retry she approves as it stands.
  const alice = HumanConfirm.layer({
    confirm: (view) =>
      Effect.succeed(
        view.tool === "ticket.submit" && (view.payload as { subject?: string }).subject === originalSubject
          ? HumanConfirm.approve("alice", { subject: editedSubject })
          : HumanConfirm.approve("alice")
      )
  })
  // The runs whose turns are audited: the outer one, and the desk's.
  return { ledger, asked, toolkit, model, alice, levels: nested ? 2 : 1 }
}

export type Scenario = ReturnType<typeof makeScenario>

export const runId = "run-faults"
// Short leases: each process runs after the last one stopped, so whatever it
// held has lapsed by the time the next one looks.
const lease = "1 millis"

/**
 * One process: settle what a dead one left, start or resume the run, decide
 * every proposal the human sees (approve a pending one, retry one in doubt),
 * and resume again, until the run finishes. Succeeds with whether it did.
 */
export const process = (scenario: Scenario) =>
  Effect.gen(function*() {
    yield* Proposal.recover
    const existing = yield* Effect.result(RunStore.RunStore.pipe(Effect.flatMap((runs) => runs.get(runId))))
    let outcome = existing._tag === "Failure"
      ? yield* Runs.start({ toolkit: scenario.toolkit, prompt: "The printer is on fire.", runId, lease })
      : yield* Runs.resume(runId, { toolkit: scenario.toolkit, lease })
    for (let round = 0; outcome.status === "waiting" && round < 10; round++) {
      // Every proposal of the run's tree (the desk's too): one run a trial.
      for (const proposal of yield* Proposal.list()) {
        if (proposal.status === "pending") {
          yield* Effect.ignore(Proposal.approve(scenario.toolkit, proposal.id, { lease }))
        }
        if (proposal.status === "in-doubt") {
          yield* Effect.ignore(Proposal.retry(scenario.toolkit, proposal.id, { lease }))
        }
      }
      outcome = yield* Runs.resume(runId, { toolkit: scenario.toolkit, lease })
    }
    return outcome.status === "finished"
  }).pipe(Effect.provide(scenario.alice), Effect.provide(scenario.model))

/**
 * Runs processes on `open()` (a new layer each, with the plan's faults) until
 * the run finishes; a process that dies or fails is followed by a new one.
 */
export const drive = <E>(
  scenario: Scenario,
  open: () => Layer.Layer<ProposalStore.ProposalStore | RunStore.RunStore | Audit.Audit, E>,
  faults: Plan
) =>
  Effect.gen(function*() {
    for (let started = 0; started < 12; started++) {
      const finished = yield* process(scenario).pipe(
        Effect.provide(faulty(open(), faults)),
        Effect.scoped,
        Effect.catchCause(() => Effect.succeed(false))
      )
      faults.dead = false
      if (finished) return started + 1
    }
    return yield* Effect.die(
      new Error(
        `the run did not finish in 12 processes (${faults.mode} at ${faults.at}): ${faults.log.join(", ")}`
      )
    )
  })

/** The four zeros, as counts, with what broke each. */
export const check = (
  maxAsks: number,
  scenario: Scenario,
  proposals: ReadonlyArray<Proposal.Proposal>,
  audit: ReadonlyArray<Audit.Entry>
) => {
  const problems: Array<string> = []
  const approved: Record<string, unknown> = {
    "ticket.submit": { subject: editedSubject },
    "chat.sendMessage": { to: "customer:42", text: message }
  }
  for (const tool of ["ticket.submit", "chat.sendMessage"]) {
    const lines = scenario.ledger.filter((line) => line.tool === tool)
    const keys = new Set(lines.map((line) => line.key))
    const mine = proposals.filter((proposal) => proposal.tool === tool)
    // Lost: the approved call never went out, and nobody is asked about it.
    if (lines.length === 0 && !mine.some((proposal) => proposal.status === "in-doubt")) problems.push(`lost: ${tool}`)
    // Twice: by model call, more than one proposal or more than one key.
    if (mine.length > 1) problems.push(`twice: ${tool} has ${mine.length} proposals`)
    if (keys.size > 1) problems.push(`twice: ${tool} went out under ${keys.size} keys`)
    for (const line of lines) {
      if (JSON.stringify(line.payload) !== JSON.stringify(approved[tool])) {
        problems.push(`not approved: ${tool} delivered ${JSON.stringify(line.payload)}`)
      }
    }
    // Audit: each delivered proposal has its proposed, decided and delivered entries on the run's trace.
    for (const proposal of mine) {
      const has = (type: string, extra: (entry: Audit.Entry) => boolean = () => true) =>
        audit.some((entry) => entry.type === type && "tool" in entry && entry.tool === tool && extra(entry))
      if (!audit.some((entry) => entry.type === "proposed" && entry.proposal === proposal.id)) {
        problems.push(`audit: no proposed entry for ${proposal.id}`)
      }
      if (proposal.status === "delivered") {
        if (!has("decided", (entry) => entry.type === "decided" && entry.decision === "approved")) {
          problems.push(`audit: no approval of ${tool}`)
        }
        if (!has("delivered")) problems.push(`audit: no delivered entry for ${tool}`)
      }
    }
  }
  // A step's entries commit with it: the turn that ended the run, and the
  // run's end, are audited once, however often the model was asked for that
  // turn (an entry of a step that died before its commit is not kept).
  const answered = audit.filter((entry) => entry.type === "answered").length
  if (answered !== scenario.levels) problems.push(`audit: ${answered} answered entries`)
  const finished = audit.filter((entry) => entry.type === "run" && entry.status === "finished").length
  if (finished !== scenario.levels) problems.push(`audit: ${finished} run finished entries`)
  // Nested: one desk run, started once, whatever died when.
  if (scenario.levels > 1) {
    const called = audit.filter((entry) => entry.type === "called" && entry.tool === "agent.desk").length
    if (called < 1) problems.push(`audit: the desk was never called`)
    // Its answer is audited with the outer run's step that takes it in: once.
    const completed = audit.filter((entry) => entry.type === "completed" && entry.tool === "agent.desk").length
    if (completed !== 1) problems.push(`audit: ${completed} completed entries for the desk`)
  }
  // A stored turn is never asked again: one fault loses at most the one
  // answer that died with its process before it was stored.
  if (scenario.asked.length > maxAsks) {
    problems.push(`the model was asked ${scenario.asked.length} times: ${JSON.stringify(scenario.asked)}`)
  }
  return problems
}
