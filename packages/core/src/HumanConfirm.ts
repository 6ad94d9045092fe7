/**
 * The one place a human's decision becomes a capability. `HumanConfirm.layer`
 * provides `WriteCapability` and `SendCapability` from a UI that shows the
 * human the exact payload and returns their decision.
 *
 * @since 0.1.0
 */
import { Data, Effect, JSONSchema, Layer, Schema } from "effect"
import * as Audit from "./Audit.js"
import type { Confirmable } from "./Grade.js"
import type { Confirmed, HumanTrigger, SendCapability, WriteCapability } from "./Capability.js"
import {
  grant,
  HumanTriggerTag,
  mintConfirmed,
  OnlyGradedLayersGrantThis,
  type Request,
  sendCapability,
  SendCapabilityTag,
  writeCapability,
  WriteCapabilityTag
} from "./internal/capability.js"
import { refusalHere } from "./internal/invocation.js"
import { protoKeyError } from "./internal/forbiddenKey.js"
import { refuse } from "./internal/refuse.js"
import * as Invocation from "./Invocation.js"
import { type ConfirmError, InvalidEdit, issueOf, parseOptions, Refused, Rejected } from "./ToolError.js"

/**
 * What the human decided.
 *
 * @since 0.1.0
 * @category models
 */
export type Decision = Data.TaggedEnum<{
  /** Go ahead; with `payload`, go ahead with this edited payload instead. */
  Approve: { readonly by: string; readonly payload?: unknown }
  Reject: { readonly by: string; readonly reason: string }
}>

const Decision = Data.taggedEnum<Decision>()

/**
 * A decision to go ahead, for a UI to return; with `payload`, the human's edit,
 * which HumanConfirm decodes again with the tool's schema first.
 *
 * @since 0.1.0
 * @category constructors
 */
export const approve = (by: string, payload?: unknown): Decision =>
  payload === undefined ? Decision.Approve({ by }) : Decision.Approve({ by, payload })

/**
 * A decision not to go ahead: nothing runs, the reason is audited, and the
 * caller gets `ToolError.Rejected`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const reject = (by: string, reason: string): Decision => Decision.Reject({ by, reason })

/**
 * What the human is shown.
 *
 * @since 0.1.0
 * @category models
 */
export interface View {
  readonly tool: string
  readonly grade: Confirmable
  readonly title: string
  readonly description: string
  /** The exact payload, encoded with the tool's schema. */
  readonly payload: unknown
  readonly actor: string | undefined
  readonly traceId: string | undefined
  /** The JSON Schema of the payload, for a UI that builds an edit form. */
  readonly schema: unknown
  /** Checks an edit before answering; HumanConfirm checks it again regardless. */
  readonly check: (edited: unknown) => Effect.Effect<void, string>
}

/**
 * A user interface that asks a human.
 *
 * @since 0.1.0
 * @category models
 */
export interface UI {
  readonly confirm: (view: View) => Effect.Effect<Decision>
}

// The payload's JSON Schema, for UIs that build an edit form; made once.
const jsonSchemas = new WeakMap<object, unknown>()
const jsonSchemaOf = (schema: Schema.Schema<any, any>): unknown => {
  if (!jsonSchemas.has(schema)) {
    let made: unknown
    try {
      made = JSONSchema.make(schema)
    } catch {
      made = undefined
    }
    jsonSchemas.set(schema, made)
  }
  return jsonSchemas.get(schema)
}

// What the human is shown is computed here, from the tool and the payload
// itself: nothing a caller passes in decides it.
const confirmWith = (ui: UI) => (request: Request): Effect.Effect<Confirmed<unknown>, ConfirmError> =>
  Effect.gen(function*() {
    const tool = request.tool.name
    const refusal = yield* refusalHere(tool, request.grade)
    if (refusal !== undefined) return yield* refuse(refusal)
    const context = yield* Invocation.current
    const shown = yield* Schema.encode(request.schema)(request.payload).pipe(
      Effect.mapError((error) =>
        new Refused({ tool, gate: "confirmation", reason: `the payload cannot be shown: ${issueOf(error)}` })
      )
    )
    const revalidate = (edited: unknown) => {
      const proto = protoKeyError(request.schema, edited)
      return proto !== undefined ? Effect.fail(proto) : Schema.decodeUnknown(request.schema, parseOptions)(edited)
    }
    yield* Audit.record({ type: "confirm-requested", tool, grade: request.grade, payload: shown })
    const decision = yield* ui.confirm({
      tool,
      grade: request.grade,
      title: request.tool.title,
      description: request.tool.description,
      payload: shown,
      actor: context.actor,
      traceId: context.traceId,
      schema: jsonSchemaOf(request.schema),
      check: (edited) => Effect.mapError(Effect.asVoid(revalidate(edited)), issueOf)
    })
    if (decision._tag === "Reject") {
      yield* Audit.record({
        type: "decided",
        tool,
        by: decision.by,
        decision: "rejected",
        edited: false,
        reason: decision.reason
      })
      return yield* new Rejected({ tool, by: decision.by, reason: decision.reason })
    }
    if (!("payload" in decision)) {
      yield* Audit.record({ type: "decided", tool, by: decision.by, decision: "approved", edited: false })
      return mintConfirmed(request.tool, {
        payload: request.payload,
        by: decision.by,
        edited: false,
        idempotencyKey: request.idempotencyKey
      })
    }
    const edited = yield* revalidate(decision.payload).pipe(
      Effect.tapError((error) =>
        Audit.record({
          type: "decided",
          tool,
          by: decision.by,
          decision: "invalid-edit",
          edited: true,
          reason: issueOf(error)
        })
      ),
      Effect.mapError((error) => InvalidEdit.fromParseError(tool, decision.by, error))
    )
    yield* Audit.record({ type: "decided", tool, by: decision.by, decision: "approved", edited: true })
    return mintConfirmed(request.tool, {
      payload: edited,
      by: decision.by,
      edited: true,
      idempotencyKey: request.idempotencyKey
    })
  })

/**
 * Provides `WriteCapability` and `SendCapability` through a UI. Every write
 * and every send asks the human, shown what graded computed from the tool and
 * the payload. A fiber running for a model is refused whatever layer is in
 * scope, and so is a read tool's own code (a read tool that provides this
 * layer itself gains nothing).
 *
 * @example
 * import { Effect } from "effect"
 * import { HumanConfirm } from "@graded/core"
 *
 * const ui = HumanConfirm.scripted([HumanConfirm.approve("agent:alice")])
 * const layer = HumanConfirm.layer(ui)
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (ui: UI): Layer.Layer<WriteCapability | SendCapability> => {
  const authority = { confirm: confirmWith(ui) }
  return Layer.merge(
    Layer.succeed(WriteCapabilityTag, writeCapability(authority)),
    Layer.succeed(SendCapabilityTag, sendCapability(authority))
  )
}

/**
 * A scripted UI: it answers with its decisions in order and keeps what it
 * was shown. Past the last decision it rejects, so a script that runs short
 * never approves by accident.
 *
 * @since 0.1.0
 * @category models
 */
export interface Scripted extends UI {
  readonly seen: ReadonlyArray<View>
}

/**
 * Makes a UI that answers from a list, for tests and demos: each confirmation
 * takes the next decision, or calls it with the view.
 *
 * @example
 * import { HumanConfirm } from "@graded/core"
 * const ui = HumanConfirm.scripted([
 *   HumanConfirm.approve("agent:alice"),
 *   (view) => HumanConfirm.reject("agent:alice", `not sending ${view.tool} today`)
 * ])
 *
 * @since 0.1.0
 * @category constructors
 */
export const scripted = (decisions: ReadonlyArray<Decision | ((view: View) => Decision)>): Scripted => {
  const seen: Array<View> = []
  return {
    seen,
    confirm: (view) =>
      Effect.sync(() => {
        const next = decisions[seen.length]
        seen.push(view)
        if (next === undefined) return reject("scripted-ui", "the script has no decision left")
        return typeof next === "function" ? next(view) : next
      })
  }
}

/**
 * Provides `HumanTrigger`: for UI entry points (a shortcut, a CLI command, a
 * click handler) that start work on a human's behalf.
 *
 * @example
 * import { HumanConfirm } from "@graded/core"
 * const started = HumanConfirm.trigger({ by: "agent:alice", via: "shortcut" })
 *
 * @since 0.1.0
 * @category layers
 */
export const trigger = (options: { readonly by: string; readonly via: string }): Layer.Layer<HumanTrigger> =>
  Layer.sync(
    HumanTriggerTag,
    () => grant({ [OnlyGradedLayersGrantThis]: "HumanTrigger", by: options.by, via: options.via })
  )
