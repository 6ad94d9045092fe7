/**
 * The human side of proposals: list them, approve one (possibly edited), or
 * reject it. An approval asks the human through the caller's `HumanConfirm`
 * like any other write or send, delivers exactly once, and a second approval
 * of the same proposal delivers nothing and says why.
 *
 * @since 0.1.0
 */
import { Clock, Effect, Schema } from "effect"
import { refusalHere } from "./internal/invocation.js"
import { confirmerOf, isSend, refuse, strict } from "./internal/tool.js"
import * as Invocation from "./Invocation.js"
import { type AlreadyDecided, type NotFound, type Proposal, ProposalStore, type Status } from "./ProposalStore.js"
import type * as Tool from "./Tool.js"
import type * as Toolkit from "./Toolkit.js"
import { InvalidEdit, Refused, Rejected, type ToolError } from "./ToolError.js"

/**
 * Lists proposals, optionally by status.
 *
 * @since 0.1.0
 * @category constructors
 */
export const list = (filter?: { readonly status?: Status | undefined }): Effect.Effect<
  ReadonlyArray<Proposal>,
  never,
  ProposalStore
> => Effect.flatMap(ProposalStore, (store) => store.list(filter))

/**
 * One proposal, by id.
 *
 * @since 0.1.0
 * @category constructors
 */
export const get = (id: string): Effect.Effect<Proposal, NotFound, ProposalStore> =>
  Effect.flatMap(ProposalStore, (store) => store.get(id))

/**
 * What `Proposal.approve` succeeds with once the tool has delivered: the
 * settled proposal and the tool's output.
 *
 * @since 0.1.0
 * @category models
 */
export interface Approved {
  readonly proposal: Proposal
  /** The tool's output, typed as the tool returns it. */
  readonly output: unknown
}

const now = Effect.map(Clock.currentTimeMillis, (millis) => new Date(millis).toISOString())

/**
 * Approves a proposal through the caller's `HumanConfirm`: the human is asked,
 * through the caller's UI, with the stored payload (a write's input, a send's
 * payload prepared when it was proposed), and may approve, edit (validated
 * again with the tool's schema) or reject it. An approval delivers exactly
 * once; a rejection is final; an invalid edit or a refusal delivers nothing
 * and leaves the proposal pending. The toolkit is the one the human works
 * with, holding the write or send tool itself. A model's fiber, or a read
 * tool's own code, is refused before the proposal is touched.
 *
 * @example
 * import { Effect } from "effect"
 * import { HumanConfirm, Proposal, ProposalStore, Toolkit } from "@graded/core"
 * declare const desk: Toolkit.Any
 * const approve = Proposal.approve(desk, "p-1").pipe(
 *   Effect.provide(HumanConfirm.layer(HumanConfirm.scripted([HumanConfirm.approve("agent:alice")])))
 * )
 *
 * @since 0.1.0
 * @category constructors
 */
export const approve = <T extends Toolkit.Any>(
  toolkit: T,
  id: string
): Effect.Effect<
  Approved,
  NotFound | AlreadyDecided | ToolError<Tool.Error<Toolkit.Tools<T>[number]>>,
  ProposalStore | Toolkit.Requirements<T>
> =>
  // Written once for any toolkit; the signature restores what its type knows.
  Effect.gen(function*() {
    const store = yield* ProposalStore
    const stored = yield* store.get(id)
    const tool = toolkit.get(stored.tool)
    const confirm = tool === undefined || tool.grade !== stored.grade ? undefined : confirmerOf(tool)
    if (tool === undefined || confirm === undefined) {
      return yield* refuse(
        new Refused({ tool: stored.tool, gate: "unknown", reason: `this toolkit has no ${stored.grade} tool ${stored.tool} to deliver it` })
      )
    }
    // Refused before the proposal is claimed: a model's fiber or a read
    // tool's own code leaves it pending for a human.
    const refusal = yield* refusalHere(tool.name, stored.grade)
    if (refusal !== undefined) return yield* refuse(refusal)
    const context = yield* Invocation.current
    yield* store.claim(id, context.actor ?? "human")
    const schema = isSend(tool) ? tool.payload : tool.input
    const exit = yield* Effect.exit(
      Effect.flatMap(
        Schema.decodeUnknown(schema, strict)(stored.grade === "send" ? stored.payload : stored.input).pipe(
          Effect.mapError(() =>
            new Refused({ tool: tool.name, gate: "proposal", reason: `the stored ${stored.grade === "send" ? "payload" : "input"} no longer fits the tool's schema` })
          )
        ),
        confirm
      )
    )
    const at = yield* now
    if (exit._tag === "Success") {
      const { by, edited, output } = exit.value
      const encoded = yield* Effect.orElseSucceed(Schema.encode(tool.output)(output), () => undefined)
      const settled = yield* store.settle(id, { status: "delivered", decision: { by, at, edited }, output: encoded })
      return { proposal: settled, output }
    }
    const failure = exit.cause._tag === "Fail" ? exit.cause.error : undefined
    yield* store.settle(
      id,
      failure instanceof Rejected
        ? { status: "rejected", decision: { by: failure.by, at, edited: false, reason: failure.reason } }
        // Nothing was delivered on an invalid edit or a refusal: the proposal
        // waits for a better decision. Any other failure is final.
        : failure instanceof Refused || failure instanceof InvalidEdit
        ? { status: "pending" }
        : { status: "failed", decision: { by: context.actor ?? "human", at, edited: false } }
    )
    return yield* Effect.failCause(exit.cause)
  }) as Effect.Effect<Approved, never, ProposalStore>

/**
 * Rejects a pending proposal: nothing is delivered.
 *
 * @since 0.1.0
 * @category constructors
 */
export const reject = (
  id: string,
  decision: { readonly by: string; readonly reason: string }
): Effect.Effect<Proposal, NotFound | AlreadyDecided, ProposalStore> =>
  Effect.flatMap(ProposalStore, (store) =>
    Effect.flatMap(now, (at) => store.reject(id, { by: decision.by, reason: decision.reason, at, edited: false })))
