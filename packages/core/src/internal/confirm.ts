// How a confirmation is decided, in the order HumanConfirm.ts's header lists:
// the refusals first, then what the human is shown (computed here from the
// tool and the payload, a copy no one else holds), the layer's rules, and the
// UI's decision, decoded again when it is an edit.
// Who may import this: HumanConfirm.ts.
import { Clock, Effect, Schema, SchemaIssue } from "effect"
import * as Audit from "../Audit.js"
import type { Confirmed } from "../Capability.js"
import type { UI } from "../HumanConfirm.js"
import * as Invocation from "../Invocation.js"
import { type ConfirmError, InvalidEdit, issueOf, parseOptions, Refused, Rejected } from "../ToolError.js"
import { mayCause, type Tainted } from "./authority.js"
import * as rules from "./autoApprove.js"
import { mintConfirmed, type Request } from "./capability.js"
import { firstDifference, jsonError, jsonIssue } from "./jsonData.js"
import { refuse } from "./refuse.js"
import { cannotCopy, copyOf, frozenData } from "./seal.js"
import { inSchema } from "./tool.js"
import { pathRef } from "./tree.js"
import type { SchemaCode } from "./toolState.js"

// The payload's JSON Schema, for UIs that build an edit form; made once: the
// root, with its definitions under `$defs` when it has any.
const jsonSchemas = new WeakMap<object, unknown>()
const jsonSchemaOf = (schema: Schema.Top): unknown => {
  if (!jsonSchemas.has(schema)) {
    let made: unknown
    try {
      const document = Schema.toJsonSchemaDocument(schema)
      made = Object.keys(document.definitions).length === 0
        ? document.schema
        : { ...document.schema, $defs: document.definitions }
    } catch {
      made = undefined
    }
    jsonSchemas.set(schema, made)
  }
  return jsonSchemas.get(schema)
}

/**
 * Where `decoded`, encoded again with `schema`, differs from `seen` (what a
 * person saw or typed), as a reason; undefined when it reads the same. A
 * schema whose decode does not give back what its encode shows (a transform
 * that is not its own inverse) would show a person one value and run another.
 */
export const drift = (
  schemaCode: SchemaCode,
  schema: Schema.Codec<any, unknown>,
  seen: unknown,
  decoded: unknown
): Effect.Effect<string | undefined> =>
  schemaCode(Schema.encodeEffect(schema)(decoded)).pipe(
    Effect.map((again) => {
      const at = firstDifference(again, seen)
      return at === undefined ? undefined
        : `what it decodes to would show differently at ${at}: the schema's decode does not give back what its encode shows`
    }),
    Effect.catch((error) => Effect.succeed(`what it decodes to does not encode back: ${issueOf(error)}`))
  )

// An edit refused before or after its schema decoded it, as the schema's own
// errors are: the message says why, and the edit itself stays out of it.
const refusedEdit = (message: string): Schema.SchemaError =>
  new Schema.SchemaError(new SchemaIssue.InvalidValue({ message }))

// The rules of a layer, by the tool each approves.
type Rules = rules.Index

// What the human is shown is computed here, from the tool and the payload
// itself: nothing a caller passes in decides it.
// `tainted` says where the layer was built when that was a model's run or a
// tool's own code: then it confirms nothing, wherever it was carried.
export const confirmWith =
  (ui: UI, auto: Rules, tainted: Tainted | undefined) =>
  (request: Request): Effect.Effect<Confirmed<unknown>, ConfirmError> =>
    Effect.gen(function*() {
      const tool = request.tool.name
      const refusal = yield* mayCause(tool, request.grade)
      if (refusal !== undefined) return yield* refuse(refusal)
      if (tainted !== undefined) {
        return yield* refuse(
          new Refused({
            tool,
            gate: tainted.gate,
            reason: `the HumanConfirm in scope was made ${tainted.where}: it confirms nothing`
          })
        )
      }
      const context = yield* Invocation.current
      // The schema's own code runs as the tool's: it may cause nothing.
      const schemaCode = inSchema(request.tool)
      const unshowable = (reason: string) =>
        new Refused({ tool, gate: "confirmation", reason: `the payload cannot be shown: ${reason}` })
      // What the human is shown is a copy of its own, made once; what is
      // confirmed is decoded from that copy. The payload passed in may be a
      // read tool's output: a getter answering differently the second time, a
      // key the schema does not declare, an object its code keeps and
      // rewrites while the card is open. None of it reaches the confirmed payload.
      const encoded = yield* schemaCode(Schema.encodeEffect(request.schema)(request.payload)).pipe(
        Effect.mapError((error) => unshowable(issueOf(error)))
      )
      const shown = copyOf(encoded)
      if (shown === cannotCopy) {
        // structuredClone also runs out of stack on a payload nested
        // thousands deep: then the walk says so, where it is.
        const deep = jsonIssue(encoded)
        return yield* refuse(
          unshowable(deep ?? "it holds a value that is not data (a function, a symbol)")
        )
      }
      // What JSON cannot carry (Infinity would show as null on a card, to a
      // JSON client and in the audit, while `deliver` got Infinity), checked
      // on the copy, so what is checked is what is shown.
      const notJson = jsonIssue(shown)
      if (notJson !== undefined) return yield* refuse(unshowable(notJson))
      const driftOf = (seen: unknown, decoded: unknown): Effect.Effect<string | undefined> =>
        drift(schemaCode, request.schema, seen, decoded)
      // Decoded from a copy of its own: a field a schema decodes as it is (a
      // Date, `Schema.Unknown`) is then no object the audit entry or the UI
      // holds, so changing theirs while the human reads changes nothing
      // that runs. What is shown is frozen, and so is what is confirmed.
      const payload = yield* schemaCode(Schema.decodeUnknownEffect(request.schema)(copyOf(shown))).pipe(
        Effect.map(frozenData),
        Effect.mapError((error) => unshowable(`what is shown does not decode back: ${issueOf(error)}`))
      )
      // What runs must read as what is shown: a schema whose decode does not
      // give back what its encode showed (a transform that is not its own
      // inverse) would show the human one value and deliver another.
      const drifted = yield* driftOf(shown, payload)
      if (drifted !== undefined) return yield* refuse(unshowable(drifted))
      frozenData(shown)
      const revalidate = (given: unknown) => {
        // The UI's edit, copied once: the UI keeps no hold on what runs.
        const edited = copyOf(given)
        if (edited === cannotCopy) return Effect.fail(refusedEdit("the edit is not data (a function, a symbol)"))
        const notJson = jsonError(edited)
        if (notJson !== undefined) return Effect.fail(notJson)
        return Effect.flatMap(
          Effect.map(schemaCode(Schema.decodeUnknownEffect(request.schema, parseOptions)(edited)), frozenData),
          (decoded) =>
            Effect.flatMap(driftOf(edited, decoded), (drifted) =>
              drifted === undefined ? Effect.succeed(decoded) : Effect.fail(refusedEdit(drifted)))
        )
      }
      yield* Audit.record({ type: "confirm-requested", tool, grade: request.grade, payload: shown })
      const rule = auto.size === 0 ? undefined : yield* rules.firstMatch(auto, request, shown, context)
      if (rule !== undefined) {
        const by = rules.ruleBy(rule.id)
        yield* Audit.record({ type: "decided", tool, by, decision: "approved", edited: false })
        return mintConfirmed(request.tool, {
          payload,
          by,
          edited: false,
          idempotencyKey: request.idempotencyKey
        })
      }
      // When the human was asked: each decision says how long they took.
      const asked = yield* Clock.currentTimeMillis
      // Inside a sub-agent, the card says whose call this is.
      const path = yield* pathRef
      const decision = yield* ui.confirm({
        tool,
        grade: request.grade,
        title: request.tool.title,
        description: request.tool.description,
        payload: shown,
        actor: context.actor,
        traceId: context.traceId,
        ...(path.length > 0 ? { path } : {}),
        schema: jsonSchemaOf(request.schema),
        check: (edited) =>
          Effect.mapError(Effect.asVoid(revalidate(edited)), issueOf)
      })
      const waitedMillis = (yield* Clock.currentTimeMillis) - asked
      if (decision._tag === "Reject") {
        yield* Audit.record({
          type: "decided",
          tool,
          by: decision.by,
          decision: "rejected",
          edited: false,
          reason: decision.reason,
          waitedMillis
        })
        return yield* new Rejected({ tool, by: decision.by, reason: decision.reason })
      }
      if (!("payload" in decision)) {
        yield* Audit.record({
          type: "decided",
          tool,
          by: decision.by,
          decision: "approved",
          edited: false,
          waitedMillis
        })
        return mintConfirmed(request.tool, {
          payload,
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
            reason: issueOf(error),
            waitedMillis
          })
        ),
        Effect.mapError((error) => InvalidEdit.fromParseError(tool, decision.by, error))
      )
      yield* Audit.record({ type: "decided", tool, by: decision.by, decision: "approved", edited: true, waitedMillis })
      return mintConfirmed(request.tool, {
        payload: edited,
        by: decision.by,
        edited: true,
        idempotencyKey: request.idempotencyKey
      })
    })
