// How a human's decision on a proposal runs (Proposal.ts has the signatures
// and docs): approval and retry are one path (asked through the caller's
// HumanConfirm, the delivery recorded under its key, then run), and every
// move of the store commits with its audit entry. A model's fiber or a tool's
// own code is refused before the proposal is touched.
// Who may import this: Proposal.ts.
import { Clock, Duration, Effect, Option, Schema } from "effect"
import * as Audit from "../Audit.js"
import * as Invocation from "../Invocation.js"
import type { Outcome, Proposal } from "../Proposal.js"
import { AlreadyDecided, NotFound, ProposalStore } from "../ProposalStore.js"
import type * as Toolkit from "../Toolkit.js"
import { InvalidEdit, parseOptions, Refused, Rejected } from "../ToolError.js"
import { mayCause } from "./authority.js"
import { admitAll, guardsHere } from "./guard.js"
import { refuse } from "./refuse.js"
import { failureOf } from "./registry.js"
import { sealed } from "./seal.js"
import { causeLine, proposalStoreHere, runStoreIfAny, soleFailure, transaction } from "./services.js"
import { confirmerOf, inSchema, isSend } from "./tool.js"
import { drift } from "./confirm.js"
import { millisOf } from "./deadlines.js"
import { pathRef, pathText, toolAt } from "./tree.js"

/** Proposal.payloadToConfirm. */
export const payloadToConfirm = (proposal: Proposal): unknown =>
  (proposal.status === "in-doubt" || proposal.status === "approving") && proposal.approved !== undefined
    ? proposal.approved
    : proposal.grade === "send"
    ? proposal.payload
    : proposal.input

const iso = (millis: number) => new Date(millis).toISOString()
const now = sealed(Effect.map(Clock.currentTimeMillis, iso))

// How long a proposal waited for its decision: both times are graded's ISO stamps.
const waitedSince = (proposedAt: string, at: string): number => Math.max(0, Date.parse(at) - Date.parse(proposedAt))

export const defaultLease: Duration.Duration = Duration.minutes(15)

export const interruptedWhileDelivering =
  "the delivery was interrupted after it began; it may have gone out, so it is not delivered again unless a human retries it"

type Decide = "approve" | "retry"

// The run a proposal belongs to, read where a RunStore is in scope.
const runOf = (proposal: Proposal) =>
  proposal.runId === undefined ? Effect.succeed(undefined) : Effect.gen(function*() {
    const runs = yield* runStoreIfAny
    if (Option.isNone(runs)) return undefined
    return Option.getOrUndefined(yield* Effect.option(runs.value.get(proposal.runId!)))
  })

// How the run a proposal belongs to was cancelled: a cancelled run's open
// proposals are rejected, and one a human was deciding while it was
// cancelled must not go out when they answer.
const runCancelled = (proposal: Proposal) =>
  Effect.map(runOf(proposal), (run) => run?.state.ended?.status === "cancelled" ? run.state.ended : undefined)

// Approval and retry are one path: a human is asked through the caller's
// HumanConfirm, the delivery is recorded under its key, then it runs.
export const decide = (
  toolkit: Toolkit.Any,
  id: string,
  mode: Decide,
  options?: { readonly lease?: Duration.Input | undefined }
) =>
  Effect.flatMap(
    Effect.flatMap(proposalStoreHere, (store) => store.get(id)),
    (stored) => underItsTrace(stored)(atItsPath(stored)(decideStored(toolkit, stored, mode, options)))
  )

// A sub-agent's proposal is decided where it was made: the card shows the
// path (HumanConfirm.View.path) and the audit entries carry it.
const atItsPath = (proposal: Proposal) =>
  proposal.path === undefined || proposal.path.length === 0 ? <A, E, R>(self: Effect.Effect<A, E, R>) => self
    : <A, E, R>(self: Effect.Effect<A, E, R>) =>
      Effect.provideService(self, pathRef, Object.freeze([...proposal.path!]))

// A decision is audited under the trace of the run (or call) that proposed
// it, so that the run's trail holds who decided what; the decider is `by`.
const underItsTrace = (proposal: Proposal) =>
  proposal.traceId === undefined ? <A, E, R>(self: Effect.Effect<A, E, R>) => self
    : Invocation.within({ traceId: proposal.traceId })

const decideStored = (
  toolkit: Toolkit.Any,
  stored: Proposal,
  mode: Decide,
  options?: { readonly lease?: Duration.Input | undefined }
) =>
  Effect.gen(function*() {
    const store = yield* proposalStoreHere
    const id = stored.id
    // A sub-agent's proposal is its inner tool's, found by the path to it.
    const tool = toolAt(toolkit, stored.path, stored.tool)
    const confirm = tool === undefined || tool.grade !== stored.grade ? undefined : confirmerOf(tool)
    if (tool === undefined || confirm === undefined) {
      return yield* refuse(
        new Refused({
          tool: stored.tool,
          gate: "unknown",
          reason: `this toolkit has no ${stored.grade} tool ${
            stored.path === undefined || stored.path.length === 0 ? "" : `${pathText(stored.path)} → `
          }${stored.tool} to deliver it`
        })
      )
    }
    // Refused before the proposal is claimed: a model's fiber or a read
    // tool's own code leaves it waiting for a human.
    const refusal = yield* mayCause(tool.name, stored.grade)
    if (refusal !== undefined) return yield* refuse(refusal)
    const context = yield* Invocation.current
    // A human's button too is offered only where the guards in force (a
    // policy) authorize the tool, for the human who presses it, judged on the
    // facts the run recorded, as the call was (the app's own facts stand).
    const guards = yield* guardsHere
    const facts = guards.length === 0 ? undefined : (yield* runOf(stored))?.state.facts
    const judged = facts === undefined ? context : Invocation.merge(context, { facts: { ...facts, ...context.facts } })
    const guarded = yield* admitAll(guards, tool, stored.payload, judged)
    if (guarded !== undefined) {
      return yield* refuse(new Refused({ tool: tool.name, gate: guarded.gate, reason: guarded.reason }))
    }
    const by = context.actor ?? "human"
    const atomically = transaction(store)
    // A cancelled run's proposal waiting still (its cancel raced an earlier
    // approval, which put it back) is rejected as the cancel would have.
    const cancelledBefore = yield* runCancelled(stored)
    if (cancelledBefore !== undefined && stored.status === "pending") {
      const reason = `the run was cancelled: ${cancelledBefore.reason}`
      yield* store.reject(id, { by: cancelledBefore.by, at: cancelledBefore.at, edited: false, reason })
      return yield* new Rejected({ tool: tool.name, by: cancelledBefore.by, reason })
    }
    const lease = millisOf(options?.lease ?? defaultLease)
    const until = (millis: number) => iso(millis + lease)
    const claimed = mode === "approve"
      ? yield* store.claim(id, by, until(yield* Clock.currentTimeMillis))
      : yield* atomically(Effect.tap(
        store.retry(id, by, until(yield* Clock.currentTimeMillis)),
        () => Audit.record({ type: "in-doubt", tool: tool.name, proposal: id, action: "retried", by })
      ))
    // A retry keeps the key the first attempt went out with.
    const key = claimed.deliveryKey ?? crypto.randomUUID()
    // Once the human approved: the delivery is recorded under its key (a lost
    // lease stops it here, before anything is written or sent), and from then
    // on an interruption may have let it out.
    let delivering = false
    // While the delivery is being recorded: a failure then says nothing of
    // whether the record holds (a write may commit and its answer be lost).
    let recording = false
    // Whether what the human approved was an edit: kept with a delivery in doubt.
    let editedApproval = false
    // While the human decided, the proposal may have expired or its run been
    // cancelled: then nothing goes out.
    const closedMeanwhile = Effect.gen(function*() {
      const millis = yield* Clock.currentTimeMillis
      if (stored.expiresAt !== undefined && stored.expiresAt <= iso(millis)) {
        return yield* refuse(
          new Refused({
            tool: tool.name,
            gate: "proposal",
            reason: `it expired at ${stored.expiresAt}, while the human decided; nothing was delivered`
          })
        )
      }
      const cancelled = yield* runCancelled(stored)
      if (cancelled !== undefined) {
        return yield* new Rejected({
          tool: tool.name,
          by: cancelled.by,
          reason: `the run was cancelled while the human decided: ${cancelled.reason}`
        })
      }
      return millis
    })
    const schema = isSend(tool) ? tool.payload : tool.input
    // Only while this approval's claim still holds it: one whose lease
    // lapsed may have been claimed by another human since. What the human
    // approved is recorded with the delivery, so that a retry delivers it.
    const beforeEffect = (approval: { readonly payload: unknown; readonly edited: boolean }) =>
      Effect.gen(function*() {
        // A retry delivers again what was approved, under the same key: an
        // edit would be another delivery, which the key would hide.
        if (mode === "retry" && approval.edited && claimed.approved !== undefined) {
          return yield* refuse(
            new Refused({
              tool: tool.name,
              gate: "proposal",
              reason: "a retry delivers what was approved before, unedited; propose the edited call again instead"
            })
          )
        }
        const millis = yield* closedMeanwhile
        const payload = yield* inSchema(tool)(Schema.encodeEffect(schema)(approval.payload)).pipe(
          Effect.mapError(() =>
            new Refused({ tool: tool.name, gate: "proposal", reason: "what was approved does not encode to be kept" })
          )
        )
        recording = true
        editedApproval = approval.edited
        yield* store.beginDelivery(id, key, until(millis), claimed.decision, { payload, edited: approval.edited })
        recording = false
        delivering = true
      })
    // A retry that stops before its delivery began is in doubt as it was,
    // with the reason it was in doubt: its first attempt may have gone out.
    const asItWas = (at: string): Outcome =>
      mode === "retry"
        ? { status: "in-doubt", decision: { by, at, edited: false, reason: stored.decision?.reason } }
        : { status: "pending" }
    const interrupted = Effect.flatMap(now, (at) =>
      store.settle(
        id,
        delivering || recording
          ? { status: "in-doubt", decision: { by, at, edited: editedApproval, reason: interruptedWhileDelivering } }
          : asItWas(at)
      )).pipe(Effect.ignore)
    // A retry is asked about what was approved before (edited or not).
    const asked = mode === "retry" ? payloadToConfirm(claimed) : payloadToConfirm(stored)
    const exit = yield* Effect.exit(Effect.onInterrupt(
      Effect.flatMap(
        inSchema(tool)(Schema.decodeUnknownEffect(schema, parseOptions)(asked)).pipe(
          Effect.mapError(() =>
            new Refused({
              tool: tool.name,
              gate: "proposal",
              reason: `the stored ${stored.grade === "send" ? "payload" : "input"} no longer fits the tool's schema`
            })
          )
        ),
        (payload) =>
          // What the store shows (the card, `graded pending`) must be what runs.
          Effect.flatMap(drift(inSchema(tool), schema, asked, payload), (drifted) =>
            drifted === undefined
              ? confirm(payload, { beforeEffect, idempotencyKey: key })
              : Effect.fail(
                new Refused({ tool: tool.name, gate: "proposal", reason: `the stored payload: ${drifted}` })
              ))
      ),
      () => interrupted
    ))
    const at = yield* now
    if (exit._tag === "Success") {
      const { by, edited, output } = exit.value
      const encoded = yield* Effect.orElseSucceed(inSchema(tool)(Schema.encodeEffect(tool.output)(output)), () =>
        undefined)
      const settled = yield* store.settle(id, { status: "delivered", decision: { by, at, edited }, output: encoded })
      return { proposal: settled, output }
    }
    const failure = soleFailure(exit.cause)
    // The delivery could not be recorded: the proposal is no longer this
    // approval's (its lease lapsed, and it may be another human's by now), so
    // it is left as it is.
    if (failure instanceof AlreadyDecided || failure instanceof NotFound) {
      return yield* Effect.failCause(exit.cause)
    }
    const decision = { by: context.actor ?? "human", at, edited: false }
    // The record of the delivery failed (the store erred, a lock held), and
    // may hold all the same: the store is asked. Recorded, the delivery may
    // have begun, so it is in doubt for a human; not recorded, nothing went
    // out and it waits as it was. A store that cannot answer leaves it to
    // its lease (`recover` then decides the same way).
    if (recording) {
      const found = yield* Effect.exit(store.get(id))
      const now = found._tag === "Success" ? found.value : undefined
      if (now?.status === "delivering" && now.deliveryKey === key) {
        yield* store.settle(id, {
          status: "in-doubt",
          decision: {
            ...decision,
            edited: editedApproval,
            reason: `recording the delivery failed, and it may have begun: ${causeLine(exit.cause)}`
          }
        }, ["delivering"]).pipe(Effect.ignore)
      } else if (now?.status === "approving") {
        yield* store.settle(id, asItWas(at), ["approving"]).pipe(Effect.ignore)
      }
      return yield* Effect.failCause(exit.cause)
    }
    // What would wait again (an invalid edit, a refusal) does not, once its run was cancelled.
    const waitsAgain = mode === "approve" && !delivering &&
      (failure instanceof Refused || failure instanceof InvalidEdit)
    const cancelled = waitsAgain ? yield* runCancelled(stored) : undefined
    if (cancelled !== undefined) {
      yield* store.settle(id, {
        status: "rejected",
        decision: { by: cancelled.by, at, edited: false, reason: `the run was cancelled: ${cancelled.reason}` }
      }).pipe(Effect.ignore)
      return yield* Effect.failCause(exit.cause)
    }
    // What the run's model is told of a failure: the tool's own text for it, never an exception's.
    const failed = {
      status: "failed" as const,
      decision: failure === undefined ? decision : { ...decision, reason: failureOf(tool, failure).message }
    }
    yield* store.settle(
      id,
      delivering
        // The tool ran and failed: final.
        ? failed
        : failure instanceof Rejected
        ? mode === "retry"
          // A retry turned down: the human says it is not to go out again.
          ? { status: "failed", decision: { ...decision, by: failure.by, reason: failure.reason } }
          : { status: "rejected", decision: { by: failure.by, at, edited: false, reason: failure.reason } }
        // Nothing was delivered on an invalid edit or a refusal: the proposal
        // waits for a better decision, as it was. Any other failure is final.
        : failure instanceof Refused || failure instanceof InvalidEdit
        ? asItWas(at)
        : failed
    ).pipe(Effect.ignore)
    return yield* Effect.failCause(exit.cause)
  })

export const markDone = (
  id: string,
  options?: { readonly note?: string | undefined }
): Effect.Effect<Proposal, NotFound | AlreadyDecided | Refused, ProposalStore> =>
  Effect.gen(function*() {
    const store = yield* proposalStoreHere
    const stored = yield* store.get(id)
    const refusal = yield* mayCause(stored.tool, stored.grade)
    if (refusal !== undefined) return yield* refuse(refusal)
    // Only a delivery in doubt is marked: one still running settles itself.
    if (stored.status !== "in-doubt") {
      return yield* new AlreadyDecided({ id, status: stored.status, by: stored.decision?.by, at: stored.decision?.at })
    }
    const by = (yield* Invocation.current).actor ?? "human"
    const reason = options?.note ?? "marked delivered by a human after checking"
    const at = yield* now
    // Only from in-doubt: a retry that began meanwhile is not settled under it.
    return yield* underItsTrace(stored)(
      transaction(store)(Effect.tap(
        store.settle(id, { status: "delivered", decision: { by, at, edited: false, reason }, output: undefined }, [
          "in-doubt"
        ]),
        () => Audit.record({ type: "in-doubt", tool: stored.tool, proposal: id, action: "marked-done", by })
      ))
    )
  })

export const recover: Effect.Effect<ReadonlyArray<Proposal>, never, ProposalStore> = Effect.gen(function*() {
  const store = yield* proposalStoreHere
  const at = yield* now
  // What moved and its audit entries commit together.
  return yield* transaction(store)(Effect.tap(store.expire(at), (moved) => Effect.forEach(moved, surfaced)))
})

const surfaced = (proposal: Proposal) =>
  underItsTrace(proposal)(
    proposal.status === "in-doubt"
      ? Audit.record({
        type: "in-doubt",
        tool: proposal.tool,
        proposal: proposal.id,
        action: "surfaced",
        by: proposal.decision?.by ?? "graded"
      })
      : Audit.record({
        type: "refused",
        tool: proposal.tool,
        gate: proposal.status === "expired" ? "expiry" : "lease",
        reason: proposal.decision?.reason ??
          `the approval stopped before anything was delivered; ${proposal.id} waits for a human again`
      })
  )

export const reject = (
  id: string,
  decision: { readonly by: string; readonly reason: string }
): Effect.Effect<Proposal, NotFound | AlreadyDecided | Refused, ProposalStore> =>
  Effect.gen(function*() {
    const store = yield* proposalStoreHere
    const stored = yield* store.get(id)
    // A decision, like any other: a model's fiber or a read tool's own code
    // does not make it.
    const refusal = yield* mayCause(stored.tool, stored.grade)
    if (refusal !== undefined) return yield* refuse(refusal)
    const at = yield* now
    // Audited like a rejection on a card (who, and why), in the same transaction.
    return yield* underItsTrace(stored)(
      transaction(store)(Effect.tap(
        store.reject(id, { by: decision.by, reason: decision.reason, at, edited: false }),
        () =>
          Audit.record({
            type: "decided",
            tool: stored.tool,
            by: decision.by,
            decision: "rejected",
            edited: false,
            reason: decision.reason,
            waitedMillis: waitedSince(stored.proposedAt, at)
          })
      ))
    )
  })

// Sealed where they are made (Invocation.seal): each is shared by every
// fiber, and a tool's code that finds one must not rewrite it in place.
sealed(recover)
