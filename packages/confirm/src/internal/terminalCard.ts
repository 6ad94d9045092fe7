// The terminal card: what a person reads before deciding. Imported by
// TerminalConfirm only. It guards three things, in this order:
// - nothing on the card (the payload, its keys, a name, the actor) can move the
//   cursor, erase a line or reorder text: everything goes through core's
//   Printable, and characters that hide or reorder text also flag the card;
// - a text's line breaks show as lines, each behind a gutter (`┆`) the payload
//   cannot draw, so a payload cannot fake a field or the card's border;
// - a payload larger than the limits is cut where the card says so, and the
//   card reports how much it shows (`cut`), so the UI can refuse to approve
//   what the person has not seen.
// A backslash in the payload shows as `\\` and a tab in a quoted text as `\t`,
// so every escape a person reads on the card is one graded made.
import { type HumanConfirm, Printable } from "@graded/core"

export interface Limits {
  /** The most characters of one text (a string value or a key) the card shows. */
  readonly field: number
  /** The most characters of the whole payload the card shows. */
  readonly total: number
}

export const unlimited: Limits = { field: Number.POSITIVE_INFINITY, total: Number.POSITIVE_INFINITY }

export interface Card {
  readonly text: string
  /** Whether some of the payload is not on the card. */
  readonly cut: boolean
}

// Deeper levels keep this indentation and show their depth, so a deeply nested
// payload cannot make the card's lines grow without bound.
const maxIndent = 12
const indentOf = (depth: number) => "  ".repeat(Math.min(depth, maxIndent)) + (depth > maxIndent ? `${depth}› ` : "")

const quote = (text: string) =>
  `"${Printable.escape(text.replace(/\\/g, "\\\\").replace(/"/g, "\\\"").replace(/\t/g, "\\t"))}"`
const blockLines = (text: string) => Printable.escape(text.replace(/\\/g, "\\\\"), { multiline: true }).split("\n")

const isRecord = (value: unknown): value is Readonly<Record<string, unknown>> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const children = (value: object): ReadonlyArray<readonly [string | undefined, unknown]> =>
  Array.isArray(value) ? value.map((item) => [undefined, item] as const) : Object.entries(value)

const scalar = (value: unknown): string => {
  if (typeof value === "string") return quote(value)
  if (value === null || typeof value === "number" || typeof value === "boolean") return String(value)
  if (Array.isArray(value)) return "[]"
  if (isRecord(value)) return "{}"
  return Printable.escape(String(value))
}

// A payload's size in the characters a card counts: each text (a string value
// or a key) its length, each other value the length it is shown with, each
// container one more. Empty texts count one, so a payload of many empty
// fields is still large. Cycles (possible in a payload that is not JSON) count once.
const sizeOf = (value: unknown, path: Set<object> = new Set()): number => {
  if (typeof value === "string") return Math.max(1, value.length)
  if (typeof value !== "object" || value === null) return scalar(value).length
  if (path.has(value)) return 1
  const entries = children(value)
  if (entries.length === 0) return 2
  path.add(value)
  let size = 1
  for (const [key, item] of entries) size += (key === undefined ? 0 : Math.max(1, key.length)) + sizeOf(item, path)
  path.delete(value)
  return size
}

const hiddenIn = (value: unknown, found: Set<string>, path: Set<object> = new Set()): Set<string> => {
  if (typeof value === "string") { for (const code of Printable.hidden(value)) found.add(code) }
  else if (typeof value === "object" && value !== null && !path.has(value)) {
    path.add(value)
    for (const [key, item] of children(value)) {
      if (key !== undefined) hiddenIn(key, found, path)
      hiddenIn(item, found, path)
    }
    path.delete(value)
  }
  return found
}

const showing = (shown: number, of: number) => `[showing ${shown} of ${of} characters]`

const renderPayload = (payload: unknown, limits: Limits) => {
  const lines: Array<string> = []
  let left = limits.total
  let shown = 0
  let stopped = false
  const charge = (n: number) => {
    left -= n
    shown += n
  }
  // The part of a text the limits let through; charges it.
  const part = (text: string) => {
    const kept = text.slice(0, Math.max(0, Math.min(limits.field, left)))
    charge(Math.max(1, kept.length))
    return kept
  }
  const stop = (depth: number) => {
    if (!stopped) lines.push(`${indentOf(depth)}[… the rest of the payload is not shown]`)
    stopped = true
  }

  const members = (value: object, depth: number, path: Set<object>): void => {
    path.add(value)
    for (const [key, item] of children(value)) {
      if (stopped) break
      if (left <= 0) {
        stop(depth)
        break
      }
      if (key === undefined) walk("- ", item, depth, path)
      else {
        const name = part(key)
        walk(`${quote(name)}${name.length < key.length ? "…" : ""}: `, item, depth, path)
      }
    }
    path.delete(value)
  }

  const walk = (label: string, value: unknown, depth: number, path: Set<object>): void => {
    if (stopped) return
    if (left <= 0) return stop(depth)
    const indent = indentOf(depth)
    if (typeof value === "string") {
      const kept = part(value)
      const note = kept.length < value.length ? showing(kept.length, value.length) : ""
      if (!kept.includes("\n")) return void lines.push(`${indent}${label}${quote(kept)}${note && ` ${note}`}`)
      lines.push(`${indent}${label.trimEnd()}`)
      for (const line of blockLines(kept)) lines.push(`${indentOf(depth + 1)}┆ ${line}`)
      if (note !== "") lines.push(`${indentOf(depth + 1)}${note}`)
      return
    }
    if (typeof value !== "object" || value === null || children(value).length === 0) {
      const text = scalar(value)
      charge(text.length)
      return void lines.push(`${indent}${label}${text}`)
    }
    charge(1)
    if (path.has(value)) return void lines.push(`${indent}${label}[circular]`)
    lines.push(`${indent}${label.trimEnd()}`)
    members(value, depth + 1, path)
  }

  // The payload itself has no line of its own: a container shows its members.
  if (typeof payload === "object" && payload !== null && children(payload).length > 0) {
    charge(1)
    members(payload, 0, new Set())
  } else walk("", payload, 0, new Set())
  return { lines, shown }
}

const gutter = (text: string) => Printable.escape(text, { multiline: true }).split("\n").map((line) => `│ ${line}`)

/**
 * Renders a view within the limits. A payload that cannot be rendered at all
 * (nested deeper than the stack allows) is said so, and reported as not shown
 * whatever the limits, so it cannot be approved here.
 */
export const render = (view: HumanConfirm.View, limits: Limits): Card => {
  const head = [
    "",
    `┌ ${view.grade.toUpperCase()}: ${Printable.escape(view.title)} (${Printable.name(view.tool)})`,
    ...gutter(view.description),
    ...(view.actor !== undefined ? [`│ acting: ${Printable.name(view.actor)}`] : [])
  ]
  let body: { readonly lines: ReadonlyArray<string>; readonly flags: ReadonlyArray<string>; readonly cut: boolean }
  try {
    const size = sizeOf(view.payload)
    const { lines, shown } = renderPayload(view.payload, limits)
    const hidden = [...hiddenIn(view.payload, new Set())]
    body = {
      lines,
      cut: shown < size,
      flags: [
        ...(hidden.length > 0
          ? [`│ ⚠ the payload holds characters that hide or reorder text, shown as escapes: ${hidden.join(" ")}`]
          : []),
        ...(shown < size
          ? [
            `│ ⚠ this card shows ${shown} of ${size} characters of the payload; answer s to see all of it before approving`
          ]
          : [])
      ]
    }
  } catch {
    body = {
      lines: ["[not shown]"],
      cut: true,
      flags: ["│ ⚠ the payload is nested too deeply to be shown here, so it cannot be approved here: edit or reject it"]
    }
  }
  const text = [
    ...head,
    ...body.flags,
    "│ payload, exactly as it will go out:",
    ...body.lines.map((line) => `│   ${line}`),
    "└"
  ].join("\n") + "\n"
  return { text, cut: body.cut }
}
