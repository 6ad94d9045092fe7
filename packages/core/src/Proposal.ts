/**
 * The human side of proposals: list them, approve one (possibly edited), or
 * reject it. An approval goes through `HumanConfirm` like any other write or
 * send, delivers exactly once, and a second approval of the same proposal
 * delivers nothing and says why.
 *
 * @since 0.1.0
 */
import { Effect, Schema } from "effect"
import { SendCapability, type WriteCapability } from "./Capability.js"
import * as HumanConfirm from "./HumanConfirm.js"
import { strict } from "./internal/tool.js"
import type { SendTool } from "./Tool.js"
import type * as Tool from "./Tool.js"
import type * as Toolkit from "./Toolkit.js"
import { type AlreadyDecided, type NotFound, type Proposal, ProposalStore, type Status } from "./ProposalStore.js"
import { type ToolError, Refused } from "./ToolError.js"

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
 * @since 0.1.0
 * @category models
 */
export interface Approved {
  readonly proposal: Proposal
  /** The tool's output, typed as the tool returns it. */
  readonly output: unknown
}

const isSend = (tool: Tool.Any): tool is SendTool<string, any, any, any, any, any> => tool.grade === "send"

/**
 * Approves a proposal and delivers it: a write runs with the proposed input, a
 * send delivers the payload prepared when it was proposed. `payload` is the
 * human's edit, validated again with the tool's schema; an invalid edit
 * delivers nothing and leaves the proposal pending. The toolkit is the one the
 * human works with, holding the write or send tool itself.
 *
 * @example
 * import { Effect } from "effect"
 * import { Proposal, Toolkit } from "@graded/core"
 * declare const desk: Toolkit.Any
 * const approve = Proposal.approve(desk, "p-1", { by: "agent:alice" })
 *
 * @since 0.1.0
 * @category constructors
 */
export const approve = <T extends Toolkit.Any>(
  toolkit: T,
  id: string,
  decision: { readonly by: string; readonly payload?: unknown }
): Effect.Effect<
  Approved,
  NotFound | AlreadyDecided | ToolError<Tool.Error<Toolkit.Tools<T>[number]>>,
  ProposalStore | Exclude<Toolkit.Requirements<T>, WriteCapability | SendCapability>
> =>
  // Written once for any toolkit; the signature restores what its type knows.
  // The capabilities leave R because HumanConfirm provides them here.
  Effect.gen(function*() {
    const store = yield* ProposalStore
    const proposal = yield* store.claim(id, decision.by)
    const tool = toolkit.get(proposal.tool)
    if (tool === undefined || tool.grade === "read") {
      yield* store.settle(id, { status: "pending" })
      return yield* new Refused({ tool: proposal.tool, gate: "unknown", reason: `this toolkit has no ${proposal.tool} to deliver it` })
    }
    // The human decided already; this UI only repeats their decision to HumanConfirm.
    const human = HumanConfirm.layer({
      confirm: () =>
        Effect.succeed(
          "payload" in decision && decision.payload !== undefined
            ? HumanConfirm.approve(decision.by, decision.payload)
            : HumanConfirm.approve(decision.by)
        )
    })
    const deliver = isSend(tool)
      ? Effect.gen(function*() {
        const payload = yield* Schema.decodeUnknown(tool.payload, strict)(proposal.payload).pipe(
          Effect.mapError(() => new Refused({ tool: tool.name, gate: "proposal", reason: "the stored payload no longer fits the tool's schema" }))
        )
        const capability = yield* SendCapability
        const confirmed = yield* capability.confirm({
          tool: tool.name,
          grade: "send",
          title: tool.title,
          description: tool.description,
          payload,
          shown: proposal.payload,
          revalidate: (edited) => Schema.decodeUnknown(tool.payload, strict)(edited)
        })
        return { output: yield* tool.deliver(confirmed), edited: confirmed.edited }
      })
      : Effect.gen(function*() {
        const input = yield* Schema.decodeUnknown(tool.input, strict)(proposal.input).pipe(
          Effect.mapError(() => new Refused({ tool: tool.name, gate: "proposal", reason: "the stored input no longer fits the tool's schema" }))
        )
        const edited = "payload" in decision && decision.payload !== undefined
        return { output: yield* tool.invoke(input), edited }
      })
    const exit = yield* Effect.exit(Effect.provide(deliver, human))
    if (exit._tag === "Success") {
      const encoded = yield* Effect.orElseSucceed(Schema.encode(tool.output)(exit.value.output), () => undefined)
      const settled = yield* store.settle(id, {
        status: "delivered",
        decision: { by: decision.by, at: new Date().toISOString(), edited: exit.value.edited },
        output: encoded
      })
      return { proposal: settled, output: exit.value.output }
    }
    // Nothing was delivered on an invalid edit or a refusal: the proposal
    // waits for a better decision. Any other failure is final.
    const failure = exit.cause._tag === "Fail" ? exit.cause.error : undefined
    const retry = failure instanceof Refused || (typeof failure === "object" && failure !== null && "_tag" in failure &&
      failure._tag === "@graded/core/ToolError/InvalidEdit")
    yield* store.settle(
      id,
      retry ? { status: "pending" } : {
        status: "failed",
        decision: { by: decision.by, at: new Date().toISOString(), edited: false }
      }
    )
    return yield* exit
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
    store.reject(id, { by: decision.by, reason: decision.reason, at: new Date().toISOString(), edited: false }))
