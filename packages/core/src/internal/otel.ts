// Audit.otel's body: audit entries as OpenTelemetry spans, made with the
// `Tracer` the layer is built with (Effect's OTLP exporter, @effect/opentelemetry,
// or any other). The spans carry what the entries record, and nothing else:
// graded's loop makes no span of its own, so a trace and the audit never
// disagree. Spans nest run → model turn → tool call, per trace id:
//   - a run's span opens at its first entry and ends with it (an answer, the
//     round limit, a run cancelled or finished); a run that waits for
//     decisions stays open until it resumes and ends in this process (one
//     resumed in another process is a run span there);
//   - a turn's span opens at its `usage` entry, starting where the entry
//     before it was recorded (when the loop asked the model), carries the
//     candidate set of the last `offered` entry and the tokens, and ends at
//     the next turn or the end of the run;
//   - a tool call's span opens at `called` (or `proposed`, a supervised
//     run's write or send) and ends at `completed`, `failed` or `refused` (a
//     proposal's at its delivery or a decision not to); the confirmation, the
//     decision and the delivery of that call are its attributes. An entry about a tool with no call open (a
//     refusal before the call, a decision made later on a proposal) is a span
//     of no length.
// Payloads and free text a tool, a model or a person produced (an input, a
// confirmation payload, a reason, an error) leave only through the app's
// `payloads` hook; by default none does.
// Who may import this: Audit.ts.
import { Exit, type Tracer } from "effect"
import type { Entry, PayloadField } from "../Audit.js"
import { auditSpan } from "./otlp.js"

export type Reveal = (field: PayloadField, value: unknown, entry: Entry) => string | undefined

export interface Options {
  readonly payloads?: Reveal | undefined
  readonly maxOpenRuns?: number | undefined
}

// Gates whose reasons graded composes from configuration (names, grades,
// flags, a guideline's text), never from a call's input or a tool's words:
// their reasons are exported. Any other refusal's reason goes through the hook.
const ownGates = new Set([
  "autonomous",
  "capability",
  "confirmation",
  "feature",
  "grade",
  "offered",
  "open-world",
  "page",
  "plan",
  "unknown",
  "round-limit",
  "fallback-review"
])
const reasonIsOwn = (gate: string) => ownGates.has(gate) || gate.startsWith("policy:")

type AboutCall = Extract<
  Entry,
  { readonly type: "refused" | "failed" | "confirm-requested" | "decided" | "delivered" | "in-doubt" }
>

// Whether an entry about a proposed call settles it: delivered, or decided otherwise.
const settles = (entry: AboutCall) =>
  entry.type === "delivered" || (entry.type === "decided" && entry.decision !== "approved")

// Calls opened by a proposal, which settle by decision and delivery rather than `completed`.
const proposals = new WeakSet<Tracer.Span>()

// Entries that may come from outside a run's loop, in the run's trace.
const outsideRuns = new Set<string>(["decided", "delivered", "in-doubt"])

interface Run {
  readonly span: Tracer.Span
  turn: Tracer.Span | undefined
  // The candidate set the next turn is shown: the last offer stands until another.
  offer: Entry & { readonly type: "offered" } | undefined
  // Open calls by tool, oldest first.
  readonly calls: Map<string, Array<Tracer.Span>>
  // When the entry before the current one was recorded.
  last: bigint
}

const ended = Exit.void
const failedWith = (message: string) => Exit.fail(message)

let lastAt = ""
let lastNanos = 0n
const nanosOf = (at: string): bigint => {
  if (at !== lastAt) {
    const millis = Date.parse(at)
    lastNanos = Number.isFinite(millis) ? BigInt(millis) * 1_000_000n : 0n
    lastAt = at
  }
  return lastNanos
}

// A span's name, the same string each time for the same tool or model: an
// exporter that keeps names it has written (Audit.otlpTracer) finds the one
// string at once, where a new one would be read again whole. Bounded: a model
// making up tool names starts it over.
const spanNames = new Map<string, Map<string, string>>()
const spanName = (operation: string, subject: string): string => {
  let names = spanNames.get(operation)
  if (names === undefined) spanNames.set(operation, names = new Map())
  let name = names.get(subject)
  if (name === undefined) {
    if (names.size >= 4096) names.clear()
    name = operation + subject
    names.set(subject, name)
  }
  return name
}

// How audit.ts writes a sub-agent's path (tree.ts's pathText).
const pathSeparator = " → "

// A run is one agent of one trace: a sub-agent's entries share the root's
// trace id and carry their path, so each agent of the tree is a run span.
// A root agent's key is its trace id as it is: no string made for each entry.
const keyOf = (traceId: string | undefined, agent: string | undefined) =>
  agent === undefined ? traceId ?? "" : `${traceId ?? ""}\u0000${agent}`
const runKey = (traceId: string | undefined, path: ReadonlyArray<string>) =>
  keyOf(traceId, path.length === 0 ? undefined : path.join(pathSeparator))

export const spans = (tracer: Tracer.Tracer, options: Options = {}): (entry: Entry) => void => {
  const reveal = options.payloads
  const maxOpenRuns = Math.max(1, options.maxOpenRuns ?? 10_000)
  const runs = new Map<string, Run>()

  // Under graded's own scope when the tracer is Audit.otlpTracer's.
  const open = auditSpan(tracer)

  const payload = (span: Tracer.Span, key: string, field: PayloadField, value: unknown, entry: Entry) => {
    if (reveal === undefined || value === undefined) return
    const shown = reveal(field, value, entry)
    if (typeof shown === "string") span.attribute(key, shown)
  }

  const close = (run: Run, at: bigint, exit: Exit.Exit<unknown, unknown> = ended) => {
    for (const open of run.calls.values()) for (const call of open) call.end(at, exit)
    run.calls.clear()
    run.turn?.end(at, ended)
    run.turn = undefined
    run.span.end(at, exit)
  }

  const runOf = (entry: Entry, key: string, at: bigint): Run => {
    const known = runs.get(key)
    if (known !== undefined) return known
    // A process that loses track of its runs (killed mid-run, a run that
    // never ends) must not grow: the oldest run followed is ended here.
    if (runs.size >= maxOpenRuns) {
      const [oldestKey, oldest] = runs.entries().next().value!
      runs.delete(oldestKey)
      close(oldest, oldest.last)
    }
    // A sub-agent's run is a child of the call that runs it, in the run above.
    const path = entry.agent === undefined ? [] : entry.agent.split(pathSeparator)
    const name = path.length === 0 ? "graded" : path[path.length - 1]!
    const above = path.length === 0 ? undefined : runs.get(runKey(entry.traceId, path.slice(0, -1)))
    const parent = above === undefined ? undefined : callOf(above, name) ?? above.turn ?? above.span
    const span = open(`invoke_agent ${name}`, parent, at, "internal")
    span.attribute("gen_ai.operation.name", "invoke_agent")
    span.attribute("gen_ai.agent.name", name)
    if (entry.agent !== undefined) span.attribute("graded.agent", entry.agent)
    if (entry.traceId !== undefined) span.attribute("graded.trace_id", entry.traceId)
    if (entry.actor !== undefined) span.attribute("graded.actor", entry.actor)
    span.attribute("graded.autonomous", entry.autonomous)
    const run: Run = { span, turn: undefined, offer: undefined, calls: new Map(), last: at }
    runs.set(key, run)
    return run
  }

  // Traces whose run ended lately, oldest first: a durable run's `run finished` follows its answer.
  const recentlyEnded = new Set<string>()
  const end = (key: string, run: Run, at: bigint, stopped: string, exit?: Exit.Exit<unknown, unknown>) => {
    run.span.attribute("graded.run.stopped", stopped)
    close(run, at, exit)
    runs.delete(key)
    recentlyEnded.delete(key)
    recentlyEnded.add(key)
    if (recentlyEnded.size > 1_000) recentlyEnded.delete(recentlyEnded.values().next().value!)
  }

  const callOf = (run: Run, tool: string): Tracer.Span | undefined => run.calls.get(tool)?.[0]

  const endCall = (run: Run, tool: string, at: bigint, exit: Exit.Exit<unknown, unknown>) => {
    const open = run.calls.get(tool)
    const call = open?.shift()
    if (open !== undefined && open.length === 0) run.calls.delete(tool)
    call?.end(at, exit)
  }

  const toolSpan = (parent: Tracer.Span | undefined, entry: Entry, tool: string, at: bigint): Tracer.Span => {
    const span = open(spanName("execute_tool ", tool), parent, at, "internal")
    span.attribute("gen_ai.operation.name", "execute_tool")
    span.attribute("gen_ai.tool.name", tool)
    if (entry.tags !== undefined) span.attribute("graded.tags", entry.tags)
    if (entry.sideEffects !== undefined) span.attribute("graded.side_effects", entry.sideEffects)
    return span
  }

  const offerOn = (span: Tracer.Span, offer: Entry & { readonly type: "offered" }) => {
    span.attribute("graded.tools.offered", offer.tools)
    span.attribute("graded.tools.left_out", offer.suppressed.map((left) => left.tool))
    span.attribute("graded.tools.left_out.gates", offer.suppressed.map((left) => left.gate ?? ""))
    span.attribute("graded.tools.left_out.reasons", offer.suppressed.map((left) => left.reason))
    if (offer.guidelines !== undefined) {
      span.attribute("graded.policy.guidelines", offer.guidelines.map((matched) => matched.id))
    }
  }

  // What an entry about a call says, on its span; the exit to end the call with
  // when the entry ends it (a refusal, a failure).
  const annotate = (span: Tracer.Span, entry: AboutCall): Exit.Exit<unknown, unknown> | undefined => {
    switch (entry.type) {
      case "refused": {
        span.attribute("graded.refused", true)
        span.attribute("graded.refusal.gate", entry.gate)
        if (reasonIsOwn(entry.gate)) span.attribute("graded.refusal.reason", entry.reason)
        else payload(span, "graded.refusal.reason", "reason", entry.reason, entry)
        span.attribute("error.type", "refused")
        return failedWith(`refused at the ${entry.gate} gate`)
      }
      case "failed": {
        span.attribute("error.type", "failed")
        payload(span, "graded.error", "error", entry.error, entry)
        return failedWith("the tool failed")
      }
      case "confirm-requested": {
        span.attribute("graded.grade", entry.grade)
        span.attribute("graded.confirm.requested", true)
        payload(span, "graded.confirm.payload", "payload", entry.payload, entry)
        return undefined
      }
      case "decided": {
        span.attribute("graded.decision", entry.decision)
        span.attribute("graded.decider", entry.by)
        span.attribute("graded.edited", entry.edited)
        if (entry.waitedMillis !== undefined) span.attribute("graded.wait_ms", entry.waitedMillis)
        payload(span, "graded.decision.reason", "reason", entry.reason, entry)
        return undefined
      }
      case "delivered": {
        span.attribute("graded.delivered", true)
        span.attribute("graded.delivered_by", entry.by)
        if (entry.key !== undefined) span.attribute("graded.idempotency_key", entry.key)
        return undefined
      }
      case "in-doubt": {
        span.attribute("graded.proposal", entry.proposal)
        span.attribute("graded.in_doubt", entry.action)
        span.attribute("graded.in_doubt.by", entry.by)
        return undefined
      }
    }
  }

  // A tracer that throws loses its span, never the call the entry records.
  return (entry) => {
    try {
      follow(entry)
    } catch {
      // dropped, as a sink drops what it cannot store
    }
  }

  function follow(entry: Entry): void {
    const at = nanosOf(entry.at)
    const key = keyOf(entry.traceId, entry.agent)
    if (!runs.has(key)) {
      // A durable run's last entry after its answer: the run's span has ended already.
      if (entry.type === "run" && entry.status !== "resumed" && recentlyEnded.has(key)) return
      // A decision or a delivery made outside a run's loop (a proposal decided
      // on a page, an in-doubt delivery settled by hand) is a span of its own,
      // in the run's trace id, and opens no run that nothing would end.
      if (outsideRuns.has(entry.type) && "tool" in entry) {
        const span = toolSpan(undefined, entry as AboutCall, entry.tool, at)
        if (entry.traceId !== undefined) span.attribute("graded.trace_id", entry.traceId)
        span.end(at, annotate(span, entry as AboutCall) ?? ended)
        return
      }
    }
    const run = runOf(entry, key, at)
    const before = run.last
    run.last = at
    switch (entry.type) {
      case "offered": {
        run.offer = entry
        if (run.turn !== undefined) offerOn(run.turn, entry)
        else offerOn(run.span, entry)
        // Each offer is an event of the run too: a model that reports no
        // usage has no turn spans, and every turn's set stays readable.
        run.span.event("graded.offered", at, {
          "graded.tools.offered": entry.tools,
          "graded.tools.left_out": entry.suppressed.map((left) => left.tool),
          "graded.tools.left_out.gates": entry.suppressed.map((left) => left.gate ?? ""),
          "graded.tools.left_out.reasons": entry.suppressed.map((left) => left.reason)
        })
        return
      }
      case "usage": {
        run.turn?.end(before, ended)
        const name = entry.model !== undefined ? spanName("chat ", entry.model) : "chat"
        const turn = open(name, run.span, before, "client")
        turn.attribute("gen_ai.operation.name", "chat")
        if (entry.provider !== undefined) turn.attribute("gen_ai.provider.name", entry.provider)
        if (entry.model !== undefined) turn.attribute("gen_ai.request.model", entry.model)
        turn.attribute("gen_ai.usage.input_tokens", entry.inputTokens)
        turn.attribute("gen_ai.usage.output_tokens", entry.outputTokens)
        if (entry.cost !== undefined) turn.attribute("graded.usage.cost", entry.cost)
        turn.attribute("graded.round", entry.round)
        if (run.offer !== undefined) offerOn(turn, run.offer)
        run.turn = turn
        return
      }
      case "called": {
        const call = toolSpan(run.turn ?? run.span, entry, entry.tool, at)
        if (entry.grade !== undefined) call.attribute("graded.grade", entry.grade)
        if (entry.openWorld === true) call.attribute("graded.open_world", true)
        payload(call, "gen_ai.tool.call.arguments", "input", entry.input, entry)
        const open = run.calls.get(entry.tool)
        if (open === undefined) run.calls.set(entry.tool, [call])
        else open.push(call)
        return
      }
      case "completed": {
        callOf(run, entry.tool)?.attribute("graded.result.chars", entry.chars)
        endCall(run, entry.tool, at, ended)
        return
      }
      case "proposed": {
        // A write or send the run proposed: its call goes on while a human
        // decides, and ends with the delivery or a decision not to.
        const call = toolSpan(run.turn ?? run.span, entry, entry.tool, at)
        call.attribute("graded.proposal", entry.proposal)
        proposals.add(call)
        const open = run.calls.get(entry.tool)
        if (open === undefined) run.calls.set(entry.tool, [call])
        else open.push(call)
        return
      }
      case "refused":
      case "failed":
      case "confirm-requested":
      case "decided":
      case "delivered":
      case "in-doubt": {
        const call = callOf(run, entry.tool)
        if (call === undefined) {
          const span = toolSpan(run.turn ?? run.span, entry, entry.tool, at)
          span.end(at, annotate(span, entry) ?? ended)
          return
        }
        const exit = annotate(call, entry) ?? (proposals.has(call) && settles(entry) ? ended : undefined)
        if (exit !== undefined) endCall(run, entry.tool, at, exit)
        return
      }
      case "step": {
        const span = open(`step ${entry.plan}#${entry.index}`, run.span, at, "internal")
        span.attribute("graded.plan", entry.plan)
        span.attribute("graded.plan.step", entry.step)
        span.attribute("graded.plan.step.kind", entry.kind)
        span.attribute("graded.plan.step.status", entry.status)
        span.end(at, entry.status === "failed" ? failedWith("the step failed") : ended)
        return
      }
      case "answered": {
        run.span.attribute("graded.rounds", entry.rounds)
        return end(key, run, at, "answer")
      }
      case "round-limit": {
        run.span.attribute("graded.rounds", entry.rounds)
        run.span.attribute("graded.round_limit.pending", entry.pending)
        return end(key, run, at, "round-limit")
      }
      case "run": {
        run.span.attribute("graded.run", entry.run)
        if (entry.proposals !== undefined) run.span.attribute("graded.run.proposals", entry.proposals)
        // A run that waits for decisions is followed until it resumes here
        // and ends; one resumed elsewhere is a run span there.
        if (entry.status === "waiting") {
          run.span.attribute("graded.run.waited", true)
          return
        }
        if (entry.status === "resumed") {
          run.span.attribute("graded.run.resumed", true)
          return
        }
        return end(key, run, at, entry.status)
      }
    }
  }
}
