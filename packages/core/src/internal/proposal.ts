import { Clock, type Duration, Effect, Schema } from "effect"
import type { SchemaError } from "effect/Schema"
import * as Audit from "../Audit.js"
import * as Invocation from "../Invocation.js"
import { ProposalStore } from "../ProposalStore.js"
import type { Any } from "../Tool.js"
import { InvalidOutput, Refused } from "../ToolError.js"
import { jsonIssue } from "./jsonData.js"
import { refuse } from "./refuse.js"
import { mintProposal } from "./capability.js"
import type { Confirmable } from "../Grade.js"
import { isSend, makeRead } from "./tool.js"
import { proposalStoreHere, transaction } from "./services.js"
import { millisOf } from "./deadlines.js"

export const Proposed = Schema.Struct({
  proposal: Schema.String,
  status: Schema.Literal("pending"),
  note: Schema.String
})

export const defaultMaxPendingPerTrace = 10

export const make = (
  tool: Any,
  options?: {
    readonly maxPendingPerTrace?: number | undefined
    readonly expireAfter?: Duration.Input | undefined
  }
) => {
  const maxPending = options?.maxPendingPerTrace ?? defaultMaxPendingPerTrace
  const expireAfter = options?.expireAfter === undefined
    ? undefined
    : millisOf(options.expireAfter)
  const encodeInput = Schema.encodeEffect(tool.input)
  const invalid = (error: SchemaError) => InvalidOutput.fromParseError(tool.name, error)
  return makeRead(`${tool.name}.propose`, {
    title: `Propose: ${tool.title}`,
    description: `${tool.description} This does not ${tool.grade} anything: it records a proposal that a human ` +
      `approves or rejects later.`,
    input: tool.input,
    output: Proposed,
    tags: tool.tags,
    features: tool.features,
    pages: tool.pages,
    failureMessages: tool.failureMessages,
    limits: tool.limits,
    run: (input: unknown) =>
      Effect.gen(function*() {
        const store = yield* proposalStoreHere
        const context = yield* Invocation.current
        const now = yield* Clock.currentTimeMillis
        const encodedInput = yield* encodeInput(input).pipe(Effect.mapError(invalid))
        // A send's payload is prepared now, so the human approves exactly what
        // will go out; prepare has no way to send it.
        const payload = isSend(tool)
          ? yield* Effect.flatMap(
            tool.prepare(input),
            (prepared) => Schema.encodeEffect(tool.payload)(prepared).pipe(Effect.mapError(invalid))
          )
          : encodedInput
        // A stored proposal is shown to a human later, from its JSON: what
        // JSON cannot carry (Infinity stored as null, a value nested too deep
        // to write) is refused now, while the caller can still be told,
        // rather than stored as a proposal that can never be approved.
        const notJson = jsonIssue(encodedInput) ?? (payload === encodedInput ? undefined : jsonIssue(payload))
        if (notJson !== undefined) {
          return yield* refuse(
            new Refused({ tool: `${tool.name}.propose`, gate: "proposal", reason: `it cannot be stored: ${notJson}` })
          )
        }
        const draft = mintProposal({
          tool: tool.name,
          grade: tool.grade as Confirmable,
          title: tool.title,
          input: encodedInput,
          payload,
          proposedAt: new Date(now).toISOString(),
          actor: context.actor,
          traceId: context.traceId,
          ...(expireAfter !== undefined ? { expiresAt: new Date(now + expireAfter).toISOString() } : {})
        })
        // One run may not flood the human's queue: its own pending proposals
        // counted and the new one added in one transaction of the store (a
        // SQL store serializes a trace's count there), so proposals made at
        // once cannot all pass a count none of them is in yet. Counted again
        // here, since a store written before the `traceId` filter returns
        // every pending one.
        const added = yield* transaction(store)(Effect.gen(function*() {
          if (context.traceId !== undefined) {
            const pending = yield* store.list({ status: "pending", traceId: context.traceId })
            const mine = pending.filter((proposal) => proposal.traceId === context.traceId).length
            if (mine >= maxPending) return { waiting: mine }
          }
          const proposal = yield* store.add(draft)
          yield* Audit.record({ type: "proposed", tool: tool.name, proposal: proposal.id })
          return { proposal }
        }))
        // Refused once the transaction is over, so that the refusal's audit entry stays.
        if ("waiting" in added) {
          return yield* refuse(
            new Refused({
              tool: `${tool.name}.propose`,
              gate: "proposal",
              reason:
                `this run has ${added.waiting} proposals waiting for a human already; at most ${maxPending} wait at once`
            })
          )
        }
        const { proposal } = added
        return {
          proposal: proposal.id,
          status: "pending" as const,
          note: `Recorded for a human to approve or reject; nothing was ${tool.grade === "send" ? "sent" : "written"}.`
        }
      }) as Effect.Effect<typeof Proposed.Type, unknown, ProposalStore>
  })
}
