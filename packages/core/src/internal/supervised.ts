// Agent.supervised: a durable run (runs.ts) on stores of its own, in memory,
// whose proposals the caller's HumanConfirm decides as they come. There is
// one loop: what runs, what is asked and what the model is told are decided
// there and in Proposal.approve, for this run as for one on SQL.
import { Duration, Effect, Layer, Result, Schema } from "effect"
import * as Audit from "../Audit.js"
import * as Invocation from "../Invocation.js"
import { approve, type Proposal } from "../Proposal.js"
import * as ProposalStore from "../ProposalStore.js"
import * as RunStore from "../RunStore.js"
import type { Any as AnyToolkit } from "../Toolkit.js"
import { InvalidEdit, invalidInputMessage, issueOf, parseOptions, Refused } from "../ToolError.js"
import type { ModelError } from "../LanguageModel.js"
import { denied, type Durable, type finish, type InvalidOptions, type RunOptions } from "./agent.js"
import { failureOf } from "./registry.js"
import { ask } from "./subAgent.js"
import { innerOf } from "./tree.js"
import type { Emit } from "./events.js"
import * as Runs from "./runs.js"
import { byGraded } from "./runs.js"
import { unguarded } from "./memoryStores.js"

// The human at the caller's UI takes as long as they need: no lease lapses
// under them, and no other process is there to take the run over.
const humanTime = Duration.days(36_500)

// What an approval that delivered nothing leaves pending is settled here, so
// that the run goes on (in a read tool's code too, where the guarded store
// refuses every decision): a refusal (a gate, a policy, a decision asked for
// where no human decides) as graded's, an invalid edit as the human's
// rejection. Both are in the audit already, where they happened.
const settleLeftOpen = (id: string, error: unknown) =>
  Effect.gen(function*() {
    // The run's own memory store, unguarded: what is written here only
    // settles a refusal, and nothing is delivered by it.
    const store = unguarded.get(yield* ProposalStore.ProposalStore)
    if (store === undefined) return yield* Effect.die(new Error("Agent.supervised: its proposal store is not its own"))
    const proposal = yield* Effect.orDie(store.get(id))
    if (proposal.status !== "pending") return
    const at = new Date(yield* Effect.clockWith((clock) => clock.currentTimeMillis)).toISOString()
    const decision = error instanceof Refused
      ? { by: byGraded, at, edited: false, reason: error.reason }
      : error instanceof InvalidEdit
      ? { by: error.by, at, edited: true, reason: error.message }
      : { by: byGraded, at, edited: false, reason: "no decision could be made; nothing was done" }
    yield* Effect.orDie(store.reject(id, decision))
  })

const decide = (toolkit: AnyToolkit, proposal: Proposal) =>
  proposal.status !== "pending"
    ? Effect.die(new Error(`Agent.supervised: proposal ${proposal.id} is ${proposal.status}, not waiting for a human`))
    : Effect.catch(
      Effect.asVoid(approve(toolkit, proposal.id, { lease: humanTime })),
      (error) => settleLeftOpen(proposal.id, error)
    )

// A sub-agent holding writes or sends, called here: a child run of its own,
// supervised by the same human, each of its writes and sends asked with its
// exact payload (the card shows the path: HumanConfirm.View.path). Its
// answer is the call's outcome; the calling model never sees its proposals.
// Streamed, its cards are told to the caller as the run's own are (`pending`,
// `decided`): a page that shows each card after its pending event shows these
// too. Its other events are its own model's, not the calling run's.
const childOf = (emit: Emit | undefined): NonNullable<Durable["child"]> => (tool, call, input) =>
  Effect.gen(function*() {
    const spec = innerOf(tool)!
    const decoded = Schema.decodeUnknownResult(tool.input, parseOptions)(input)
    if (Result.isFailure(decoded)) {
      const issue = issueOf(decoded.failure)
      yield* Audit.record({ type: "refused", tool: tool.name, gate: "input", reason: issue })
      return denied(call.id, tool.name, "invalid-input", invalidInputMessage(tool.name, issue))
    }
    yield* Audit.record({ type: "called", tool: tool.name, input })
    const cards: Emit | undefined = emit === undefined
      ? undefined
      : (event) => event.type === "pending" || event.type === "decided" ? emit(event) : Effect.void
    const answer = yield* Effect.result(ask(tool.name, spec, decoded.success, (inner) => supervised(inner, cards)))
    // What the model is told of a failure: the tool's fixed text for it, as for any call.
    const failed = (error: unknown) =>
      Effect.gen(function*() {
        const { code, message } = failureOf(tool, error)
        yield* Audit.record({ type: "failed", tool: tool.name, error: message })
        return denied(call.id, tool.name, code, message)
      })
    if (Result.isFailure(answer)) return yield* failed(answer.failure)
    const encoded = Schema.encodeUnknownResult(tool.output)(answer.success)
    if (Result.isFailure(encoded)) return yield* failed(encoded.failure)
    const content = JSON.stringify({ ok: true, data: encoded.success })
    yield* Audit.record({ type: "completed", tool: tool.name, chars: content.length })
    return {
      call: { ok: true, id: call.id, tool: tool.name, input: decoded.success, output: answer.success },
      content
    }
  })

// Typed here: a child run is a supervised run, so the two refer to each other.
export const supervised = (
  options: RunOptions,
  emit?: Emit
): Effect.Effect<ReturnType<typeof finish>, InvalidOptions | ModelError, any> =>
  Effect.gen(function*() {
    const child = childOf(emit)
    let outcome = yield* Runs.start({ ...options, lease: humanTime, child }, emit)
    // The turn's writes and sends are asked together, as a UI shows them.
    while (outcome.status === "waiting") {
      yield* Invocation.within(options.context ?? {})(
        Effect.forEach(outcome.pending, (proposal) => decide(options.toolkit, proposal), {
          concurrency: "unbounded",
          discard: true
        })
      )
      outcome = yield* Runs.resume(outcome.runId, { toolkit: options.toolkit, lease: humanTime, child }, emit)
    }
    return outcome.status === "finished"
      ? outcome.result
      : yield* Effect.die(new Error("Agent.supervised: its run was cancelled, which nothing here does"))
  }).pipe(
    // Stores of its own that nothing else holds: a run here is never busy,
    // missing or taken. Built with a memo map of their own (`local`): Effect 4
    // reuses a layer an enclosing `provide` built, and the caller's own
    // `ProposalStore.memory` is not this run's.
    Effect.catchTags({
      "@graded/core/RunStore/RunBusy": Effect.die,
      "@graded/core/RunStore/RunExists": Effect.die,
      "@graded/core/RunStore/RunNotFound": Effect.die
    }),
    Effect.provide(Layer.merge(RunStore.memory, ProposalStore.memory), { local: true })
  )
