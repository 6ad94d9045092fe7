// The four checks of killRandom.test.ts, over what it read back once every
// run had ended: the store (runs, proposals), its audit, the outside ledger
// (what went out) and the deciders' journal (what the humans approved). Each
// finding is one line naming the run, the model's call, the proposal and the
// keys involved, so that a failure says exactly what went wrong.
//
// - lost: every run ended; every call a human approved went out (a line under
//   its proposal's key) or waits in doubt for a human; a delivered proposal
//   has its line; the model of a finished run was told the outcome of each
//   of its writes and sends as it happened.
// - delivered twice: no key has more lines than the first delivery plus the
//   retries a human asked for; no model call (run, call id) went out under
//   more than one key.
// - delivered ≠ approved: each line belongs to a proposal (its key), and to
//   that proposal's run and call; a human approved that proposal, and the line
//   carries exactly the payload they approved (their edit, where they edited).
// - audit gaps: a proposal that was delivered or rejected has its `proposed`,
//   its `decided` (approved or rejected) and, when delivered, its `delivered`
//   entry under its run's trace; a finished run has its `run` finished entry
//   (anywhere: the entry names its run).
import type { Audit, Proposal, RunStore } from "@graded/core"
import { isDeepStrictEqual } from "node:util"
import type { Decision, Delivery } from "./ledgerDesk.js"

export interface Observed {
  readonly runIds: ReadonlyArray<string>
  readonly runs: ReadonlyArray<RunStore.Run>
  readonly proposals: ReadonlyArray<Proposal.Proposal>
  readonly deliveries: ReadonlyArray<Delivery>
  readonly decisions: ReadonlyArray<Decision>
  readonly audit: ReadonlyArray<Audit.Entry>
}

export interface Findings {
  readonly lost: ReadonlyArray<string>
  readonly twice: ReadonlyArray<string>
  readonly mismatched: ReadonlyArray<string>
  readonly gaps: ReadonlyArray<string>
}

/** The model's calls that go to a human, as the scripted model names them. */
export const confirmedCalls = ["c2-write", "c2-send"] as const

const open: ReadonlySet<Proposal.Status> = new Set(["pending", "approving", "delivering", "in-doubt"])

const groupBy = <A>(items: ReadonlyArray<A>, key: (a: A) => string | undefined) => {
  const groups = new Map<string, Array<A>>()
  for (const item of items) {
    const k = key(item)
    if (k === undefined) continue
    groups.set(k, [...(groups.get(k) ?? []), item])
  }
  return groups
}

const show = (value: unknown) => JSON.stringify(value)

export const check = (observed: Observed): Findings => {
  const { audit, decisions, deliveries, proposals, runIds, runs } = observed
  const lost: Array<string> = []
  const twice: Array<string> = []
  const mismatched: Array<string> = []
  const gaps: Array<string> = []

  const runById = new Map(runs.map((run) => [run.id, run]))
  const byKey = new Map(proposals.flatMap((p) => p.deliveryKey === undefined ? [] : [[p.deliveryKey, p] as const]))
  const linesByKey = groupBy(deliveries, (line) => line.idempotencyKey)
  const linesByCall = groupBy(deliveries, (line) => `${line.runId} ${line.callId}`)
  const proposalsByCall = groupBy(proposals, (p) => `${p.runId} ${p.callId}`)
  const decisionsOf = groupBy(decisions, (decision) => decision.proposal)
  const approvals = (p: Proposal.Proposal) =>
    (decisionsOf.get(p.id) ?? []).filter((d) => d.mode === "approve" || d.mode === "edit")
  const retries = (p: Proposal.Proposal) => (decisionsOf.get(p.id) ?? []).filter((d) => d.mode === "retry").length
  const name = (p: Proposal.Proposal) =>
    `${p.id} (${p.runId} ${p.callId} ${p.tool}, ${p.status}${
      p.deliveryKey === undefined ? "" : `, key ${p.deliveryKey}`
    })`

  // Lost.
  for (const id of runIds) {
    const run = runById.get(id)
    if (run === undefined) {
      lost.push(`${id} was never started`)
      continue
    }
    if (run.state.ended === undefined) {
      const waitsOn = (proposalsByCall.get(`${id} c2-write`) ?? []).concat(proposalsByCall.get(`${id} c2-send`) ?? [])
      lost.push(`${id} never ended: it is ${run.status}; its proposals: ${waitsOn.map(name).join(", ") || "none"}`)
      continue
    }
    if (run.state.ended.status !== "finished") continue
    for (const callId of confirmedCalls) {
      const told = run.state.calls.find((c) => c.id === callId)
      const mine = proposalsByCall.get(`${id} ${callId}`) ?? []
      const delivered = mine.filter((p) => p.status === "delivered")
      if (told === undefined) lost.push(`${id} ${callId}: the finished run's model never got a result for the call`)
      else if (told.ok && delivered.length === 0) {
        lost.push(`${id} ${callId}: the model was told it was delivered, but none of ${mine.map(name)} was`)
      } else if (!told.ok && delivered.length > 0) {
        lost.push(
          `${id} ${callId}: the model was told ${told.error.code} (${told.error.message}), but ${
            delivered.map(name).join(", ")
          } went out`
        )
      }
    }
  }
  for (const p of proposals) {
    if (p.status === "delivered" && (linesByKey.get(p.deliveryKey ?? "") ?? []).length === 0) {
      lost.push(`${name(p)}: delivered, but the ledger has no line under its key`)
    }
    const approved = approvals(p)
    if (approved.length > 0 && p.status !== "delivered" && !open.has(p.status)) {
      lost.push(`${name(p)}: approved by ${approved.map((d) => d.by).join(", ")}, but it ended ${p.status}`)
    }
  }

  // Delivered twice.
  for (const [key, lines] of linesByKey) {
    const p = byKey.get(key)
    const allowed = 1 + (p === undefined ? 0 : retries(p))
    if (lines.length > allowed) {
      twice.push(
        `key ${key} (${p === undefined ? "no proposal" : name(p)}) went out ${lines.length} times (pids ${
          lines.map((l) => l.pid).join(", ")
        }), with ${allowed - 1} retries by a human`
      )
    }
  }
  for (const [call, lines] of linesByCall) {
    const keys = [...new Set(lines.map((line) => line.idempotencyKey))]
    if (keys.length > 1) {
      twice.push(
        `${call} went out under ${keys.length} keys: ${
          keys.map((key) => {
            const p = byKey.get(key)
            return `${key} (${p === undefined ? "no proposal" : `${p.id}, ${p.status}, decided by ${p.decision?.by}`})`
          }).join("; ")
        }`
      )
    }
  }

  // Delivered ≠ approved.
  for (const line of deliveries) {
    const p = byKey.get(line.idempotencyKey)
    const where = `the line of ${line.runId} ${line.callId} under key ${line.idempotencyKey} (pid ${line.pid})`
    if (p === undefined) {
      mismatched.push(`${where} matches no proposal's delivery key`)
      continue
    }
    if (p.runId !== line.runId || p.callId !== line.callId || p.tool !== line.tool) {
      mismatched.push(`${where} belongs to ${name(p)}, another call`)
    }
    const approved = approvals(p)
    const payloads = approved.filter((d, i) => approved.findIndex((e) => isDeepStrictEqual(e.payload, d.payload)) === i)
    if (payloads.length === 0) {
      const others = (decisionsOf.get(p.id) ?? []).map((d) => `${d.mode} by ${d.by}`).join(", ")
      mismatched.push(`${where}: no human approved ${name(p)} (journal: ${others || "nothing"})`)
    } else if (payloads.length > 1) {
      mismatched.push(`${where}: the humans approved ${name(p)} with ${payloads.length} different payloads`)
    } else if (!isDeepStrictEqual(line.payload, payloads[0]!.payload)) {
      const d = payloads[0]!
      mismatched.push(
        `${where} for ${name(p)} carried ${show(line.payload)}, but ${d.by} approved ${show(d.payload)}${
          d.mode === "edit" ? " (an edit)" : ""
        }${retries(p) > 0 ? `; retried ${retries(p)} time(s)` : ""}`
      )
    }
  }

  // Audit gaps.
  const byTrace = groupBy(audit, (entry) => entry.traceId)
  const decidedProposals = groupBy(
    proposals.filter((p) => p.status === "delivered" || p.status === "rejected"),
    (p) => `${p.traceId} ${p.tool} ${p.status}`
  )
  for (const [, group] of decidedProposals) {
    const { status, tool, traceId } = group[0]!
    const trace = byTrace.get(traceId ?? "") ?? []
    const decision = status === "delivered" ? "approved" : "rejected"
    const found = trace.filter((e) => e.type === "decided" && e.tool === tool && e.decision === decision).length
    if (found < group.length) {
      gaps.push(
        `trace ${traceId}: ${group.length} ${tool} proposal(s) ${status} (${
          group.map((p) => p.id).join(", ")
        }), ${found} \`decided\` ${decision} entries`
      )
    }
    for (const p of group) {
      if (!trace.some((e) => e.type === "proposed" && e.proposal === p.id)) {
        gaps.push(`${name(p)}: no \`proposed\` entry under trace ${traceId}`)
      }
      if (status === "delivered" && !trace.some((e) => e.type === "delivered" && e.key === p.deliveryKey)) {
        gaps.push(`${name(p)}: no \`delivered\` entry with its key under trace ${traceId}`)
      }
    }
  }
  // A run's own entries name it (today they carry no trace): looked for by the run's id.
  const runEntries = groupBy(audit, (entry) => entry.type === "run" ? entry.run : undefined)
  for (const run of runs) {
    if (run.state.ended?.status !== "finished") continue
    if (!(runEntries.get(run.id) ?? []).some((e) => e.type === "run" && e.status === "finished")) {
      gaps.push(`${run.id}: finished, but no \`run\` finished entry in the audit`)
    }
  }
  return { lost, twice, mismatched, gaps }
}
