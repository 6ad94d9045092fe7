import { Effect, Result, Schema } from "effect"
import * as Audit from "../Audit.js"
import * as Invocation from "../Invocation.js"
import { type FunctionSchema, type Message, ModelError, type ToolCall, type Usage } from "../LanguageModel.js"
import * as Printable from "../Printable.js"
import type { Code, ToolResult } from "../Registry.js"
import type { Any as AnyTool } from "../Tool.js"
import type { Any as AnyToolkit } from "../Toolkit.js"
import { invalidInputMessage, issueOf } from "../ToolError.js"
import { fromWire } from "../Wire.js"
import { capabilityName, isConfirmable, needs } from "../Grade.js"
import { withoutCapabilities } from "./capability.js"
import * as Registry from "./registry.js"
import { admitAll, guardsHere } from "./guard.js"
import { currentRef } from "./authority.js"
import { assemble, type Piece } from "./assemble.js"
import type { Emit, LoopEvent } from "./events.js"
import { jsonIssue, plainCopy } from "./jsonData.js"
import { modelHere } from "./services.js"
import {
  type Budget,
  innerOf,
  makeTree,
  pathRef,
  pathText,
  type Report,
  reportRef,
  type Stop,
  treeRef
} from "./tree.js"

export const defaultMaxRounds = 4

export const defaultMaxCallsPerRound = 8

/**
 * What makes each tool unfit for an autonomous loop, as `Agent.Offenses`
 * says it: a write or send by its grade, and a sub-agent by the path to each
 * of its tools that is (`billing → refund.issue (write) needs WriteCapability`).
 */
export const offensesOf = (tools: ReadonlyArray<AnyTool>): ReadonlyArray<string> =>
  tools.flatMap((tool) => {
    const inner = innerOf(tool)
    if (inner !== undefined) return offensesOf(inner.toolkit.tools).map((offense) => `${tool.name} → ${offense}`)
    return isConfirmable(tool.grade) ? [needs(tool.name, tool.grade, capabilityName(tool.grade))] : []
  })

export const autonomousViolation = <const Offenses extends string>(offenses: Offenses) =>
  `Agent.run takes read tools only: ${offenses}. Pass Toolkit.readOnly(toolkit), or let a human confirm these tools through HumanConfirm` as const

export class InvalidOptions extends Schema.TaggedError<InvalidOptions>()("@graded/core/Agent/InvalidOptions", {
  option: Schema.String,
  issue: Schema.String
}) {
  override get message(): string {
    return `Agent.run: ${this.option} ${this.issue}`
  }
}

export interface RunOptions {
  readonly toolkit: AnyToolkit
  readonly prompt?: string | undefined
  readonly messages?: ReadonlyArray<Message> | undefined
  readonly maxRounds?: number | undefined
  readonly maxCallsPerRound?: number | undefined
  readonly maxArgumentChars?: number | undefined
  readonly system?: string | undefined
  readonly context?: Partial<Invocation.Context> | undefined
  /** The budget over the whole tree of agents (a root run's; a sub-agent's run shares its root's). */
  readonly budget?: Budget | undefined
}

export type DenialCode = Code | "round-limit" | "call-limit" | "expired" | "cancelled"

type Call =
  | { readonly ok: true; readonly id: string; readonly tool: string; readonly input: unknown; readonly output: unknown }
  | {
    readonly ok: false
    readonly id: string
    readonly tool: string
    readonly error: { readonly code: DenialCode; readonly message: string }
  }

interface Outcome {
  readonly call: Call
  readonly content: string
}

const denied = (id: string, tool: string, code: DenialCode, message: string): Outcome => ({
  call: { ok: false, id, tool, error: { code, message } },
  content: JSON.stringify({ ok: false, code, error: message })
})

// What the model sees of a registry result. A payload prepared for a human is
// not the model's business.
const forModel = ({ confirmPayload: _, ...result }: ToolResult) => result

const parse = (text: string): Result.Result<unknown, string> => {
  try {
    return Result.succeed(JSON.parse(text))
  } catch {
    return Result.fail("the arguments are not valid JSON")
  }
}

export const defaultMaxArgumentChars = 100_000

// The facts a tool's result records: a function that throws, or a value that
// is not a string, number or boolean, records nothing for that name.
const recordFacts = (
  facts: Readonly<Record<string, Invocation.Fact>>,
  recorders: NonNullable<AnyTool["facts"]>,
  output: unknown
): Readonly<Record<string, Invocation.Fact>> => {
  const next: Record<string, Invocation.Fact> = { ...facts }
  for (const [name, read] of Object.entries(recorders)) {
    try {
      const value: unknown = read(output)
      if (
        typeof value === "string" || typeof value === "boolean" || (typeof value === "number" && Number.isFinite(value))
      ) {
        next[name] = value
      }
    } catch {
      // A fact that cannot be read is not recorded: the conditions on it stay unmet.
    }
  }
  return next
}

const refusals = new Set<DenialCode>(["refused", "rejected", "requires-confirm"])

// A model turn is data from outside: decoded, never trusted to have the
// shape its type says. A turn that is not an object with a list of calls is
// a ModelError; one malformed call is refused back to the model on its own.
const Turn = Schema.Struct({
  text: Schema.optional(Schema.NullOr(Schema.String)),
  toolCalls: Schema.optional(Schema.NullOr(Schema.Array(Schema.Unknown))),
  usage: Schema.optional(Schema.Unknown)
})
const decodeTurn = Schema.decodeUnknownResult(Turn)
// A call id links a call to its proposal and its result, and is stored (a
// SQL column): one that a store could change on the way in (a control
// character, a lone surrogate) or that is no id at all is refused.
const controlOrLoneSurrogate =
  // eslint-disable-next-line no-control-regex -- matching control characters is the point
  /[\u0000-\u001f\u007f]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/
const CallId = Schema.String.check(
  Schema.makeFilter((id: string) =>
    id.length > 0 && id.length <= 256 && !controlOrLoneSurrogate.test(id) ||
    "a call id must be 1 to 256 characters, without control characters or lone surrogates"
  )
)
const WellFormedCall = Schema.Struct({ id: CallId, name: Schema.String, arguments: Schema.String })
const decodeCall = Schema.decodeUnknownResult(WellFormedCall)

const count = (value: unknown): number => typeof value === "number" && Number.isFinite(value) ? value : 0

interface Checked {
  readonly text: string | undefined
  readonly calls: ReadonlyArray<ToolCall>
  // The index of each call that is malformed, and why.
  readonly malformed: ReadonlyMap<number, string>
  // What the provider reported of the turn's usage; undefined where it reported none.
  readonly usage: Usage | undefined
}

const asJson = (value: unknown): string | undefined => {
  try {
    return JSON.stringify(value)
  } catch {
    return undefined
  }
}

// A turn is read once, as a copy: an in-process adapter's getter that throws
// (or answers differently the second time) makes a malformed turn, not a defect.
const checkTurn = (response: unknown, round: number): Result.Result<Checked, ModelError> => {
  try {
    return readTurn(plainCopy(response), round)
  } catch {
    return Result.fail(
      new ModelError({ reason: "malformed-response", detail: "the model's turn is malformed: reading it threw" })
    )
  }
}

const readTurn = (response: unknown, round: number): Result.Result<Checked, ModelError> => {
  const turn = decodeTurn(response)
  if (Result.isFailure(turn)) {
    return Result.fail(
      new ModelError({
        reason: "malformed-response",
        detail: `the model's turn is malformed: ${issueOf(turn.failure)}`
      })
    )
  }
  const malformed = new Map<number, string>()
  const ids = new Set<string>()
  const calls = (turn.success.toolCalls ?? []).map((raw, index): ToolCall => {
    // Arguments given as an object rather than JSON text are taken as JSON
    // (one nested too deeply to write as JSON is no arguments at all).
    const candidate = typeof raw === "object" && raw !== null && "arguments" in raw &&
        typeof raw.arguments === "object" && raw.arguments !== null
      ? { ...raw, arguments: asJson(raw.arguments) }
      : raw
    const call = decodeCall(candidate)
    // A call id names one call of a turn (its result, its proposal): a second
    // call under the same id is no call of its own.
    if (Result.isSuccess(call) && ids.has(call.success.id)) {
      malformed.set(index, `the call id ${JSON.stringify(call.success.id)} is used by an earlier call of this turn`)
      return { ...call.success, arguments: "" }
    }
    if (Result.isSuccess(call)) {
      ids.add(call.success.id)
      return call.success
    }
    malformed.set(index, issueOf(call.failure))
    const field = (key: string) =>
      typeof raw === "object" && raw !== null && key in raw ? (raw as Record<string, unknown>)[key] : undefined
    const id = field("id")
    const name = field("name")
    return {
      id: typeof id === "string" ? id : `malformed-${round}-${index}`,
      name: typeof name === "string" ? name : "(no name)",
      arguments: ""
    }
  })
  const usage = turn.success.usage as Partial<Record<keyof Usage, unknown>> | null | undefined
  const cost = usage?.cost
  return Result.succeed({
    text: turn.success.text ?? undefined,
    calls,
    malformed,
    usage: typeof usage !== "object" || usage === null ? undefined : {
      inputTokens: count(usage.inputTokens),
      outputTokens: count(usage.outputTokens),
      ...(typeof cost === "number" && Number.isFinite(cost) && cost >= 0 ? { cost } : {})
    }
  })
}

/** What a loop has done so far: all of it is data, so a stored run can go on from it. */
export interface LoopState {
  readonly messages: Array<Message>
  readonly calls: Array<Call>
  readonly usage: { inputTokens: number; outputTokens: number; cost?: number | undefined }
  /** The usage each turn reported, by round. */
  readonly turns: Array<{ readonly round: number; readonly usage: Usage }>
  /** Model turns taken. */
  round: number
  /** The untrusted tools whose output the model has read in this run. */
  untrusted: ReadonlyArray<string>
  /** Calls refused in this run, by wire name and arguments: not asked again. */
  readonly refusedBefore: Set<string>
  /** Facts the tools' results recorded in this run, for a policy's conditions. */
  facts: Readonly<Record<string, Invocation.Fact>>
  /** The limits that stopped this agent or one of its sub-agents, by path. */
  readonly limits: Array<Stop>
}

export const initialState = (options: RunOptions): LoopState => {
  const messages: Array<Message> = []
  if (options.system !== undefined) messages.push({ role: "system", content: options.system })
  if (options.messages !== undefined) messages.push(...options.messages)
  if (options.prompt !== undefined) messages.push({ role: "user", content: options.prompt })
  return {
    messages,
    calls: [],
    usage: { inputTokens: 0, outputTokens: 0 },
    turns: [],
    round: 0,
    untrusted: [],
    refusedBefore: new Set(),
    facts: {},
    limits: []
  }
}

/** A turn whose writes and sends wait for a human: each place is known, or drafted for a human. */
export interface OpenTurn {
  readonly calls: ReadonlyArray<ToolCall>
  readonly outcomes: ReadonlyArray<Outcome | Draft>
}

export type LoopEnd =
  | {
    readonly _tag: "Done"
    readonly stopped: "answer" | "round-limit"
    readonly answer: string | undefined
  }
  | { readonly _tag: "Waiting"; readonly turn: OpenTurn }

/**
 * A write or send the model called in a durable run, made ready for a human:
 * the proposal to record (`record`, made by `mintProposal`), or the proposal
 * recorded for this very call before (a turn taken up again after a restart).
 */
/** What a stored turn's call waits on: a human's decision, or a sub-agent's own durable run. */
export type Waits = { readonly proposal: string } | { readonly child: string }

export type Draft =
  | { readonly draft: unknown; readonly tool: string }
  | { readonly proposal: string }
  /** A write/send sub-agent's own durable run, by id, not finished yet: the call waits on it. */
  | { readonly child: string }

/**
 * How a durable run keeps its turns: each model turn stored as soon as it is
 * answered (a resume goes on from it and never asks the model again), each
 * write or send drafted for a human, and the state after every turn that did
 * not wait.
 */
export interface Durable {
  readonly answered: (state: LoopState, malformed: ReadonlyMap<number, string>) => Effect.Effect<void, any, any>
  readonly draft: (
    tool: AnyTool,
    call: ToolCall,
    input: unknown,
    turn: number
  ) => Effect.Effect<Draft | Outcome, never, any>
  /** Runs after every turn that did not wait, with the state so far. */
  readonly checkpoint: (state: LoopState) => Effect.Effect<void, any, any>
  /** Records an entry of graded's own, written with the step's next commit. */
  readonly record: (event: Audit.Event) => Effect.Effect<void>
  /** Writes the entries held so far: before a tool's own code runs. */
  readonly flush: Effect.Effect<void>
  /**
   * Runs a sub-agent holding writes or sends as a child run whose writes and
   * sends wait for the same human, each with its own payload; its answer is
   * the call's outcome, or the run waits on it (`{ child }`: a durable
   * child run, runs.ts).
   */
  readonly child: (
    tool: AnyTool,
    call: ToolCall,
    input: unknown,
    turn: number
  ) => Effect.Effect<Outcome | Draft, any, any>
}

/**
 * What a call's success brings into the run: the untrusted mark of a tool
 * marked `untrusted`, and the facts its result records. One rule for every
 * call that ran, a read, a write or send a human decided at once, or one a
 * durable run learns was delivered.
 */
export const absorb = (state: LoopState, tool: AnyTool, output: unknown): void => {
  if (tool.untrusted === true && !state.untrusted.includes(tool.name)) {
    state.untrusted = [...state.untrusted, tool.name]
  }
  if (tool.facts !== undefined) state.facts = recordFacts(state.facts, tool.facts, output)
}

// Each agent and limit once, whether it stopped this loop or one below it.
const addStop = (state: LoopState, stop: Stop) => {
  const known = state.limits.some((seen) => seen.limit === stop.limit && pathText(seen.agent) === pathText(stop.agent))
  if (!known) state.limits.push(stop)
}

/**
 * What a sub-agent called in this run brings back: its untrusted marks and
 * the limits that stopped agents below it. Add-only (tree.ts).
 */
export const reportInto = (state: LoopState): Report =>
  Object.freeze({
    add: (untrusted: ReadonlyArray<string>, stops: ReadonlyArray<Stop>) => {
      const added = untrusted.filter((name) => !state.untrusted.includes(name))
      if (added.length > 0) state.untrusted = [...state.untrusted, ...added]
      stops.forEach((stop) => addStop(state, stop))
    }
  })

const noIssues: ReadonlyMap<number, string> = new Map()

// A piece of a streamed turn as the caller is told it: a call by its id and
// its tool's name (what the model named, escaped, as the audit stores it).
const eventOf = (piece: Piece, round: number): LoopEvent =>
  piece.type === "text-delta"
    ? { type: "text-delta", round, delta: piece.delta }
    : piece.type === "call-start"
    ? { type: "call-start", round, id: piece.id, tool: Printable.name(fromWire(piece.name)) }
    : { type: "call-delta", round, id: piece.id, delta: piece.delta }

/** A model turn as the loop judged it, stored until its calls are done. */
export interface Answered {
  readonly calls: ReadonlyArray<ToolCall>
  readonly text: string | undefined
  readonly malformed: ReadonlyMap<number, string>
}

// A call is known again by its wire name and arguments.
const repeatKey = (call: ToolCall) => `${call.name}\u0000${call.arguments}`

/**
 * A call refused in this run (by a gate, a guard or a human's rejection) is
 * not asked again: one rule for a call refused at once and for a durable
 * run's proposal rejected while the run waited.
 */
const remember = (state: LoopState, call: ToolCall, outcome: Outcome) => {
  if (!outcome.call.ok && refusals.has(outcome.call.error.code)) state.refusedBefore.add(repeatKey(call))
}

/** The content and record of one call, once known. */
export const settle = (state: LoopState, call: ToolCall, outcome: Outcome) => {
  remember(state, call, outcome)
  state.calls.push(outcome.call)
  state.messages.push({ role: "tool", callId: call.id, name: call.name, content: outcome.content })
}

export { denied }

export type { Call, Outcome }

// Autonomous, only reads are offered. Supervised (a durable run, on the
// app's stores or, for Agent.supervised, on its own in memory), a write or
// send the model calls becomes a proposal and the loop stops, waiting; reads
// still run as the model's, marked autonomous, under refusing capabilities.
export const loop = (
  options: RunOptions,
  maxRounds: number,
  maxCallsPerRound: number,
  mode: "autonomous" | { readonly durable: Durable },
  state: LoopState,
  resumeFrom?: Answered,
  emit?: Emit
) =>
  Effect.gen(function*() {
    const durable = mode === "autonomous" ? undefined : mode.durable
    // Streamed, each outcome is told as soon as it is known.
    const told = (outcome: Outcome) =>
      emit === undefined ? Effect.succeed(outcome)
        : Effect.as(emit({ type: "call", round: state.round, call: outcome.call }), outcome)
    // A durable run's own entries go in with the step's commit (outbox.ts).
    const note = durable?.record ?? Audit.record
    const model = yield* modelHere
    // Who serves the turns, as the adapter names itself: on each turn's usage entry.
    const served = {
      ...(typeof model.provider === "string" ? { provider: model.provider } : {}),
      ...(typeof model.model === "string" ? { model: model.model } : {})
    }
    const registry = Registry.make(options.toolkit, {})
    // The tree this loop is part of: its root's, or one it roots.
    const tree = (yield* treeRef) ?? makeTree(options.budget ?? {})
    const path = yield* pathRef
    const stopped = (limit: Stop["limit"]) => addStop(state, { agent: path, limit })
    const report = reportInto(state)
    const inTree = <A, E, R>(self: Effect.Effect<A, E, R>) =>
      Effect.provideService(Effect.provideService(self, treeRef, tree), reportRef, report)
    const context = yield* Invocation.current
    const guards = yield* guardsHere
    // The context a turn is judged in: the run's, with the facts its tools
    // recorded so far. A fact the app set stands: a tool's result cannot
    // overwrite it.
    const judged = (): Invocation.Context =>
      Object.keys(state.facts).length === 0 ? context
        : Invocation.merge(context, { facts: { ...state.facts, ...context.facts } })
    // Defence 1: the model is shown only what passes every gate here. Without
    // a guard the offer is made once; with one (a policy) every turn, as the
    // facts the turn is judged on change.
    const offered = new Map<string, AnyTool>()
    let tools: ReadonlyArray<FunctionSchema> = []
    const offer = Effect.gen(function*() {
      const { guidelines, listing } = yield* registry.screened(judged(), guards.length > 0 ? state.messages : undefined)
      offered.clear()
      for (const entry of listing) if (entry.offered) offered.set(entry.wire, options.toolkit.get(entry.name)!)
      yield* note({
        type: "offered",
        tools: listing.filter((entry) => entry.offered).map((entry) => entry.name),
        suppressed: listing.filter((entry) => !entry.offered).map((entry) =>
          entry.gate !== undefined
            ? { tool: entry.name, reason: entry.reason ?? "not offered", gate: entry.gate }
            : { tool: entry.name, reason: entry.reason ?? "not offered" }
        ),
        ...(guidelines !== undefined ? { guidelines } : {})
      })
      tools = guards.length === 0
        ? registry.functionSchemas(context)
        : registry.functionSchemas(context).filter((definition) => offered.has(definition.name))
    })
    yield* offer
    const { refusedBefore } = state

    const refuse = (id: string, tool: string, gate: string, code: DenialCode, reason: string, message = reason) =>
      Effect.as(
        emit === undefined ? note({ type: "refused", tool, gate, reason }) : Effect.andThen(
          note({ type: "refused", tool, gate, reason }),
          emit({ type: "refused", round: state.round, id, tool, gate, reason })
        ),
        denied(id, tool, code, message)
      )

    // The checks every call goes through before a tool is reached: the tool,
    // if offered and the call is new, well sized and valid JSON.
    const check = (call: ToolCall): Result.Result<readonly [AnyTool, unknown], Effect.Effect<Outcome>> => {
      // What the model named is stored escaped and cut unless it is a tool name.
      const name = Printable.name(fromWire(call.name))
      // Defence 2: nothing outside the offered set runs, whatever its name.
      const tool = offered.get(call.name)
      if (tool === undefined) {
        const known = options.toolkit.get(name)
        return Result.fail(
          known !== undefined
            ? refuse(call.id, name, "offered", "not-offered", `${known.name} is not offered to the model here`)
            : refuse(call.id, name, "offered", "unknown-tool", `there is no tool named ${name}`)
        )
      }
      if (refusedBefore.has(repeatKey(call))) {
        const reason = "this exact call was already refused in this run; it is not asked again"
        return Result.fail(refuse(call.id, tool.name, "repeat", "refused", reason))
      }
      const maxArgumentChars = options.maxArgumentChars ?? defaultMaxArgumentChars
      if (call.arguments.length > maxArgumentChars) {
        const reason = `the arguments are ${call.arguments.length} characters; at most ${maxArgumentChars} are accepted`
        return Result.fail(
          refuse(call.id, tool.name, "input", "invalid-input", reason, invalidInputMessage(tool.name, reason))
        )
      }
      const parsed = parse(call.arguments)
      if (Result.isFailure(parsed)) {
        return Result.fail(
          refuse(
            call.id,
            tool.name,
            "input",
            "invalid-input",
            parsed.failure,
            invalidInputMessage(tool.name, parsed.failure)
          )
        )
      }
      // What JSON cannot carry (too deep, a number it would write as null) is
      // refused here, for every call: a durable run's write or send included.
      const notJson = jsonIssue(parsed.success)
      if (notJson !== undefined) {
        return Result.fail(
          refuse(call.id, tool.name, "input", "invalid-input", notJson, invalidInputMessage(tool.name, notJson))
        )
      }
      return Result.succeed([tool, parsed.success] as const)
    }

    // Runs for every call a model makes: checks first, then one registry
    // dispatch, as plain effects rather than a generator.
    const dispatch = (call: ToolCall): Effect.Effect<Outcome, never, any> => {
      const checked = check(call)
      if (Result.isFailure(checked)) return checked.failure
      const [tool, input] = checked.success
      const untrusted = state.untrusted
      // Defence 3: the registry's gates again, under capabilities that refuse
      // (provided once around the whole loop, in `run`).
      // The loop is graded's own code: the facts it recorded reach the call
      // even where the loop runs inside a tool's code. They are the facts as
      // the call is dispatched: a write of the same turn that a human approves
      // meanwhile does not change how this one is judged.
      const facts = Object.keys(state.facts).length === 0 ? undefined : judged().facts
      const viaRegistry = inTree(
        facts === undefined ? registry.dispatch(tool.name, input)
          : Effect.updateService(
            registry.dispatch(tool.name, input),
            currentRef,
            (outer) => Invocation.merge(outer, { facts })
          )
      )
      const dispatched = durable !== undefined
        ? Effect.andThen(
          durable.flush,
          Invocation.within({ autonomous: true, untrusted })(withoutCapabilities(viaRegistry))
        )
        : untrusted.length === 0
        ? viaRegistry
        : Invocation.within({ untrusted })(viaRegistry)
      // The gate that refused the call, if one did: told when the loop streams.
      let gate: string | undefined
      const outcome = Effect.map(dispatched, ({ result, success, text }): Outcome => {
        if (success !== undefined) {
          absorb(state, tool, success.output)
          return {
            call: { ok: true, id: call.id, tool: tool.name, input: success.input, output: success.output },
            content: text ?? JSON.stringify(forModel(result))
          }
        }
        const code = result.code ?? "failed"
        const outcome: Outcome = {
          call: { ok: false, id: call.id, tool: tool.name, error: { code, message: result.error ?? "failed" } },
          content: JSON.stringify(forModel(result))
        }
        gate = result.gate
        // At once: the same read called again later in this turn is not run either.
        remember(state, call, outcome)
        return outcome
      })
      return emit === undefined ? outcome : Effect.tap(outcome, ({ call: done }) =>
        gate === undefined || done.ok ? Effect.void : emit({
          type: "refused",
          round: state.round,
          id: done.id,
          tool: done.tool,
          gate,
          reason: done.error.message
        }))
    }

    // Durable, a write or send is drafted for a human, after the same checks.
    const propose = (call: ToolCall, durable: Durable): Effect.Effect<Outcome | Draft, any, any> => {
      const checked = check(call)
      if (Result.isFailure(checked)) return checked.failure
      const [tool, input] = checked.success
      // Approving "billing(input)" would not be approving the inner payloads:
      // a sub-agent holding writes or sends is not proposed as one call, it
      // runs as a child run whose own writes and sends are proposed.
      const child = innerOf(tool) === undefined ? undefined : durable.child
      // Drafted in the turn's context, facts included, as a read is run: a
      // send's prepare may read them (the channel a lookup recorded).
      const facts = Object.keys(state.facts).length === 0 ? undefined : judged().facts
      // A sub-agent's child run starts in the turn's context, its marks included.
      const made: Effect.Effect<Outcome | Draft, any, any> = child === undefined
        ? durable.draft(tool, call, input, state.round)
        : Effect.andThen(
          durable.flush,
          Invocation.within({ untrusted: state.untrusted })(inTree(child(tool, call, input, state.round)))
        )
      const draft = facts === undefined ? made
        : Effect.updateService(
          made,
          currentRef,
          (outer) =>
            Invocation.merge(outer, { facts })
        )
      if (guards.length === 0) return draft
      // The guards (a policy) judge a durable proposal as they judge any call,
      // in the context of this turn, facts included.
      return Effect.flatMap(admitAll(guards, tool, input, judged()), (refused) =>
        refused === undefined ? draft
          : refuse(call.id, tool.name, refused.gate, "refused", refused.reason))
    }

    // The model's turn: asked for, or the stored one a resume goes on from.
    const { messages, usage } = state
    let stored = resumeFrom
    const ask = Effect.gen(function*() {
      const round = ++state.round
      if (guards.length > 0 && round > 1) {
        yield* offer
      }
      const request = { messages: [...messages], tools }
      const streams = emit !== undefined && model.stream !== undefined
      const taken = streams
        ? yield* assemble(model.stream!(request), (piece) => emit!(eventOf(piece, round)))
        : { response: yield* model.generate(request), issues: noIssues }
      const checked = checkTurn(taken.response, round)
      if (Result.isFailure(checked)) {
        return yield* checked.failure
      }
      const answer = taken.issues.size === 0 ? checked.success : {
        ...checked.success,
        malformed: new Map([...checked.success.malformed, ...taken.issues])
      }
      // A model that does not stream is told as one piece of text.
      if (emit !== undefined && !streams && answer.text !== undefined && answer.text !== "") {
        yield* emit({ type: "text-delta", round, delta: answer.text })
      }
      if (answer.usage !== undefined) {
        usage.inputTokens += answer.usage.inputTokens
        usage.outputTokens += answer.usage.outputTokens
        if (answer.usage.cost !== undefined) usage.cost = (usage.cost ?? 0) + answer.usage.cost
        state.turns.push({ round, usage: answer.usage })
        yield* note({ type: "usage", round, ...answer.usage, ...served })
      }
      messages.push({ role: "assistant", content: answer.text, toolCalls: answer.calls })
      unsaved = true
      lastTurn = tree.turn()
      return { calls: answer.calls, text: answer.text, malformed: answer.malformed }
    })
    // Whether the turn the model just gave is stored yet (below).
    let unsaved = false
    // Whether the turn just taken is the last the tree's budget allows.
    let lastTurn = false
    // Whether running the turn's calls runs no code but graded's: each a
    // well-formed write within the limits, which becomes a proposal (a read
    // runs its tool, a send's payload is prepared by its tool's code).
    const onlyProposals = (answered: Answered) =>
      durable !== undefined && answered.calls.length <= maxCallsPerRound &&
      answered.calls.every((call, index) => {
        const tool = offered.get(call.name)
        // A sub-agent runs a model and its tools: its call is no proposal.
        return !answered.malformed.has(index) && tool?.grade === "write" && innerOf(tool) === undefined
      })
    for (;;) {
      const answered: Answered = stored ?? (yield* ask)
      stored = undefined
      // A durable run stores the model's turn before any code of a tool
      // runs for it, so a restart goes on from it and never asks the model
      // again. A turn that runs none (an answer, a round over the limit, only
      // writes to propose) is stored with the step that ends it instead, in
      // that step's transaction: between the model's answer and that commit
      // nothing happens outside the process, so a restart in between is the
      // same as one before the answer came.
      if (
        durable !== undefined && unsaved && answered.calls.length > 0 && state.round < maxRounds &&
        !onlyProposals(answered)
      ) {
        yield* durable.answered(state, answered.malformed)
      }
      unsaved = false
      const round = state.round
      const response = { text: answered.text, toolCalls: answered.calls }
      if (response.toolCalls.length === 0) {
        yield* note({ type: "answered", rounds: round })
        return { _tag: "Done", stopped: "answer", answer: response.text } satisfies LoopEnd as LoopEnd
      }
      if (round >= maxRounds || lastTurn) {
        // The budget is spent: nothing more runs, and the caller sees what was asked.
        const own = round >= maxRounds
        stopped(own ? "round-limit" : "budget-rounds")
        for (const call of response.toolCalls) {
          settle(
            state,
            call,
            yield* told(denied(
              call.id,
              Printable.name(fromWire(call.name)),
              "round-limit",
              own
                ? `the limit of ${maxRounds} rounds is reached`
                : `the run's budget of ${tree.budget.rounds} model turns, over all its agents, is spent`
            ))
          )
        }
        yield* note({
          type: "round-limit",
          rounds: round,
          pending: response.toolCalls.map((call) => Printable.name(fromWire(call.name)))
        })
        return { _tag: "Done", stopped: "round-limit", answer: response.text } satisfies LoopEnd as LoopEnd
      }
      const outcomes: Array<Outcome | Draft> = []
      // Supervised, each write or send becomes a proposal, after the turn's
      // reads: the turn goes on when every one is decided.
      const proposing: Array<readonly [number, ToolCall]> = []
      for (const [index, call] of response.toolCalls.entries()) {
        const issue = answered.malformed.get(index)
        if (issue === undefined && index >= maxCallsPerRound) stopped("call-limit")
        // Every well-formed call within this agent's own limit counts against the tree's.
        const overBudget = issue === undefined && index < maxCallsPerRound && !tree.call()
        if (overBudget) {
          stopped("budget-calls")
          outcomes[index] = yield* told(
            yield* refuse(
              call.id,
              Printable.name(fromWire(call.name)),
              "call-limit",
              "call-limit",
              `the run's budget of ${tree.budget.calls} tool calls, over all its agents, is spent`
            )
          )
          continue
        }
        if (durable !== undefined && issue === undefined && index < maxCallsPerRound) {
          const tool = offered.get(call.name)
          if (tool !== undefined && isConfirmable(tool.grade)) {
            proposing.push([index, call])
            continue
          }
        }
        outcomes[index] = yield* told(
          issue !== undefined
            ? yield* refuse(
              call.id,
              Printable.name(fromWire(call.name)),
              "call",
              "invalid-input",
              `the tool call is malformed: ${issue}`
            )
            : index >= maxCallsPerRound
            ? yield* refuse(
              call.id,
              Printable.name(fromWire(call.name)),
              "call-limit",
              "call-limit",
              `at most ${maxCallsPerRound} tool calls are run in one turn; this was call ${
                index + 1
              } of ${response.toolCalls.length}`
            )
            : yield* dispatch(call)
        )
      }
      // Every write and send of the turn is judged in the turn's context (the
      // facts, marks and refusals its reads left) before any is decided: what
      // one decision brings in reaches the next turn, never a sibling.
      if (durable !== undefined) {
        const drafted = yield* Effect.forEach(
          proposing,
          ([, call]) =>
            Effect.flatMap(
              propose(call, durable),
              (made): Effect.Effect<Outcome | Draft> => "call" in made ? told(made) : Effect.succeed(made)
            ),
          { concurrency: 1 }
        )
        proposing.forEach(([index], i) => outcomes[index] = drafted[i]!)
      }
      if (outcomes.some((outcome) => "draft" in outcome || "proposal" in outcome || "child" in outcome)) {
        return { _tag: "Waiting", turn: { calls: response.toolCalls, outcomes } } satisfies LoopEnd as LoopEnd
      }
      for (const [index, call] of response.toolCalls.entries()) settle(state, call, outcomes[index] as Outcome)
      if (durable !== undefined) yield* durable.checkpoint(state)
    }
  })

/** What a loop that ended gives back: one shape for every run, autonomous, supervised or durable. */
export const finish = (
  state: LoopState,
  end: { readonly stopped: "answer" | "round-limit"; readonly answer?: string | undefined }
) => ({
  stopped: end.stopped,
  answer: end.answer,
  rounds: state.round,
  calls: state.calls,
  messages: state.messages,
  usage: state.usage as Usage,
  turns: state.turns,
  untrusted: state.untrusted,
  limits: state.limits
})

export const checkOptions = (options: RunOptions) =>
  Effect.gen(function*() {
    const maxRounds = options.maxRounds ?? defaultMaxRounds
    if (!Number.isInteger(maxRounds) || maxRounds < 1) {
      return yield* new InvalidOptions({
        option: "maxRounds",
        issue: `must be a positive whole number, got ${maxRounds}`
      })
    }
    const maxCallsPerRound = options.maxCallsPerRound ?? defaultMaxCallsPerRound
    if (!Number.isInteger(maxCallsPerRound) || maxCallsPerRound < 1) {
      return yield* new InvalidOptions({
        option: "maxCallsPerRound",
        issue: `must be a positive whole number, got ${maxCallsPerRound}`
      })
    }
    for (const key of ["rounds", "calls"] as const) {
      const limit = options.budget?.[key]
      if (limit !== undefined && (!Number.isInteger(limit) || limit < 1)) {
        return yield* new InvalidOptions({
          option: `budget.${key}`,
          issue: `must be a positive whole number, got ${limit}`
        })
      }
    }
    if (options.prompt === undefined && (options.messages === undefined || options.messages.length === 0)) {
      return yield* new InvalidOptions({ option: "prompt", issue: "is missing: give a prompt or messages" })
    }
    return { maxRounds, maxCallsPerRound }
  })

export const run = (options: RunOptions, emit?: Emit) =>
  Effect.gen(function*() {
    const { maxCallsPerRound, maxRounds } = yield* checkOptions(options)
    const outer = yield* Invocation.current
    const traceId = options.context?.traceId ?? outer.traceId ?? crypto.randomUUID()
    // A conversation continued keeps the marks of the one it continues.
    const state = { ...initialState(options), untrusted: [...(options.context?.untrusted ?? [])] }
    // Only a cast gets a write or send tool here. The loop goes on without
    // them (the registry hides them); the audit says what the compiler would.
    const offenses = offensesOf(options.toolkit.tools)
    const cast = offenses.length === 0
      ? Effect.void
      : Audit.record({
        type: "refused",
        tool: "Agent.run",
        gate: "autonomous",
        reason: autonomousViolation(offenses.join("; "))
      })
    const context: Partial<Invocation.Context> = {
      ...options.context,
      autonomous: true,
      traceId
    }
    // Every tool call of the loop sees capabilities that refuse, whatever an
    // outer layer provided; provided once here rather than for each call.
    const end = yield* Invocation.within(context)(
      Effect.andThen(
        cast,
        withoutCapabilities(loop(options, maxRounds, maxCallsPerRound, "autonomous", state, undefined, emit))
      )
    )
    return end._tag === "Done" ? finish(state, end) : yield* Effect.die(new Error("an autonomous loop cannot wait"))
  })
