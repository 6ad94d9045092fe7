// Agent.supervised: a durable run (runs.ts) on stores of its own, in memory,
// whose proposals the caller's HumanConfirm decides as they come. There is
// one loop: what runs, what is asked and what the model is told are decided
// there and in Proposal.approve, for this run as for one on SQL.
import { Duration, Effect, Layer } from "effect"
import * as Invocation from "../Invocation.js"
import { approve, type Proposal } from "../Proposal.js"
import * as ProposalStore from "../ProposalStore.js"
import * as RunStore from "../RunStore.js"
import type { Any as AnyToolkit } from "../Toolkit.js"
import { InvalidEdit, Refused } from "../ToolError.js"
import type { ModelError } from "../LanguageModel.js"
import type { finish, InvalidOptions, RunOptions } from "./agent.js"
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

// A sub-agent holding writes or sends runs as a durable run of its own in
// the same stores (runs.ts): its writes and sends are this run's pending
// proposals, each with its path, decided here through the root's toolkit.
export const supervised = (
  options: RunOptions,
  emit?: Emit
): Effect.Effect<ReturnType<typeof finish>, InvalidOptions | ModelError, any> =>
  Effect.gen(function*() {
    let outcome = yield* Runs.start({ ...options, lease: humanTime }, emit)
    // The turn's writes and sends are asked together, as a UI shows them.
    while (outcome.status === "waiting") {
      yield* Invocation.within(options.context ?? {})(
        Effect.forEach(outcome.pending, (proposal) => decide(options.toolkit, proposal), {
          concurrency: "unbounded",
          discard: true
        })
      )
      outcome = yield* Runs.resume(outcome.runId, { toolkit: options.toolkit, lease: humanTime }, emit)
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
