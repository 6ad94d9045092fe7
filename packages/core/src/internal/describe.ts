// Audit.describe's body: one entry as a line a person reads, drawn from the
// display model (Printable.display), on one line, cut at `maxShown`.
// Who may import this: Audit.ts.
import type { Event } from "../Audit.js"
import * as Printable from "../Printable.js"

// Audit entries carry tool inputs, which may hold values JSON cannot: keep
// the line valid whatever they are.
export const replacer = (_key: string, value: unknown) => typeof value === "bigint" ? value.toString() : value

// A display's text on one line: its line breaks as `\n` (its backslashes are doubled, so that reads as graded's).
const oneLine = (field: Printable.DisplayField) => field.multiline ? field.text.replace(/\n/g, "\\n") : field.text
const more = (count: number) => `… (${count} more characters)`

// Text that came from outside (a model, a web client, an audit file someone
// wrote), as the display model shows it: cut, on one line, every control,
// ANSI, bidirectional and zero-width character a visible escape.
const textOf = (maxShown: number) => (value: string): string => {
  const field = Printable.display(value, { field: maxShown }).fields[0]!
  return oneLine(field) + (field.cut > 0 ? more(field.cut) : "")
}

// A name, a decider: kept when it is a valid tool name, escaped and cut otherwise.
const name = Printable.name

// JSON string content from a display's text, whose backslashes are doubled already.
const quoted = (field: Printable.DisplayField, text: string) =>
  oneLine({ ...field, text: text.replace(/"/g, "\\\"").replace(/\t/g, "\\t") })

// A value's display as one line of JSON, up to where it was cut, which the line then says.
const jsonLine = (shown: Printable.Display): string => {
  let line = ""
  const open: Array<{ readonly close: string; members: number }> = []
  for (const field of shown.fields) {
    while (open.length > field.path.length) line += open.pop()!.close
    const parent = open[open.length - 1]
    if (parent !== undefined && parent.members++ > 0) line += ","
    if (field.kind === "rest") break
    if (field.key !== undefined) line += `"${quoted(field, field.key)}${field.keyCut > 0 ? "" : "\""}:`
    if (field.keyCut > 0) break
    if (field.kind === "string") line += `"${quoted(field, field.text)}${field.cut > 0 ? "" : "\""}`
    else if (field.kind === "circular") line += "\"[circular]\""
    else if ((field.kind === "object" || field.kind === "array") && field.text === "") {
      line += field.kind === "object" ? "{" : "["
      open.push({ close: field.kind === "object" ? "}" : "]", members: 0 })
    } else line += field.text
    if (field.cut > 0) break
  }
  if (shown.cut) return line + more(shown.total - shown.shown)
  while (open.length > 0) line += open.pop()!.close
  return line
}

// A payload or an input as one line of JSON. Values JSON cannot hold are shown
// as the file sink writes them; a value that cannot be shown at all says so.
const showOf = (maxShown: number) => (value: unknown): string => {
  let json: string | undefined
  try {
    json = JSON.stringify(value, replacer)
  } catch {
    return "(a value that cannot be shown as JSON)"
  }
  return json === undefined ? "undefined" : jsonLine(Printable.display(JSON.parse(json), { total: maxShown }))
}

const names = (values: ReadonlyArray<string>) => values.map(name).join(", ")

export const describe = (entry: Event, maxShown: number): string => {
  // An entry written inside a sub-agent says whose it is (Audit.Entry's `agent`).
  const agent: unknown = (entry as { readonly agent?: unknown }).agent
  const line = eventLine(entry, maxShown)
  return typeof agent === "string" ? `[${textOf(maxShown)(agent)}] ${line}` : line
}

const eventLine = (entry: Event, maxShown: number): string => {
  const text = textOf(maxShown)
  const show = showOf(maxShown)
  const because = (reason: string | undefined) => reason !== undefined ? `: ${text(reason)}` : ""
  switch (entry.type) {
    case "offered":
      return `offered to the model: ${names(entry.tools) || "nothing"}` +
        (entry.suppressed.length > 0 ? `; withheld: ${entry.suppressed.map((s) => text(s.reason)).join("; ")}` : "")
    case "called":
      return `runs ${name(entry.tool)} ${show(entry.input)}`
    case "completed":
      return `${name(entry.tool)} returned ${entry.chars} characters`
    case "refused":
      return `REFUSED ${name(entry.tool)} at the ${text(entry.gate)} gate: ${text(entry.reason)}`
    case "confirm-requested":
      return `asks a human to confirm ${name(entry.tool)} (${text(entry.grade)}) with ${show(entry.payload)}`
    case "decided":
      return `${name(entry.by)} ${entry.decision} ${name(entry.tool)}${entry.edited ? " (edited)" : ""}` +
        because(entry.reason)
    case "delivered":
      return `DELIVERED ${name(entry.tool)}, confirmed by ${name(entry.by)}`
    case "failed":
      return `${name(entry.tool)} failed: ${text(entry.error)}`
    case "proposed":
      return `proposed ${name(entry.tool)} for a human to decide (${text(entry.proposal)})`
    case "step":
      return `plan ${text(entry.plan)}, step ${entry.index} (${text(entry.step)}, ${entry.kind}): ${entry.status}` +
        because(entry.reason)
    case "answered":
      return `the model answered after ${entry.rounds} round(s)`
    case "usage":
      return `round ${entry.round} used ${entry.inputTokens} input and ${entry.outputTokens} output tokens` +
        (entry.cost !== undefined ? `, cost ${entry.cost}` : "")
    case "round-limit":
      return `stopped at the round limit (${entry.rounds}); not run: ${names(entry.pending)}`
    case "in-doubt":
      return entry.action === "surfaced"
        ? `IN DOUBT ${name(entry.tool)} (${
          text(entry.proposal)
        }): its delivery stopped; a human must mark it done or retry it`
        : `${name(entry.by)} ${entry.action === "retried" ? "retried" : "marked done"} the in-doubt ${
          name(entry.tool)
        } (${text(entry.proposal)})`
    case "run":
      return `run ${text(entry.run)} ${entry.status}` +
        (entry.proposals !== undefined && entry.proposals.length > 0 ? ` (${entry.proposals.map(text).join(", ")})`
          : "")
  }
}
