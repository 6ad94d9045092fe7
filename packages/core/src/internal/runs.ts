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
import { childInput, childOutcome } from "./childCall.js"
import { answerOf, asSubAgent, innerStart } from "./subAgent.js"
import { innerOf, pathRef, pathText, type Report, reportRef, type Spec } from "./tree.js"
import { millisOf } from "./deadlines.js"
import { type Outbox, outbox } from "./outbox.js"
import type { Emit } from "./events.js"

export interface StartOptions extends Agent.RunOptions {
  readonly runId?: string | undefined
  readonly decisionTimeout?: Duration.Input | undefined
  readonly lease?: Duration.Input | undefined
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
const storedOutcome = (codec: CallCodec, outcome: Agent.Outcome | Agent.Waits) =>
  "proposal" in outcome || "child" in outcome ? outcome : { call: codec.encode(outcome.call), content: outcome.content }

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
      // Made inside a sub-agent: the path to it, for the card and for approve.
      const path = yield* pathRef
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
        ...(path.length > 0 ? { path: [...path] } : {}),
        ...(decisionTimeout !== undefined ? { expiresAt: iso(millis + decisionTimeout) } : {})
      })
      return { draft, tool: tool.name }
    })
}

// A sub-agent's run is named by the call it answers: the same call finds the
// same run after any restart, so no second one is started. Kept to the run id
// form (runIdPattern); a long or unusual id is shortened with a hash of all
// of it (a run found is checked against its recorded parent all the same).
const childIdOf = (parent: string, turn: number, callId: string): string => {
  const plain = `${parent}:${turn}:${callId}`
  if (runIdPattern.test(plain)) return plain
  let a = 0x811c9dc5
  let b = 0x01000193
  for (const char of plain) {
    const code = char.codePointAt(0)!
    a = Math.imul(a ^ code, 0x01000193) >>> 0
    b = Math.imul(b ^ code, 0x5bd1e995) >>> 0
  }
  const hash = `${a.toString(16).padStart(8, "0")}${b.toString(16).padStart(8, "0")}`
  return `${parent.slice(0, 160)}:${turn}:h${hash}`
}

// What a run's call finds under its child's id when it is not the run that
// call started (a run started by hand under that id): told, never adopted.
const strangerChild = (found: Run, parent: string, call: string, tool: string, turn: number) => {
  const recorded = found.state.parent
  return recorded !== undefined && recorded.run === parent && recorded.call === call &&
      recorded.tool === tool && recorded.turn === turn
    ? undefined
    : `the run ${found.id} is not this call's sub-agent run; nothing of it is taken`
}

const findRun = (id: string) =>
  Effect.flatMap(runStoreHere, (runs) =>
    runs.get(id).pipe(
      Effect.map((run): Run | undefined => run),
      Effect.catchTag("@graded/core/RunStore/RunNotFound", () => Effect.succeed(undefined))
    ))

// The stored call's input, as the loop decoded it when it was made.
const inputOf = (tool: AnyTool, call: ToolCall): unknown => {
  try {
    return through(tool.input, JSON.parse(call.arguments === "" ? "{}" : call.arguments), "decode")
  } catch {
    return undefined
  }
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
  { created = false, emit, settled = new Map() }: {
    readonly settled?: ReadonlyMap<string, Proposal>
    /** Made by this call (Runs.start): no proposal of it can be stored yet. */
    readonly created?: boolean
    /** Streamed: what the loop and the decisions folded in tell the caller. */
    readonly emit?: Emit | undefined
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

    // A sub-agent holding writes or sends runs as a durable run of its own
    // (docs/durability.md, Sub-agents as nested runs): found or started, and
    // resumed, by its id.
    // What its runs wait on is what this run waits on.
    const childPending: Array<Proposal> = []
    // A child that failed (its model, a busy store) fails this step: the run
    // is let go as last saved (its model's turn stored), not saved from here.
    let childFailed = false
    const cards: Emit | undefined = emit === undefined
      ? undefined
      : (event) => event.type === "decided" ? emit(event) : Effect.void
    const goOn = (
      tool: AnyTool,
      spec: Spec,
      call: ToolCall,
      input: unknown,
      outcome: Outcome,
      report: Report | undefined
    ): Effect.Effect<Agent.Outcome | { readonly child: string }> => {
      if (outcome.status === "waiting") {
        childPending.push(...outcome.pending)
        return Effect.succeed({ child: outcome.runId })
      }
      if (outcome.status === "cancelled") {
        return Effect.succeed(
          Agent.denied(call.id, tool.name, "failed", `its run ${outcome.runId} was cancelled: ${outcome.reason}`)
        )
      }
      return childOutcome(tool, call, input, answerOf(tool.name, spec, outcome.result, report), box.record)
    }
    const resumeChild = (
      tool: AnyTool,
      spec: Spec,
      call: ToolCall,
      input: unknown,
      child: Run,
      report: Report | undefined
    ) =>
      Effect.flatMap(
        asSubAgent(spec, child.state.parent!.path)(
          resumeRun(child.id, { toolkit: spec.toolkit as AnyToolkit, lease: leaseMillis }, cards, true)
        ),
        (outcome) => goOn(tool, spec, call, input, outcome, report)
      )
    const nestedChild: NonNullable<Agent.Durable["child"]> = (tool, call, input, turn) =>
      Effect.gen(function*() {
        const spec = innerOf(tool)!
        const decoded = yield* childInput(tool, call, input, box.record)
        if (Result.isFailure(decoded)) return decoded.failure
        const id = childIdOf(held.id, turn, call.id)
        const report = yield* reportRef
        const found = yield* findRun(id)
        // Started before a restart (or before a kill that lost this run's
        // record of it): the same run goes on, never a second one.
        if (found !== undefined) {
          const notOurs = strangerChild(found, held.id, call.id, tool.name, turn)
          if (notOurs !== undefined) return Agent.denied(call.id, tool.name, "failed", notOurs)
          return yield* resumeChild(tool, spec, call, decoded.success, found, report)
        }
        // Written now, before the child's run is created: a process that stops
        // in between audits the call again on restart (never loses it).
        yield* Audit.record({ type: "called", tool: tool.name, input })
        const made = yield* Effect.result(innerStart(tool.name, spec, decoded.success))
        if (Result.isFailure(made)) {
          return yield* childOutcome(tool, call, decoded.success, Effect.fail(made.failure), box.record)
        }
        const { options, path } = made.success
        const parent = { run: held.id, turn, call: call.id, tool: tool.name, path: [...path] }
        const outcome = yield* asSubAgent(spec, path)(
          startRun({ ...options, runId: id, lease: leaseMillis }, cards, parent)
        )
        return yield* goOn(tool, spec, call, decoded.success, outcome, report)
      }).pipe(Effect.tapError(() => Effect.sync(() => childFailed = true)))

    const context: Partial<Invocation.Context> = {
      ...base.context,
      actor: held.actor,
      traceId: held.traceId
    }
    // A stored turn's call that waits on a sub-agent's run: that run resumed
    // (its own waits first, depth-first), its answer the call's outcome.
    const foldChild = (id: string, call: ToolCall) =>
      Effect.gen(function*() {
        const found = yield* findRun(id)
        const parent = found?.state.parent
        const tool = parent === undefined ? undefined : toolkit.get(parent.tool)
        const spec = tool === undefined ? undefined : innerOf(tool)
        if (found === undefined || parent === undefined || tool === undefined || spec === undefined) {
          const name = parent?.tool ?? call.name
          const reason = found === undefined
            ? `its run ${id} is not in the store`
            : `this toolkit has no sub-agent ${name} to go on with its run ${id}`
          return Agent.denied(call.id, name, "failed", reason)
        }
        const notOurs = strangerChild(found, held.id, call.id, tool.name, parent.turn)
        if (notOurs !== undefined) return Agent.denied(call.id, tool.name, "failed", notOurs)
        return yield* resumeChild(tool, spec, call, inputOf(tool, call), found, Agent.reportInto(state))
      })

    let resumeFrom: Agent.Answered | undefined
    if (base.turn !== undefined) {
      const turn = base.turn
      const open: Array<Proposal> = []
      const outcomes: Array<Agent.Outcome> = []
      const delivered: Array<readonly [AnyTool, Proposal]> = []
      let childOpen = false
      for (const [index, outcome] of turn.outcomes.entries()) {
        if ("child" in outcome) {
          const call = turn.calls[index]!
          const known = yield* Invocation.within(context)(foldChild(outcome.child, call)).pipe(
            Effect.tapError(() => Effect.exit(letGo))
          )
          if ("child" in known) childOpen = true
          else {
            outcomes[index] = known
            if (emit !== undefined) yield* emit({ type: "call", round: state.round, call: known.call })
          }
          continue
        }
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
      if (open.length > 0 || childOpen) {
        const all = [...open, ...childPending]
        yield* Invocation.within({ traceId: held.traceId })(atomically(wait(turn, all.map((proposal) => proposal.id))))
        return waiting(all)
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
        child: nestedChild
      } satisfies Agent.Durable
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
          // A model that failed leaves the run where its last turn left it, to
          // resume; a sub-agent's run that failed, as last saved.
          Effect.tapError(() =>
            childFailed ? Effect.exit(letGo) : Effect.ignore(step("waiting", toState(codec, state, base2)))
          )
        )
      if (end._tag === "Waiting") {
        // The turn's proposals, the run waiting on them and the audit of
        // both: one transaction, so no proposal stands without its run.
        const added = yield* atomically(Effect.gen(function*() {
          const made: Array<Proposal> = []
          const outcomes: Array<Agent.Outcome | Agent.Waits> = []
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
          const open = [
            ...outcomes.flatMap((outcome) => "proposal" in outcome ? [outcome.proposal] : []),
            ...childPending.map((proposal) => proposal.id)
          ]
          const turn = {
            calls: end.turn.calls,
            outcomes: outcomes.map((outcome) => storedOutcome(codec, outcome))
          } as NonNullable<State["turn"]>
          yield* wait(turn, open)
          return made
        }))
        // As added: nothing decides a proposal before its transaction commits.
        return waiting([...added, ...childPending])
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

type Parent = NonNullable<State["parent"]>

export const start = (options: StartOptions, emit?: Emit) => startRun(options, emit)

// A run started, by the caller or (with `parent`) by a call of another run.
const startRun = (options: StartOptions, emit?: Emit, parent?: Parent): Effect.Effect<Outcome, any, any> =>
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
      refusedBefore: [],
      ...(parent === undefined ? {} : { parent })
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
    return yield* go(options.toolkit, created, leaseMillis, { created: true, emit })
  }).pipe(tellPending(emit))

interface ResumeOptions {
  readonly toolkit: AnyToolkit
  readonly lease?: Duration.Input | undefined
}

export const resume = (id: string, options: ResumeOptions, emit?: Emit) => resumeRun(id, options, emit, false)

// A sub-agent's run goes on only as its parent's call (`asChild`): resumed
// on its own it would answer no one, with a toolkit that may not be its own.
const resumeRun = (
  id: string,
  options: ResumeOptions,
  emit: Emit | undefined,
  asChild: boolean
): Effect.Effect<Outcome, any, any> =>
  Effect.gen(function*() {
    const runs = yield* runStoreHere
    // Lapsed approvals, deliveries and decisions are settled (and audited)
    // first, so that an expiry reaches the model. Not where no human decides
    // (a run started inside a tool's own code): moving the human's queue is
    // refused there, and the run goes on without it.
    if ((yield* mayDecide("Proposal.recover")) === undefined) yield* recover
    const run = yield* runs.get(id)
    const parent = run.state.parent
    if (parent !== undefined && !asChild) {
      return yield* new Agent.InvalidOptions({
        option: "runId",
        issue: `run ${id} is the sub-agent ${
          pathText(parent.path)
        }'s run inside run ${parent.run}; resume ${parent.run}, which goes on with it`
      })
    }
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
    const { own, undecided } = yield* openIn(run)
    if (undecided.length > 0) {
      return { status: "waiting", runId: id, pending: undecided } satisfies Outcome as Outcome
    }
    for (const proposal of own) settled.set(proposal.id, proposal)
    const leaseMillis = leaseOf(options.lease)
    const millis = yield* Clock.currentTimeMillis
    const held = yield* runs.claim(id, iso(millis + leaseMillis), iso(millis))
    return yield* go(options.toolkit, held, leaseMillis, { settled, emit })
  }).pipe(asChild ? (self) => self : tellPending(emit))

// What a waiting run waits on, read without taking it: its own proposals and
// the undecided ones of its sub-agents' runs, depth-first.
const openIn = (run: Run): Effect.Effect<{ own: Array<Proposal>; undecided: Array<Proposal> }, never, any> =>
  Effect.gen(function*() {
    const proposals = yield* proposalStoreHere
    const own: Array<Proposal> = []
    const undecided: Array<Proposal> = []
    if (run.status !== "waiting" || run.state.turn === undefined) return { own, undecided }
    for (const outcome of run.state.turn.outcomes) {
      if ("proposal" in outcome) {
        const proposal = yield* Effect.orDie(proposals.get(outcome.proposal))
        own.push(proposal)
        if (isOpen(proposal.status)) undecided.push(proposal)
      } else if ("child" in outcome) {
        const child = yield* Effect.orDie(findRun(outcome.child))
        if (child !== undefined && child.state.ended === undefined) undecided.push(...(yield* openIn(child)).undecided)
      }
    }
    return { own, undecided }
  })

// A run and the sub-agents' runs it waits on, depth-first: what a cancel ends.
const treeOf = (run: Run): Effect.Effect<Array<Run>, never, any> =>
  Effect.gen(function*() {
    const all = [run]
    for (const outcome of run.state.turn?.outcomes ?? []) {
      if (!("child" in outcome)) continue
      const child = yield* Effect.orDie(findRun(outcome.child))
      if (child !== undefined && child.state.ended === undefined) all.push(...(yield* treeOf(child)))
    }
    return all
  })

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
    // With the sub-agents' runs it waits on: a cancelled run's children
    // deliver nothing either.
    const tree = yield* treeOf(run)
    for (const each of tree) {
      if (each.status === "running" && (each.leaseUntil === undefined || each.leaseUntil >= at)) {
        return yield* new RunBusy({ id: each.id, status: each.status, leaseUntil: each.leaseUntil })
      }
    }
    // Their open decisions are rejected (nothing of them is delivered after),
    // with the runs and the audit entries, in one transaction.
    return yield* Invocation.within({ traceId: run.traceId })(
      transaction(runs)(Effect.gen(function*() {
        let root: Run | undefined
        for (const each of tree) {
          const open = each.state.turn?.outcomes.flatMap((outcome) =>
            "proposal" in outcome ? [outcome.proposal] : []
          ) ??
            []
          const saved = yield* runs.save({
            ...each,
            status: "cancelled",
            leaseUntil: undefined,
            state: { ...each.state, ended: { status: "cancelled", by, reason: options.reason, at } }
          })
          root ??= saved
          for (const proposal of open) {
            yield* Effect.ignore(proposals.reject(proposal, {
              by,
              at,
              edited: false,
              reason: `the run was cancelled: ${options.reason}`
            }))
          }
          yield* Audit.record({ type: "run", run: each.id, status: "cancelled", proposals: open })
        }
        return root!
      }))
    )
  })
