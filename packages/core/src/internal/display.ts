// The one display model: what a person is shown of a value, decided here for
// every surface (the web card, the terminal card, the MCP form, the audit's
// lines). A surface renders the fields; it never caps, cuts, escapes or
// wraps a value itself. Imported by Printable.ts (`display`) and Audit.ts.
// Fixes to how a kind of value is shown (a Map, -0, variation selectors, a
// soft-wrapped line) go here, once.
import type { Display, DisplayField, DisplayLimits } from "../Printable.js"
import { escape } from "./characters.js"

type Mutable<T> = { -readonly [K in keyof T]: T[K] }

// Every character `escape` shows as an escape (controls, bidirectional and
// zero-width characters), once each, in the order found. A CRLF is a line break.
const hiding = (text: string, found: Set<string>): void => {
  const source = text.replace(/\r\n/g, "\n")
  if (escape(source, { multiline: true }) === source) return
  for (const char of source) {
    const escaped = escape(char, { multiline: true })
    if (escaped !== char) found.add(escaped)
  }
}

// A backslash shows doubled, so every `\u202E` a person reads is one graded made.
const textOf = (text: string, multiline: boolean) => escape(text.replace(/\\/g, "\\\\"), { multiline })

const isRecord = (value: unknown): value is Readonly<Record<string, unknown>> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const children = (value: object): ReadonlyArray<readonly [string | number, unknown]> =>
  Array.isArray(value) ? value.map((item, i) => [i, item] as const) : Object.entries(value)

const scalar = (value: unknown): string => {
  if (value === null || typeof value === "number" || typeof value === "boolean") return String(value)
  if (Array.isArray(value)) return "[]"
  if (isRecord(value)) return "{}"
  return textOf(String(value), false)
}

const kindOf = (value: unknown): DisplayField["kind"] => {
  if (value === null) return "null"
  if (Array.isArray(value)) return "array"
  const type = typeof value
  return type === "object" || type === "string" || type === "number" || type === "boolean" ? type : "other"
}

// A value's size in the characters the model counts: each text (a string value
// or a key) its length, each other value the length it is shown with, each
// container one more. Empty texts count one, so a value of many empty fields
// is still large. Cycles (possible in a value that is not JSON) count once.
const sizeOf = (value: unknown, path: Set<object> = new Set()): number => {
  if (typeof value === "string") return Math.max(1, value.length)
  if (typeof value !== "object" || value === null) return scalar(value).length
  if (path.has(value)) return 1
  const entries = children(value)
  if (entries.length === 0) return 2
  path.add(value)
  let size = 1
  for (const [key, item] of entries) {
    size += (typeof key === "number" ? 0 : Math.max(1, key.length)) + sizeOf(item, path)
  }
  path.delete(value)
  return size
}

const hiddenIn = (value: unknown, found: Set<string>, path: Set<object> = new Set()): Set<string> => {
  if (typeof value === "string") hiding(value, found)
  else if (typeof value === "object" && value !== null && !path.has(value)) {
    path.add(value)
    for (const [key, item] of children(value)) {
      if (typeof key === "string") hiding(key, found)
      hiddenIn(item, found, path)
    }
    path.delete(value)
  } else if (value !== null && typeof value !== "object") hiding(String(value), found)
  return found
}

const frozen = <A extends object>(value: A): A => Object.freeze(value)

export const display = (value: unknown, limits: DisplayLimits = {}): Display => {
  const field = limits.field ?? Number.POSITIVE_INFINITY
  const fields: Array<DisplayField> = []
  let left = limits.total ?? Number.POSITIVE_INFINITY
  let shown = 0
  let stopped = false
  const charge = (n: number) => {
    left -= n
    shown += n
  }
  // The part of a text the limits let through; charges it.
  const part = (text: string) => {
    const kept = text.slice(0, Math.max(0, Math.min(field, left)))
    charge(Math.max(1, kept.length))
    return kept
  }
  const stop = (path: ReadonlyArray<string | number>) => {
    if (!stopped) {
      fields.push(frozen({
        path: frozen([...path]),
        key: undefined,
        keyCut: 0,
        kind: "rest",
        text: "",
        length: 0,
        cut: 0,
        hidden: frozen([]),
        multiline: false
      }))
    }
    stopped = true
  }
  const push = (entry: Mutable<DisplayField>) => fields.push(frozen({ ...entry, path: frozen(entry.path) }))

  const walk = (
    path: Array<string | number>,
    key: { readonly text: string; readonly cut: number } | undefined,
    item: unknown,
    seen: Set<object>
  ): void => {
    if (stopped) return
    if (left <= 0) return stop(path)
    const base = { path: [...path], key: key?.text, keyCut: key?.cut ?? 0, kind: kindOf(item) }
    // A field's own characters: its key's, and a leaf's value's; a container's members list theirs.
    const own = (leaf: boolean) => {
      const found = new Set<string>()
      const name = path[path.length - 1]
      if (key !== undefined && typeof name === "string") hiding(name, found)
      return frozen([...(leaf ? hiddenIn(item, found) : found)])
    }
    if (typeof item === "string") {
      const kept = part(item)
      const multiline = kept.replace(/\r\n/g, "\n").includes("\n")
      return void push({
        ...base,
        text: textOf(kept, multiline),
        length: item.length,
        cut: item.length - kept.length,
        hidden: own(true),
        multiline
      })
    }
    const entries = typeof item === "object" && item !== null ? children(item) : []
    if (entries.length === 0) {
      const text = scalar(item)
      charge(text.length)
      return void push({
        ...base,
        text,
        length: text.length,
        cut: 0,
        hidden: own(true),
        multiline: false
      })
    }
    charge(1)
    const container = item as object
    if (seen.has(container)) {
      return void push({ ...base, kind: "circular", text: "", length: 0, cut: 0, hidden: own(false), multiline: false })
    }
    push({ ...base, text: "", length: 0, cut: 0, hidden: own(false), multiline: false })
    seen.add(container)
    for (const [name, member] of entries) {
      if (stopped) break
      if (left <= 0) {
        stop([...path, name])
        break
      }
      if (typeof name === "number") walk([...path, name], undefined, member, seen)
      else {
        const kept = part(name)
        walk([...path, name], { text: textOf(kept, false), cut: name.length - kept.length }, member, seen)
      }
    }
    seen.delete(container)
  }

  walk([], undefined, value, new Set())
  const total = sizeOf(value)
  return frozen({
    fields: frozen(fields),
    hidden: frozen([...hiddenIn(value, new Set())]),
    cut: shown < total,
    shown,
    total
  })
}

// Deeper levels keep this indentation and show their depth, so a deeply nested
// payload cannot make the card's lines grow without bound.
const maxIndent = 12
const indentOf = (depth: number) => "  ".repeat(Math.min(depth, maxIndent)) + (depth > maxIndent ? `${depth}› ` : "")

// The model's text has every backslash doubled, so quoting it here is unambiguous.
const quote = (text: string) => `"${text.replace(/"/g, "\\\"").replace(/\t/g, "\\t")}"`

const showing = (field: DisplayField) => `[showing ${field.length - field.cut} of ${field.length} characters]`

// The columns a terminal gives a character, counted high so that a row
// measured with them never reaches the edge: a character of the first
// planes' narrow scripts one, any other (wide, emoji, combining) two, a tab
// the eight it can take.
const columnsOf = (char: string) => char === "\t" ? 8 : char.codePointAt(0)! < 0x1100 ? 1 : 2
const columnsIn = (text: string) => {
  let columns = 0
  for (const char of text) columns += columnsOf(char)
  return columns
}

// The rows a terminal `width` columns wide shows of one drawn line, so that
// it never wraps the line itself: a wrapped part would start at the left
// edge and could draw a row of the surface's own (a DELIVERED entry, a
// proposal, a card's field). Each row after the first is behind the line's
// indentation and `↳`, which no part of a line can start a row with. A row
// ends after a space where one falls in its second half.
export const wrap = (line: string, width: number): ReadonlyArray<string> => {
  if (!Number.isFinite(width)) return [line]
  const continued = `${/^ */.exec(line)![0]}  ↳ `
  const rows: Array<string> = []
  let row: Array<string> = []
  let used = 0
  let room = width
  let space = -1
  for (const char of line) {
    const columns = columnsOf(char)
    if (used + columns > room && row.length > 0) {
      room = Math.max(8, width - columnsIn(continued))
      // The words after the last space go to the next row when they fit there.
      const moved = space > row.length / 2 ? row.slice(space) : []
      const fits = columnsIn(moved.join("")) + columns <= room
      rows.push(row.slice(0, fits ? row.length - moved.length : row.length).join(""))
      row = fits ? moved : []
      used = columnsIn(row.join(""))
      space = -1
    }
    row.push(char)
    used += columns
    if (char === " ") space = row.length
  }
  rows.push(row.join(""))
  return rows.map((part, i) => i === 0 ? part : continued + part)
}

// Text a person reads, escaped, as the rows of a terminal `width` columns wide.
export const rows = (text: string, width: number): ReadonlyArray<string> =>
  escape(text, { multiline: true }).split("\n").flatMap((line) => wrap(line, width))

// The payload's lines, one for each entry of its display, each wrapped at
// `width` columns. The payload itself has no line of its own: a container
// shows its members.
export const lines = (shown: Display, width = Number.POSITIVE_INFINITY): ReadonlyArray<string> =>
  drawn(shown).flatMap((line) => wrap(line, width))

const drawn = (shown: Display): ReadonlyArray<string> => {
  const lines: Array<string> = []
  for (const field of shown.fields) {
    const root = field.path.length === 0
    if (root && (field.kind === "object" || field.kind === "array") && field.text === "") continue
    const depth = Math.max(0, field.path.length - 1)
    const indent = indentOf(depth)
    const label = root ? "" : field.key === undefined ? "- " : `${quote(field.key)}${field.keyCut > 0 ? "…" : ""}: `
    if (field.kind === "rest") lines.push(`${indent}[… the rest of the payload is not shown]`)
    else if (field.kind === "circular") lines.push(`${indent}${label}[circular]`)
    else if (field.kind === "string" && field.multiline) {
      lines.push(`${indent}${label.trimEnd()}`)
      for (const line of field.text.split("\n")) lines.push(`${indentOf(depth + 1)}┆ ${line}`)
      if (field.cut > 0) lines.push(`${indentOf(depth + 1)}${showing(field)}`)
    } else if (field.kind === "string") {
      lines.push(`${indent}${label}${quote(field.text)}${field.cut > 0 ? ` ${showing(field)}` : ""}`)
    } else if (field.text === "") lines.push(`${indent}${label.trimEnd()}`)
    else lines.push(`${indent}${label}${field.text}`)
  }
  return lines
}
