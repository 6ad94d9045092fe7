// Asking the human through the client's form elicitation: the exact payload
// as a message, its simple fields as a form prefilled with their values, and
// a required choice between approve and reject. The answer becomes a
// HumanConfirm decision; HumanConfirm decodes an edit again, so this module
// only carries what the human typed, never judges it.
import { HumanConfirm, Printable } from "@graded/core"
import type { Server } from "@modelcontextprotocol/sdk/server/index.js"
import { ElicitResultSchema } from "@modelcontextprotocol/sdk/types.js"
import { Duration, Effect } from "effect"

/** The form's field that holds the human's choice. */
export const decisionField = "graded/decision"

/** The form's field that holds a rejection's reason. */
export const reasonField = "graded/reason"

/** How long a form waits for the human unless the app says otherwise. */
export const defaultTimeout: Duration.Input = "10 minutes"

// The payload's limit, as the terminal card's total: what the client shows stays readable.
const maxPayload = 8_000
const maxReason = 2_000

type Json = Record<string, unknown>

const isObject = (value: unknown): value is Json => typeof value === "object" && value !== null && !Array.isArray(value)

/** Whether this session's client can show a form (form-mode elicitation). */
export const canAsk = (server: Server): boolean => isObject(server.getClientCapabilities()?.elicitation?.form)

/**
 * Who answered, for the audit: the client as it introduced itself, escaped
 * and cut, always under `mcp:` so no client passes for a rule or a person.
 */
export const clientOf = (server: Server): string => {
  const info = server.getClientVersion()
  const name = typeof info?.name === "string" && info.name.length > 0 ? info.name : "unknown-client"
  const version = typeof info?.version === "string" && info.version.length > 0 ? `@${info.version}` : ""
  return `mcp:${Printable.name(`${name}${version}`)}`
}

// Effect's JSON Schemas put named schemas under `$defs` and point at them.
const resolve = (root: Json, schema: unknown): Json | undefined => {
  if (!isObject(schema)) return undefined
  const ref = schema.$ref
  if (typeof ref !== "string") return schema
  const defs = root.$defs
  const prefix = "#/$defs/"
  if (!ref.startsWith(prefix) || !isObject(defs)) return undefined
  return resolve(root, defs[ref.slice(prefix.length)])
}

// Effect 4's JSON Schemas write a number as `anyOf` it and the strings of its
// non-finite values, and an optional field as `anyOf` it and null: a form
// offers the one member a person types.
const nonFinite = new Set(["Infinity", "-Infinity", "NaN"])
const typed = (root: Json, schema: Json): Json | undefined => {
  if (!Array.isArray(schema.anyOf)) return schema
  const members = schema.anyOf.map((member) => resolve(root, member))
  if (members.some((member) => member === undefined)) return undefined
  const numeric = members.some((member) => member!.type === "number" || member!.type === "integer")
  const kept = members.filter((member) =>
    member!.type !== "null" &&
    !(numeric && member!.type === "string" && Array.isArray(member!.enum) &&
      member!.enum.every((value) => nonFinite.has(value as string)))
  )
  if (kept.length !== 1) return undefined
  return typeof schema.description === "string" ? { ...kept[0], description: schema.description } : kept[0]
}

type Field =
  | { type: "string"; title: string; description?: string; default?: string; enum?: Array<string> }
  | { type: "number" | "integer"; title: string; description?: string; default?: number }
  | { type: "boolean"; title: string; description?: string; default?: boolean }

// A payload field a form can hold (a string, a choice of strings, a number,
// a boolean), prefilled with its value; anything else is shown, not edited.
const fieldOf = (key: string, schema: Json, value: unknown): Field | undefined => {
  const about = typeof schema.description === "string" ? { description: schema.description } : {}
  const strings = Array.isArray(schema.enum) && schema.enum.every((option) => typeof option === "string")
  if (strings && (value === undefined || typeof value === "string")) {
    return {
      type: "string",
      title: key,
      ...about,
      enum: [...schema.enum as Array<string>],
      ...(value !== undefined ? { default: value as string } : {})
    }
  }
  if (schema.enum !== undefined) return undefined
  if (schema.type === "string" && (value === undefined || typeof value === "string")) {
    return { type: "string", title: key, ...about, ...(value !== undefined ? { default: value as string } : {}) }
  }
  if ((schema.type === "number" || schema.type === "integer") && (value === undefined || typeof value === "number")) {
    return { type: schema.type, title: key, ...about, ...(value !== undefined ? { default: value as number } : {}) }
  }
  if (schema.type === "boolean" && (value === undefined || typeof value === "boolean")) {
    return { type: "boolean", title: key, ...about, ...(value !== undefined ? { default: value as boolean } : {}) }
  }
  return undefined
}

/** The editable fields of a payload, by name, from its JSON Schema and the payload's display. */
export const fieldsOf = (schema: unknown, payload: unknown, shown: Printable.Display): Map<string, Field> => {
  const fields = new Map<string, Field>()
  if (!isObject(schema) || !isObject(payload)) return fields
  // A client shows a field's value as it is: one holding characters that
  // hide or reorder text (or controls) stays in the message, where they are escaped.
  const hiding = new Set(
    shown.fields.filter((field) => field.path.length === 1 && field.hidden.length > 0).map((field) => field.path[0])
  )
  const root = resolve(schema, schema)
  const properties = root?.properties
  if (!isObject(properties)) return fields
  for (const [key, property] of Object.entries(properties)) {
    // Never a name of the form's own fields.
    if (key.startsWith("graded/")) continue
    const found = resolve(schema, property)
    const resolved = found === undefined ? undefined : typed(schema, found)
    const value = Object.hasOwn(payload, key) ? payload[key] : undefined
    if (hiding.has(key)) continue
    const field = resolved === undefined ? undefined : fieldOf(key, resolved, value)
    if (field !== undefined) fields.set(key, field)
  }
  return fields
}

/** The form's message, and how many characters of the payload it does not show (0: all of it). */
const messageOf = (
  view: HumanConfirm.View,
  shown: Printable.Display,
  editable: ReadonlyArray<string>,
  client: string
): { readonly text: string; readonly cut: number } => {
  const cut = shown.total - shown.shown
  const lines = [
    `${view.grade === "send" ? "SEND" : "WRITE"}: ${Printable.escape(view.title)} (${view.tool})`,
    Printable.escape(view.description),
    "",
    "It runs only if you approve, with this exact payload:",
    ...Printable.lines(shown),
    ...(cut > 0 ? [`[${cut} more characters not shown: this form can only reject it]`] : []),
    "",
    editable.length === 0
      ? "Nothing here can be edited in this form."
      : `You may edit ${editable.join(", ")} below; the rest goes as shown.`,
    `Asked for ${view.actor === undefined ? "this session" : Printable.name(view.actor)} through ${client}.`
  ]
  return { cut, text: lines.join("\n") }
}

const sameValue = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b)

/** What the human's answer to the form decides. */
export const decisionOf = (
  by: string,
  shown: unknown,
  fields: ReadonlyMap<string, Field>,
  result: { readonly action: string; readonly content?: Record<string, unknown> | undefined },
  unshown = 0
): HumanConfirm.Decision => {
  if (result.action === "decline") return HumanConfirm.reject(by, "declined in the client's form")
  if (result.action !== "accept") return HumanConfirm.reject(by, "the form was dismissed without a decision")
  const content = result.content ?? {}
  const choice = content[decisionField]
  if (choice === "reject") {
    const reason = typeof content[reasonField] === "string" ? content[reasonField].trim() : ""
    return HumanConfirm.reject(
      by,
      reason.length === 0 ? "rejected in the client's form" : Printable.cap(reason, maxReason).text
    )
  }
  if (choice !== "approve") return HumanConfirm.reject(by, "the form came back without a decision")
  // As on the other surfaces, no approval of what the human could not read in full.
  if (unshown > 0) {
    return HumanConfirm.reject(
      by,
      `approval refused: the form showed the payload only in part (${unshown} characters not shown)`
    )
  }
  // Only the form's fields can change; anything else the client sends back is
  // not the human's edit and is ignored.
  const edited: Json = isObject(shown) ? { ...shown } : {}
  let changed = false
  for (const key of fields.keys()) {
    // Own keys only: `constructor` or `toString` in the answer is not inherited from Object.prototype.
    if (!Object.hasOwn(content, key)) continue
    if (sameValue(content[key], isObject(shown) && Object.hasOwn(shown, key) ? shown[key] : undefined)) continue
    edited[key] = content[key]
    changed = true
  }
  return changed ? HumanConfirm.approve(by, edited) : HumanConfirm.approve(by)
}

/**
 * A HumanConfirm UI that asks through this session's client. No answer in
 * time, or a client that fails to answer, is a rejection: nothing runs.
 */
export const ui = (server: Server, timeout: Duration.Input): HumanConfirm.UI => ({
  confirm: (view) => {
    const by = clientOf(server)
    const shown = Printable.display(view.payload, { total: maxPayload })
    const fields = fieldsOf(view.schema, view.payload, shown)
    const message = messageOf(view, shown, [...fields.keys()], by)
    const choices = message.cut === 0 ? ["approve", "reject"] : ["reject"]
    const requestedSchema = {
      type: "object" as const,
      properties: {
        [decisionField]: { type: "string" as const, title: "Your decision", enum: choices },
        // A form that cannot show the whole payload offers no edit either.
        ...(message.cut === 0 ? Object.fromEntries(fields) : {}),
        [reasonField]: { type: "string" as const, title: "Reason (when you reject)" }
      },
      required: [decisionField]
    }
    // The SDK's `elicitInput` would reject an answer that misses the form's
    // constraints before HumanConfirm sees it; asked directly, HumanConfirm
    // is the one judge of an edit, and audits an invalid one as such.
    return Effect.tryPromise({
      try: () =>
        server.request(
          {
            method: "elicitation/create",
            params: { mode: "form", message: message.text, requestedSchema }
          },
          ElicitResultSchema,
          { timeout: Duration.toMillis(Duration.fromInputUnsafe(timeout)) }
        ),
      catch: (error) => error
    }).pipe(
      Effect.map((result) => decisionOf(by, view.payload, fields, result, message.cut)),
      Effect.catch((error) =>
        Effect.succeed(
          HumanConfirm.reject(
            by,
            `no decision: the client did not answer the form (${
              Printable.cap(Printable.escape(String(error instanceof Error ? error.message : error)), 200).text
            })`
          )
        )
      )
    )
  }
})
