// Durable supervised runs: the loop of internal/agent.ts with its state kept
// in a RunStore and each write or send recorded as a proposal. A run stops
// when a turn waits on decisions; `resume` reads the decisions and goes on.
import { Clock, Duration, Effect, Option, Result, Schema } from "effect"
import * as Audit from "../Audit.js"
import type { Confirmable } from "../Grade.js"
import * as Invocation from "../Invocation.js"
import type { ToolCall } from "../LanguageModel.js"
import { type New, type Proposal, recover } from "../Proposal.js"
import { type Run, RunBusy, type State } from "../RunStore.js"
import type { Any as AnyTool } from "../Tool.js"
import type { Any as AnyToolkit } from "../Toolkit.js"
import { invalidInputMessage, issueOf, parseOptions } from "../ToolError.js"
import * as Agent from "./agent.js"
import { mintProposal, withoutCapabilities } from "./capability.js"
import { mayDecide, mayCause } from "./authority.js"
import { failureOf } from "./registry.js"
import { refuse } from "./refuse.js"
import { inSchema, isSend } from "./tool.js"
import { jsonIssue } from "./jsonData.js"
import { isOpen } from "./proposalStatus.js"
import { proposalStoreHere, runStoreHere, transaction } from "./services.js"
import { sealed } from "./seal.js"
import { millisOf } from "./deadlines.js"
import { type Outbox, outbox } from "./outbox.js"
import type { Emit } from "./events.js"

export interface StartOptions extends Agent.RunOptions {
  readonly runId?: string | undefined
  readonly decisionTimeout?: Duration.Input | undefined
  readonly lease?: Duration.Input | undefined
  /** How a sub-agent holding writes or sends runs here (Agent.supervised's); absent, it is refused. */
  readonly child?: Agent.Durable["child"]
}

export type Outcome =
  | { readonly status: "waiting"; readonly runId: string; readonly pending: ReadonlyArray<Proposal> }
  | { readonly status: "finished"; readonly runId: string; readonly result: ReturnType<typeof Agent.finish> }
  | { readonly status: "cancelled"; readonly runId: string; readonly by: string; readonly reason: string }

export class RunEnded extends Schema.TaggedError<RunEnded>()("@graded/core/Runs/RunEnded", {
  id: Schema.String,
  status: Schema.Literals(["finished", "cancelled"])
}) {
  override get message(): string {
    return `Run ${this.id} is ${this.status}; it cannot be cancelled`
  }
}

export const defaultLease = Duration.minutes(10)

const iso = (millis: number) => new Date(millis).toISOString()
const now = sealed(Effect.map(Clock.currentTimeMillis, iso))

// Values cross the store encoded with the tool's schemas, and come back
// decoded with them; a value a schema cannot carry is kept as it is.
const through = (schema: Schema.Codec<any, any> | undefined, value: unknown, way: "encode" | "decode") => {
  if (schema === undefined || value === undefined) return value
  const result = way === "encode"
    ? Schema.encodeUnknownResult(schema)(value)
    : Schema.decodeUnknownResult(schema)(value)
  return Result.getOrElse(result, () => value)
}

const mapCall = (toolkit: AnyToolkit, call: Agent.Call, way: "encode" | "decode"): Agent.Call => {
  if (!call.ok) return call
  const tool = toolkit.get(call.tool)
  return {
    ...call,
    input: through(tool?.input, call.input, way),
    output: through(tool?.output, call.output, way)
  }
}

// A run's calls, stored and back. Each call is encoded once: a call read back
// remembers the stored form it came from, and a call encoded for one save is
// not encoded again for the next (a run saves every round, and a long run's
// calls would otherwise go through their schemas at every save).
interface CallCodec {
  readonly encode: (call: Agent.Call) => Agent.Call
  readonly decode: (stored: Agent.Call) => Agent.Call
}

const callCodec = (toolkit: AnyToolkit): CallCodec => {
  const stored = new WeakMap<Agent.Call, Agent.Call>()
  return {
    encode: (call) => {
      const known = stored.get(call)
      if (known !== undefined) return known
      const encoded = mapCall(toolkit, call, "encode")
      stored.set(call, encoded)
      return encoded
    },
    decode: (encoded) => {
      const call = mapCall(toolkit, encoded, "decode")
      stored.set(call, encoded)
      return call
    }
  }
}

const toState = (
  codec: CallCodec,
  state: Agent.LoopState,
  base: State,
  turn?: State["turn"]
): State => ({
  ...base,
  round: state.round,
  messages: state.messages.map((message) =>
    message.role === "assistant" && message.content === undefined
      ? { role: "assistant" as const, toolCalls: message.toolCalls }
      : message
  ) as State["messages"],
  calls: state.calls.map(codec.encode) as State["calls"],
  usage: { ...state.usage },
  turns: state.turns.length === 0 ? undefined : state.turns.map(({ round, usage }) => ({ round, ...usage })),
  untrusted: [...state.untrusted],
  refusedBefore: [...state.refusedBefore],
  facts: Object.keys(state.facts).length === 0 ? undefined : { ...state.facts },
  limits: state.limits.length === 0 ? undefined : [...state.limits],
  answered: undefined,
  turn
})

// A turn's outcome as stored: known (encoded), or the proposal it waits on.
const storedOutcome = (codec: CallCodec, outcome: Agent.Outcome | { readonly proposal: string }) =>
  "proposal" in outcome ? outcome : { call: codec.encode(outcome.call), content: outcome.content }

const fromState = (codec: CallCodec, state: State): Agent.LoopState => ({
  messages: state.messages.map((message) =>
    message.role === "assistant" ? { ...message, content: message.content } : message
  ) as Agent.LoopState["messages"],
  calls: state.calls.map((call) => codec.decode(call as Agent.Call)),
  usage: { ...state.usage },
  turns: (state.turns ?? []).map(({ round, ...usage }) => ({ round, usage })),
  round: state.round,
  untrusted: state.untrusted,
  refusedBefore: new Set(state.refusedBefore),
  facts: { ...state.facts },
  limits: [...(state.limits ?? [])]
})

const optionsOf = (toolkit: AnyToolkit, state: State): Agent.RunOptions => ({
  toolkit,
  maxRounds: state.maxRounds,
  maxCallsPerRound: state.maxCallsPerRound,
  maxArgumentChars: state.maxArgumentChars
})

/**
 * Who settles a proposal that graded's own gates refused when a decision was
 * asked for (Agent.supervised): the model is told `refused`, not that a
 * human rejected it.
 */
export const byGraded = "graded"

// What the model is told of a decided proposal; undefined while it is open.
const decided = (toolkit: AnyToolkit, call: ToolCall, proposal: Proposal): Agent.Outcome | undefined => {
  const by = proposal.decision?.by ?? "a human"
  const reason = proposal.decision?.reason
  switch (proposal.status) {
    case "delivered": {
      const tool = toolkit.get(proposal.tool)
      // A write's input is what the human approved; a send's, what the model asked.
      const input = proposal.grade === "write" && proposal.approved !== undefined ? proposal.approved : proposal.input
      const note = proposal.output === undefined
        ? `${by} marked it delivered; its output is not known`
        : proposal.decision?.edited === true
        ? `${by} approved it with an edit`
        : `${by} approved it`
      return {
        call: {
          ok: true,
          id: call.id,
          tool: proposal.tool,
          input: through(tool?.input, input, "decode"),
          output: through(tool?.output, proposal.output, "decode")
        },
        content: JSON.stringify({ ok: true, data: proposal.output, note })
      }
    }
    case "rejected":
      // Settled by graded itself: a gate refused it when a human's decision was asked for.
      return by === byGraded && reason !== undefined
        ? Agent.denied(call.id, proposal.tool, "refused", reason)
        : Agent.denied(call.id, proposal.tool, "rejected", `${by} rejected this call${reason ? `: ${reason}` : ""}`)
    case "expired":
      return Agent.denied(call.id, proposal.tool, "expired", reason ?? "no human decided in time; nothing was done")
    case "failed":
      return Agent.denied(call.id, proposal.tool, "failed", reason ?? `the ${proposal.grade} failed`)
    default:
      return undefined
  }
}

// Drafts a write or send the model called as a proposal for a human: the
// input decoded, a send's payload prepared (as the model's: it may cause
// nothing), the run, turn and call named. A call of a turn taken up again
// after a restart has its proposal already: that one is the call's (a store
// without transactions can keep a proposal whose run was not saved). The
// run's proposals are read once for the drafts of a step, and not at all for
// a run this process has just created.
const drafting = (
  runId: string,
  decisionTimeout: number | undefined,
  created: boolean,
  box: Outbox
): Agent.Durable["draft"] => {
  let before: ReadonlyArray<Proposal> | undefined = created ? [] : undefined
  return (tool: AnyTool, call: ToolCall, input: unknown, turn: number) =>
    Effect.gen(function*() {
      const store = yield* proposalStoreHere
      before ??= yield* store.list({ runId })
      const known = before.find((proposal) => proposal.turn === turn && proposal.callId === call.id)
      if (known !== undefined) return { proposal: known.id }
      const context = yield* Invocation.current
      const decoded = Schema.decodeUnknownResult(tool.input, parseOptions)(input)
      if (Result.isFailure(decoded)) {
        const issue = issueOf(decoded.failure)
        yield* box.record({ type: "refused", tool: tool.name, gate: "input", reason: issue })
        return Agent.denied(call.id, tool.name, "invalid-input", invalidInputMessage(tool.name, issue))
      }
      const encodedInput = through(tool.input, decoded.success, "encode")
      // A send's prepare is its tool's code: what is held is written first.
      if (isSend(tool)) yield* box.flush
      const prepared = isSend(tool)
        ? yield* Effect.result(
          Invocation.within({ autonomous: true, untrusted: context.untrusted })(
            withoutCapabilities(tool.prepare(decoded.success))
          ).pipe(Effect.flatMap((payload) => inSchema(tool)(Schema.encodeEffect(tool.payload)(payload))))
        )
        : Result.succeed(encodedInput)
      if (Result.isFailure(prepared)) {
        // What the model is told: the tool's own text for the failure, as for any call.
        const { code, message } = failureOf(tool, prepared.failure)
        yield* box.record({ type: "failed", tool: tool.name, error: message })
        return Agent.denied(call.id, tool.name, code, message)
      }
      // A payload a human could not be shown as it is, nor the store keep.
      const notJson = jsonIssue(prepared.success)
      if (notJson !== undefined) {
        const reason = `the payload cannot be stored: ${notJson}`
        yield* box.record({ type: "refused", tool: tool.name, gate: "proposal", reason })
        return Agent.denied(call.id, tool.name, "refused", reason)
      }
      const millis = yield* Clock.currentTimeMillis
      const draft = mintProposal({
        tool: tool.name,
        grade: tool.grade as Confirmable,
        title: tool.title,
        input: encodedInput,
        payload: prepared.success,
        proposedAt: iso(millis),
        actor: context.actor,
        traceId: context.traceId,
        runId,
        callId: call.id,
        turn,
        ...(decisionTimeout !== undefined ? { expiresAt: iso(millis + decisionTimeout) } : {})
      })
      return { draft, tool: tool.name }
    })
}

// Goes on with a run this process holds: the waiting turn first, if every
// decision is in, or the stored model turn, then the loop. Each step that
// changes the run is one transaction with its audit entries: the model's turn
// stored, the decisions folded in, a turn's proposals with the run waiting on
// them, the run finished. `settled` holds proposals already read in a final
// status (they cannot change since), so that they are not read again.
const go = (
  toolkit: AnyToolkit,
  held: Run,
  leaseMillis: number,
  { child, created = false, emit, settled = new Map() }: {
    readonly settled?: ReadonlyMap<string, Proposal>
    /** Made by this call (Runs.start): no proposal of it can be stored yet. */
    readonly created?: boolean
    /** Streamed: what the loop and the decisions folded in tell the caller. */
    readonly emit?: Emit | undefined
    readonly child?: Agent.Durable["child"]
  } = {}
) =>
  Effect.gen(function*() {
    const runs = yield* runStoreHere
    const proposals = yield* proposalStoreHere
    const atomically = transaction(runs)
    // The step's own entries are held for its commit (outbox.ts).
    const box = outbox()
    let current = held
    const base = held.state
    const codec = callCodec(toolkit)
    const state = fromState(codec, base)
    const save = (status: Run["status"], next: State, leaseUntil?: string) =>
      Effect.tap(
        runs.save({ ...current, status, leaseUntil, state: next }),
        (saved) => Effect.sync(() => current = saved)
      )
    // A save that ends a step, and the step's held entries after it: on a
    // store without transactions (memory) a save that fails keeps them out,
    // as a rollback does; in a transaction they are written as it commits.
    const saved = (status: Run["status"], next: State, leaseUntil?: string) =>
      Effect.tap(save(status, next, leaseUntil), () => box.flush)
    // A save that is a step of its own: one transaction if entries are held.
    const step = (status: Run["status"], next: State, leaseUntil?: string) =>
      Effect.suspend(() => box.empty() ? save(status, next, leaseUntil) : atomically(saved(status, next, leaseUntil)))
    const renewed = Effect.map(Clock.currentTimeMillis, (millis) => iso(millis + leaseMillis))
    const letGo = Effect.suspend(() => runs.save({ ...current, status: "waiting", leaseUntil: undefined }))
    const base2: State = { ...base, turn: undefined, answered: undefined }

    // The turn waits on `open`: saved with the audit entry that says so (in
    // the caller's transaction).
    const wait = (turn: NonNullable<State["turn"]>, open: ReadonlyArray<string>) =>
      Effect.andThen(
        saved("waiting", toState(codec, state, base2, turn)),
        Audit.record({ type: "run", run: held.id, status: "waiting", proposals: open })
      )
    const waiting = (open: ReadonlyArray<Proposal>) =>
      ({ status: "waiting", runId: held.id, pending: open }) satisfies Outcome as Outcome

    let resumeFrom: Agent.Answered | undefined
    if (base.turn !== undefined) {
      const turn = base.turn
      const open: Array<Proposal> = []
      const outcomes: Array<Agent.Outcome> = []
      const delivered: Array<readonly [AnyTool, Proposal]> = []
      for (const [index, outcome] of turn.outcomes.entries()) {
        if (!("proposal" in outcome)) {
          outcomes[index] = { call: mapCall(toolkit, outcome.call as Agent.Call, "decode"), content: outcome.content }
          continue
        }
        const proposal = settled.get(outcome.proposal) ?? (yield* Effect.orDie(proposals.get(outcome.proposal)))
        const call = turn.calls[index]!
        // Only this run's own proposal for this call answers it: a stored turn
        // pointing elsewhere is told nothing of another run.
        const known = proposal.runId !== held.id || proposal.callId !== call.id
          ? Agent.denied(call.id, proposal.tool, "failed", `proposal ${outcome.proposal} does not belong to this call`)
          : decided(toolkit, call, proposal)
        if (known === undefined) open.push(proposal)
        else {
          outcomes[index] = known
          if (emit !== undefined) {
            if (proposal.runId === held.id) yield* emit({ type: "decided", proposal })
            yield* emit({ type: "call", round: state.round, call: known.call })
          }
        }
        const tool = toolkit.get(proposal.tool)
        if (known?.call.ok === true && tool !== undefined && proposal.output !== undefined) {
          delivered.push([tool, proposal])
        }
      }
      if (open.length > 0) {
        yield* Invocation.within({ traceId: held.traceId })(atomically(wait(turn, open.map((proposal) => proposal.id))))
        return waiting(open)
      }
      for (const [index, call] of turn.calls.entries()) Agent.settle(state, call, outcomes[index]!)
      // What a delivered write or send brings in, as when a human decides at once.
      for (const [tool, proposal] of delivered) {
        Agent.absorb(state, tool, through(tool.output, proposal.output, "decode"))
      }
      // Saved with the run's next step: until then the stored turn still
      // names its proposals, all of them final, and a restart folds them in
      // again as here.
      yield* Invocation.within({ traceId: held.traceId })(
        box.record({ type: "run", run: held.id, status: "resumed" })
      )
    } else if (base.answered !== undefined) {
      // The model answered before the process stopped: its turn goes on.
      const last = state.messages.at(-1)
      if (last?.role === "assistant") {
        resumeFrom = {
          calls: last.toolCalls,
          text: last.content,
          malformed: new Map(base.answered.malformed.map(({ index, issue }) => [index, issue]))
        }
      }
    }
    const checkpoint = (loopState: Agent.LoopState) =>
      Effect.flatMap(renewed, (until) => step("running", toState(codec, loopState, base2), until))
    const answered = (loopState: Agent.LoopState, malformed: ReadonlyMap<number, string>) =>
      Effect.flatMap(renewed, (until) =>
        step("running", {
          ...toState(codec, loopState, base2),
          answered: { malformed: [...malformed].map(([index, issue]) => ({ index, issue })) }
        }, until))
    const mode = {
      durable: {
        draft: drafting(held.id, base.decisionTimeout, created, box),
        checkpoint,
        answered,
        record: box.record,
        flush: box.flush,
        child
      } satisfies Agent.Durable
    }
    const context: Partial<Invocation.Context> = {
      ...base.context,
      actor: held.actor,
      traceId: held.traceId
    }
    return yield* Invocation.within(context)(Effect.gen(function*() {
      const end = yield* Agent.loop(
        optionsOf(toolkit, base),
        base.maxRounds,
        base.maxCallsPerRound,
        mode,
        state,
        resumeFrom,
        emit
      )
        .pipe(
          // A model that failed leaves the run where its last turn left it, to resume.
          Effect.tapError(() => Effect.ignore(step("waiting", toState(codec, state, base2))))
        )
      if (end._tag === "Waiting") {
        // The turn's proposals, the run waiting on them and the audit of
        // both: one transaction, so no proposal stands without its run.
        const added = yield* atomically(Effect.gen(function*() {
          const made: Array<Proposal> = []
          const outcomes: Array<Agent.Outcome | { readonly proposal: string }> = []
          for (const outcome of end.turn.outcomes) {
            if (!("draft" in outcome)) {
              outcomes.push(outcome)
              continue
            }
            const proposal = yield* proposals.add(outcome.draft as New)
            yield* box.flush
            yield* Audit.record({ type: "proposed", tool: outcome.tool, proposal: proposal.id })
            made.push(proposal)
            outcomes.push({ proposal: proposal.id })
          }
          const open = outcomes.flatMap((outcome) => "proposal" in outcome ? [outcome.proposal] : [])
          const turn = {
            calls: end.turn.calls,
            outcomes: outcomes.map((outcome) => storedOutcome(codec, outcome))
          } as NonNullable<State["turn"]>
          yield* wait(turn, open)
          return made
        }))
        // As added: nothing decides a proposal before its transaction commits.
        return waiting(added)
      }
      const ended = { status: "finished" as const, stopped: end.stopped, answer: end.answer }
      yield* atomically(Effect.andThen(
        saved("finished", { ...toState(codec, state, base2), ended }),
        Audit.record({ type: "run", run: held.id, status: "finished" })
      ))
      return { status: "finished", runId: held.id, result: Agent.finish(state, ended) } satisfies Outcome as Outcome
    })).pipe(
      // A step that died (its transaction rolled back), or a run interrupted
      // (a streamed run's page closed), leaves the run as last saved, let go:
      // any process resumes it from there, not after the lease.
      Effect.tapDefect(() => Effect.exit(letGo)),
      Effect.onInterrupt(() => Effect.exit(letGo))
    )
  })

const leaseOf = (lease: Duration.Input | undefined) => millisOf(lease ?? defaultLease)

// A run id is typed at a terminal, printed in audit lines and kept as a
// column (SQLite would cut it at a NUL, and turn a lone surrogate into
// U+FFFD): plain text, at most 200 characters.
const runIdPattern = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,199}$/

// Streamed, a run that waits tells what it waits on, however it came to wait.
const tellPending = (emit: Emit | undefined) => <E, R>(outcome: Effect.Effect<Outcome, E, R>) =>
  emit === undefined ? outcome : Effect.tap(outcome, (outcome) =>
    outcome.status === "waiting"
      ? Effect.forEach(outcome.pending, (proposal) => emit({ type: "pending", proposal }), { discard: true })
      : Effect.void)

export const start = (options: StartOptions, emit?: Emit) =>
  Effect.gen(function*() {
    const { maxCallsPerRound, maxRounds } = yield* Agent.checkOptions(options)
    if (options.runId !== undefined && !runIdPattern.test(options.runId)) {
      return yield* new Agent.InvalidOptions({
        option: "runId",
        issue: `must be 1 to 200 letters, digits or . _ : - (starting with a letter or digit), got ${
          JSON.stringify(options.runId.slice(0, 210))
        }`
      })
    }
    const timeout = options.decisionTimeout === undefined
      ? undefined
      : Option.getOrUndefined(Duration.fromInput(options.decisionTimeout))
    // Not `<= 0`: a duration of NaN milliseconds is no positive duration either.
    if (options.decisionTimeout !== undefined && (timeout === undefined || !(Duration.toMillis(timeout) > 0))) {
      return yield* new Agent.InvalidOptions({
        option: "decisionTimeout",
        issue: `must be a positive duration, got ${String(options.decisionTimeout)}`
      })
    }
    const runs = yield* runStoreHere
    const outer = yield* Invocation.current
    const context = { ...outer, ...options.context }
    const id = options.runId ?? crypto.randomUUID()
    const millis = yield* Clock.currentTimeMillis
    const leaseMillis = leaseOf(options.lease)
    const initial = Agent.initialState(options)
    const base: State = {
      maxRounds,
      maxCallsPerRound,
      maxArgumentChars: options.maxArgumentChars ?? Agent.defaultMaxArgumentChars,
      decisionTimeout: timeout === undefined ? undefined : Duration.toMillis(timeout),
      context: {
        page: context.page,
        features: context.features,
        role: context.role,
        tenant: context.tenant,
        consents: context.consents,
        facts: context.facts
      },
      round: 0,
      messages: [],
      calls: [],
      usage: { inputTokens: 0, outputTokens: 0 },
      untrusted: [...(context.untrusted ?? [])],
      refusedBefore: []
    }
    const created = yield* runs.create({
      id,
      status: "running",
      version: 1,
      traceId: context.traceId ?? crypto.randomUUID(),
      actor: context.actor,
      createdAt: iso(millis),
      updatedAt: iso(millis),
      leaseUntil: iso(millis + leaseMillis),
      state: toState(callCodec(options.toolkit), { ...initial, untrusted: base.untrusted }, base)
    })
    return yield* go(options.toolkit, created, leaseMillis, { created: true, emit, child: options.child })
  }).pipe(tellPending(emit))

export const resume = (
  id: string,
  options: {
    readonly toolkit: AnyToolkit
    readonly lease?: Duration.Input | undefined
    readonly child?: Agent.Durable["child"]
  },
  emit?: Emit
) =>
  Effect.gen(function*() {
    const runs = yield* runStoreHere
    const proposals = yield* proposalStoreHere
    // Lapsed approvals, deliveries and decisions are settled (and audited)
    // first, so that an expiry reaches the model. Not where no human decides
    // (a run started inside a tool's own code): moving the human's queue is
    // refused there, and the run goes on without it.
    if ((yield* mayDecide("Proposal.recover")) === undefined) yield* recover
    const run = yield* runs.get(id)
    const ended = run.state.ended
    if (ended?.status === "finished") {
      return {
        status: "finished",
        runId: id,
        result: Agent.finish(fromState(callCodec(options.toolkit), run.state), ended)
      } satisfies Outcome as Outcome
    }
    if (ended?.status === "cancelled") {
      return { status: "cancelled", runId: id, by: ended.by, reason: ended.reason } satisfies Outcome as Outcome
    }
    // Still waiting on a human: answered without taking the run.
    const settled = new Map<string, Proposal>()
    if (run.status === "waiting" && run.state.turn !== undefined) {
      const open = yield* Effect.forEach(
        run.state.turn.outcomes.flatMap((outcome) => "proposal" in outcome ? [outcome.proposal] : []),
        (proposal) => Effect.orDie(proposals.get(proposal))
      )
      const undecided = open.filter((proposal) => isOpen(proposal.status))
      if (undecided.length > 0) {
        return { status: "waiting", runId: id, pending: undecided } satisfies Outcome as Outcome
      }
      for (const proposal of open) settled.set(proposal.id, proposal)
    }
    const leaseMillis = leaseOf(options.lease)
    const millis = yield* Clock.currentTimeMillis
    const held = yield* runs.claim(id, iso(millis + leaseMillis), iso(millis))
    return yield* go(options.toolkit, held, leaseMillis, { settled, emit, child: options.child })
  }).pipe(tellPending(emit))

export const cancel = (id: string, options: { readonly reason: string }) =>
  Effect.gen(function*() {
    const runs = yield* runStoreHere
    const proposals = yield* proposalStoreHere
    // Cancelling decides for the run's open proposals: not from a model's fiber.
    const refusal = yield* mayCause("Runs.cancel", "write")
    if (refusal !== undefined) return yield* refuse(refusal)
    const by = (yield* Invocation.current).actor ?? "human"
    const run = yield* runs.get(id)
    const ended = run.state.ended
    if (ended !== undefined) return yield* new RunEnded({ id, status: ended.status })
    const at = yield* now
    if (run.status === "running" && (run.leaseUntil === undefined || run.leaseUntil >= at)) {
      return yield* new RunBusy({ id, status: run.status, leaseUntil: run.leaseUntil })
    }
    // Its open decisions are rejected (nothing of the run is delivered after),
    // with the run and the audit entry, in one transaction.
    const open = run.state.turn?.outcomes.flatMap((outcome) => "proposal" in outcome ? [outcome.proposal] : []) ?? []
    return yield* Invocation.within({ traceId: run.traceId })(
      transaction(runs)(Effect.gen(function*() {
        const saved = yield* runs.save({
          ...run,
          status: "cancelled",
          leaseUntil: undefined,
          state: { ...run.state, ended: { status: "cancelled", by, reason: options.reason, at } }
        })
        for (const proposal of open) {
          yield* Effect.ignore(proposals.reject(proposal, {
            by,
            at,
            edited: false,
            reason: `the run was cancelled: ${options.reason}`
          }))
        }
        yield* Audit.record({ type: "run", run: id, status: "cancelled", proposals: open })
        return saved
      }))
    )
  })
