// The run timeline's data: audit entries, read through the app's own reader
// (any sink that reads back: memory, JSON Lines, SQLite, PostgreSQL), grouped
// into runs by trace id and each run into rounds. A round opens at an offer
// (the candidate set the model was shown, with what was left out and why)
// that follows what the round before did, or at a second model answer, and holds the calls, results, refusals, cards and
// their decisions, deliveries and in-doubt deliveries that followed. Every
// text from outside (a tool name a model made up, a payload, a reason, a
// decider) is shown as `Audit.describe` and `Printable` show it: escaped, on
// one line, cut; the page then puts it on screen with textContent only.
// Imported by internal/api.ts.
import { Effect, Schema } from "effect"
import { type HttpServerRequest, HttpServerResponse } from "effect/http"
import { Audit, Printable } from "@graded/core"

/** Where the timeline reads from: every entry the app's audit holds. */
export interface TimelineOptions {
  readonly entries: Effect.Effect<ReadonlyArray<Audit.Entry>, unknown>
}

export const states = ["running", "waiting", "answered", "round-limit", "finished", "cancelled"] as const
export type State = typeof states[number]

const text = (value: string, max = 400) => Printable.escape(value.length > max ? `${value.slice(0, max)}…` : value)
const name = (value: string) => Printable.name(value)

export interface Summary {
  readonly trace: string
  readonly actor: string | undefined
  readonly state: State
  readonly started: string
  readonly last: string
  readonly tools: ReadonlyArray<string>
  readonly refusals: number
  readonly decisions: number
  readonly inDoubt: number
}

interface Offer {
  readonly tools: ReadonlyArray<string>
  readonly leftOut: ReadonlyArray<{ readonly tool: string; readonly gate: string; readonly reason: string }>
  readonly guidelines: ReadonlyArray<string>
}

/** One entry of a round, as the page draws it. */
interface Step {
  readonly type: string
  readonly at: string
  readonly tool: string | undefined
  readonly line: string
  readonly by: string | undefined
  readonly gate: string | undefined
  readonly decision: string | undefined
  readonly edited: boolean | undefined
  readonly key: string | undefined
}

interface Round {
  readonly round: number
  offer: Offer | undefined
  tokens: { readonly input: number; readonly output: number } | undefined
  readonly steps: Array<Step>
}

const traceOf = (entry: Audit.Entry) => entry.traceId ?? ""

const stateOf = (entries: ReadonlyArray<Audit.Entry>): State => {
  let state: State = "running"
  for (const entry of entries) {
    if (entry.type === "answered") state = "answered"
    else if (entry.type === "round-limit") state = "round-limit"
    else if (entry.type === "run") {
      state = entry.status === "resumed" ? "running" : entry.status === "waiting" ? "waiting" : entry.status
    }
  }
  return state
}

const summary = (trace: string, entries: ReadonlyArray<Audit.Entry>): Summary => {
  const tools = new Set<string>()
  let refusals = 0
  let decisions = 0
  let inDoubt = 0
  for (const entry of entries) {
    if ("tool" in entry) tools.add(name(entry.tool))
    if (entry.type === "refused") refusals++
    if (entry.type === "decided") decisions++
    if (entry.type === "in-doubt" && entry.action === "surfaced") inDoubt++
  }
  const actor = entries.find((entry) => entry.actor !== undefined)?.actor
  return {
    trace: text(trace, 200),
    actor: actor === undefined ? undefined : name(actor),
    state: stateOf(entries),
    started: entries[0]?.at ?? "",
    last: entries.at(-1)?.at ?? "",
    tools: [...tools],
    refusals,
    decisions,
    inDoubt
  }
}

const step = (entry: Audit.Entry): Step => ({
  type: entry.type,
  at: entry.at,
  tool: "tool" in entry ? name(entry.tool) : undefined,
  line: Audit.describe(entry),
  by: "by" in entry ? name(entry.by) : undefined,
  gate: entry.type === "refused" ? text(entry.gate, 80) : undefined,
  decision: entry.type === "decided" ? entry.decision : undefined,
  edited: entry.type === "decided" ? entry.edited : undefined,
  key: entry.type === "delivered" && entry.key !== undefined ? text(entry.key, 200) : undefined
})

const offerOf = (entry: Audit.Entry & { readonly type: "offered" }): Offer => ({
  tools: entry.tools.map(name),
  leftOut: entry.suppressed.map((left) => ({
    tool: name(left.tool),
    gate: text(left.gate ?? "registry", 80),
    reason: text(left.reason)
  })),
  guidelines: (entry.guidelines ?? []).map((matched) => text(`${matched.id} (${matched.via})`, 200))
})

/** A run's entries as rounds. */
export const rounds = (entries: ReadonlyArray<Audit.Entry>): ReadonlyArray<Round> => {
  const out: Array<Round> = []
  let current: Round | undefined
  const open = () => {
    current = { round: out.length + 1, offer: undefined, tokens: undefined, steps: [] }
    out.push(current)
    return current
  }
  for (const entry of entries) {
    if (entry.type === "offered") {
      // An offer with nothing after it was made again (a resumed run offers
      // once as it resumes and once as it asks the model): the later one stands.
      const round = current === undefined || current.steps.length > 0 || current.tokens !== undefined ? open() : current
      round.offer = offerOf(entry)
    } else if (entry.type === "usage") {
      const round = current === undefined || current.tokens !== undefined ? open() : current
      round.tokens = { input: entry.inputTokens, output: entry.outputTokens }
    } else {
      ;(current ?? open()).steps.push(step(entry))
    }
  }
  return out
}

/** Runs, newest first, filtered by state, actor and a tool they touched. */
export const runs = (
  entries: ReadonlyArray<Audit.Entry>,
  filter: {
    readonly state?: string | undefined
    readonly actor?: string | undefined
    readonly tool?: string | undefined
  }
): ReadonlyArray<Summary> => {
  const byTrace = new Map<string, Array<Audit.Entry>>()
  for (const entry of entries) {
    const trace = traceOf(entry)
    const list = byTrace.get(trace)
    if (list === undefined) byTrace.set(trace, [entry])
    else list.push(entry)
  }
  return [...byTrace].map(([trace, list]) => summary(trace, list))
    .filter((run) =>
      (filter.state === undefined || filter.state === "" || run.state === filter.state) &&
      (filter.actor === undefined || filter.actor === "" || run.actor === filter.actor) &&
      (filter.tool === undefined || filter.tool === "" || run.tools.includes(filter.tool))
    )
    .sort((a, b) => (a.last < b.last ? 1 : a.last > b.last ? -1 : 0))
}

const json = (status: number, body: unknown) =>
  HttpServerResponse.jsonUnsafe(body, { status, headers: { "cache-control": "no-store" } })

const unreadable = json(503, { error: "the audit could not be read" })

const Filter = Schema.Struct({
  state: Schema.optional(Schema.String),
  actor: Schema.optional(Schema.String),
  tool: Schema.optional(Schema.String),
  trace: Schema.optional(Schema.String)
})

const query = (request: HttpServerRequest.HttpServerRequest) => {
  const params = new URL(request.url, "http://x").searchParams
  const given = Object.fromEntries(["state", "actor", "tool", "trace"].flatMap((key) => {
    const value = params.get(key)
    return value === null ? [] : [[key, value]]
  }))
  return Schema.decodeUnknownSync(Filter)(given)
}

/** `GET /api/runs?state&actor&tool`: the runs; `GET /api/runs?trace=`: one run's rounds. */
export const handler = (options: TimelineOptions, request: HttpServerRequest.HttpServerRequest) =>
  Effect.matchCause(options.entries, {
    onFailure: () => unreadable,
    onSuccess: (entries) => {
      const filter = query(request)
      if (filter.trace === undefined) return json(200, { states, runs: runs(entries, filter) })
      // The trace as the list showed it (escaped): the same escaping finds it.
      const mine = entries.filter((entry) => text(traceOf(entry), 200) === filter.trace)
      if (mine.length === 0) return json(404, { error: "no such run" })
      return json(200, { run: summary(traceOf(mine[0]!), mine), rounds: rounds(mine) })
    }
  })
