/**
 * Supervised runs that wait for a human durably. `Runs.start` runs the loop
 * like `Agent.supervised`: reads run at once, as the model's; each write or
 * send the model calls becomes a proposal (a send's payload prepared now) and
 * the run stops, `waiting`, with its state stored in the `RunStore`. A human
 * decides each proposal wherever they are (`Proposal.approve` through a
 * `HumanConfirm`: the web page, the terminal, `graded decide`), and
 * `Runs.resume` (in this process or any other, after a restart) gives the
 * model each outcome as the call's result and goes on.
 *
 * The run itself never holds a capability: it cannot write or send. Its type
 * asks for the run store and the proposal store instead of `WriteCapability`
 * and `SendCapability`; the delivery happens where a human approves, under
 * that human's `HumanConfirm`, at most once, with an idempotency key.
 *
 * @since 0.1.0
 */
import type { Duration } from "effect"
import type { Effect } from "effect/Effect"
import type { Stream } from "effect/Stream"
import type * as Agent from "./Agent.js"
import type { SendCapability, WriteCapability } from "./Capability.js"
import { eventStream } from "./internal/events.js"
import * as internal from "./internal/runs.js"
import type { LanguageModel } from "./LanguageModel.js"
import type { Proposal } from "./Proposal.js"
import type { ProposalStore } from "./ProposalStore.js"
import type { Run, RunBusy, RunExists, RunNotFound, RunStore } from "./RunStore.js"
import type * as Toolkit from "./Toolkit.js"
import type { Refused } from "./ToolError.js"

/**
 * What `Runs.start` takes: what `Agent.supervised` takes, plus the run's id
 * (a fresh one when not given; 1 to 200 letters, digits or `. _ : -`,
 * starting with a letter or digit, else `InvalidOptions`), how long a human has for each decision
 * (`decisionTimeout`; then the call is denied to the model as `expired`), and
 * how long this process holds the run while it runs (`lease`, default 10
 * minutes; after that another process may resume it).
 *
 * @since 0.1.0
 * @category models
 */
export type StartOptions<T> = Agent.SupervisedOptions<T> & {
  readonly runId?: string | undefined
  readonly decisionTimeout?: Duration.Input | undefined
  readonly lease?: Duration.Input | undefined
}

/**
 * How far a run got: `waiting` on the proposals listed (a human decides them),
 * `finished` with the loop's result, or `cancelled`.
 *
 * @since 0.1.0
 * @category models
 */
export type Outcome<Tools extends ReadonlyArray<any>> =
  | { readonly status: "waiting"; readonly runId: string; readonly pending: ReadonlyArray<Proposal> }
  | { readonly status: "finished"; readonly runId: string; readonly result: Agent.Result<Tools> }
  | { readonly status: "cancelled"; readonly runId: string; readonly by: string; readonly reason: string }

/**
 * The run is finished or cancelled already.
 *
 * @since 0.1.0
 * @category errors
 */
export { RunEnded } from "./internal/runs.js"

/**
 * Every way starting or resuming a run can fail; tool failures are not here:
 * they reach the model as call results.
 *
 * @since 0.1.0
 * @category errors
 */
export type RunError = Agent.AgentError | RunExists | RunNotFound | RunBusy

/**
 * What a run needs: the model, the two stores, and what its tools need,
 * except the write and send capabilities, which a run never uses.
 *
 * @since 0.1.0
 * @category utility types
 */
export type Requirements<T extends Toolkit.Any> =
  | LanguageModel
  | RunStore
  | ProposalStore
  | Exclude<Toolkit.Requirements<T>, WriteCapability | SendCapability>

/**
 * Starts a durable supervised run and runs it until the model answers, the
 * round limit is reached, or a turn waits on a human's decisions.
 *
 * @example
 * import { Effect, Layer } from "effect"
 * import { ProposalStore, RunStore, Runs, ScriptedModel, type Tool, Toolkit } from "@graded/core"
 *
 * declare const SendReply: Tool.SendTool<"chat.sendMessage", { text: string }, { text: string }, { delivered: boolean }, never, never>
 *
 * const started = Runs.start({ toolkit: Toolkit.make(SendReply), prompt: "Tell the customer it is fixed.", runId: "run-1" })
 * // { status: "waiting", runId: "run-1", pending: [the proposal of chat.sendMessage] }
 * const program = started.pipe(
 *   Effect.provide(Layer.mergeAll(
 *     ScriptedModel.layer([ScriptedModel.calls(ScriptedModel.call("chat.sendMessage", { text: "Fixed." }))]),
 *     RunStore.memory,
 *     ProposalStore.memory
 *   ))
 * )
 *
 * @since 0.1.0
 * @category constructors
 */
export const start = <T extends Toolkit.Any>(
  options: StartOptions<T>
): Effect<Outcome<Toolkit.Tools<T>>, RunError, Requirements<T>> =>
  internal.start(options as internal.StartOptions) as Effect<Outcome<Toolkit.Tools<T>>, RunError, Requirements<T>>

/**
 * Goes on with a stored run, in any process: if a decision is still open it
 * answers `waiting` without touching the run; once every proposal of the
 * waiting turn is decided (delivered, rejected, expired or failed), each
 * outcome goes to the model as its call's result and the loop continues from
 * the stored state. Lapsed proposals are settled and audited first, as
 * `Proposal.recover` does, so an expiry reaches the model as a denial. A finished or cancelled
 * run answers as it ended. Another process running it is `RunBusy`.
 *
 * @example
 * import { Effect } from "effect"
 * import { Runs, type Toolkit } from "@graded/core"
 * declare const desk: Toolkit.Any
 * const next = Runs.resume("run-1", { toolkit: desk })
 *
 * @since 0.1.0
 * @category constructors
 */
export const resume = <T extends Toolkit.Any>(
  runId: string,
  options: { readonly toolkit: T; readonly lease?: Duration.Input | undefined }
): Effect<Outcome<Toolkit.Tools<T>>, RunError, Requirements<T>> =>
  internal.resume(runId, options) as Effect<Outcome<Toolkit.Tools<T>>, RunError, Requirements<T>>

/**
 * The last event of `startStream` and `resumeStream`: how far the run got, as
 * `start` and `resume` succeed with it.
 *
 * @since 0.2.0
 * @category models
 */
export interface End<Tools extends ReadonlyArray<any>> {
  readonly type: "end"
  readonly outcome: Outcome<Tools>
}

/**
 * `start`, streamed: the run's events (`Agent.Event`) as the loop goes, then
 * how far it got. A write or send the run waits on is a `pending` event with
 * its proposal. Ending the stream early (a page closed) interrupts the run
 * where it is: it stays stored, as the last step saved it, for `resume` in
 * any process once its lease lapses.
 *
 * @since 0.2.0
 * @category constructors
 */
export const startStream = <T extends Toolkit.Any>(
  options: StartOptions<T>
): Stream<Agent.Event<Toolkit.Tools<T>> | End<Toolkit.Tools<T>>, RunError, Requirements<T>> =>
  eventStream(
    (emit) => internal.start(options as internal.StartOptions, emit),
    (outcome) => ({ type: "end", outcome })
  ) as Stream<Agent.Event<Toolkit.Tools<T>> | End<Toolkit.Tools<T>>, RunError, Requirements<T>>

/**
 * `resume`, streamed: the decisions folded in (`decided`, then each call's
 * outcome), the loop's events from there, then how far the run got.
 *
 * @since 0.2.0
 * @category constructors
 */
export const resumeStream = <T extends Toolkit.Any>(
  runId: string,
  options: { readonly toolkit: T; readonly lease?: Duration.Input | undefined }
): Stream<Agent.Event<Toolkit.Tools<T>> | End<Toolkit.Tools<T>>, RunError, Requirements<T>> =>
  eventStream(
    (emit) => internal.resume(runId, options, emit),
    (outcome) => ({ type: "end", outcome })
  ) as Stream<Agent.Event<Toolkit.Tools<T>> | End<Toolkit.Tools<T>>, RunError, Requirements<T>>

/**
 * Cancels a run that is not running elsewhere: it ends `cancelled` with who
 * (the context's actor) and why, and its open proposals are rejected so none
 * is delivered after. Refused in a model's fiber or a read tool's own code. A decision already being approved finishes; the run
 * does not go on.
 *
 * @since 0.1.0
 * @category constructors
 */
export const cancel = (
  runId: string,
  options: { readonly reason: string }
): Effect<Run, RunNotFound | RunBusy | internal.RunEnded | Refused, RunStore | ProposalStore> =>
  internal.cancel(runId, options)

/**
 * How long a process holds a run it is running when no `lease` is given.
 *
 * @since 0.1.0
 * @category constructors
 */
export const defaultLease: Duration.Duration = internal.defaultLease
