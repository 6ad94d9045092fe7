// The tables, as effect/sql migrations: one schema for SQLite and
// PostgreSQL. The two dialects differ in two places only, both chosen here:
// how a table numbers its rows (the row number is the proposal's id and the
// audit's order), and how text compares (ISO timestamps are compared as
// text; PostgreSQL's default collation may ignore punctuation, "C" compares
// bytes, as SQLite does).
// Who may import this: SqlMigrations.ts only. A released migration is never
// edited; a change is a new one appended to `migrations`.
import { Effect } from "effect"
import * as SqlClient from "effect/sql/SqlClient"
import { Invocation } from "@graded/core"

const dialect = Effect.map(SqlClient.SqlClient, (sql) => ({
  sql,
  rowNumber: sql.onDialectOrElse({
    pg: () => sql.literal("BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY"),
    sqlite: () => sql.literal("INTEGER PRIMARY KEY AUTOINCREMENT"),
    orElse: () => undefined
  }),
  orderedText: sql.onDialectOrElse({
    pg: () => sql.literal(`TEXT COLLATE "C"`),
    orElse: () => sql.literal("TEXT")
  })
}))

const unsupported = "@graded/sql keeps its tables in SQLite or PostgreSQL only: this SqlClient is neither"

// JSON values (input, payload, output, entry) are text in both dialects, so a
// row reads back the same wherever it was written. NULL is `undefined`.
const proposals = Effect.gen(function*() {
  const { orderedText, rowNumber, sql } = yield* dialect
  if (rowNumber === undefined) return yield* Effect.die(new Error(unsupported))
  yield* sql`CREATE TABLE graded_proposals (
    seq ${rowNumber},
    tool TEXT NOT NULL,
    grade TEXT NOT NULL,
    title TEXT NOT NULL,
    input TEXT,
    payload TEXT,
    status TEXT NOT NULL,
    proposed_at TEXT NOT NULL,
    actor TEXT,
    trace_id TEXT,
    decided_by TEXT,
    decided_at TEXT,
    edited INTEGER,
    reason TEXT,
    lease_until ${orderedText},
    output TEXT
  )`
  yield* sql`CREATE INDEX graded_proposals_status ON graded_proposals (status, seq)`
  yield* sql`CREATE INDEX graded_proposals_trace ON graded_proposals (trace_id, status)`
})

const audit = Effect.gen(function*() {
  const { orderedText, rowNumber, sql } = yield* dialect
  if (rowNumber === undefined) return yield* Effect.die(new Error(unsupported))
  yield* sql`CREATE TABLE graded_audit (
    seq ${rowNumber},
    at ${orderedText} NOT NULL,
    type TEXT NOT NULL,
    tool TEXT,
    gate TEXT,
    trace_id TEXT,
    actor TEXT,
    autonomous INTEGER NOT NULL,
    entry TEXT NOT NULL
  )`
  yield* sql`CREATE INDEX graded_audit_trace ON graded_audit (trace_id, seq)`
  yield* sql`CREATE INDEX graded_audit_tool ON graded_audit (tool, at)`
  yield* sql`CREATE INDEX graded_audit_at ON graded_audit (at)`
})

// Supervised runs: a proposal may wait on behalf of a run's call and expire;
// each delivery is recorded under a unique key before it runs; a run's state
// is one JSON document, replaced only by the holder of its current version.
const runs = Effect.gen(function*() {
  const { orderedText, sql } = yield* dialect
  yield* sql`ALTER TABLE graded_proposals ADD COLUMN run_id TEXT`
  yield* sql`ALTER TABLE graded_proposals ADD COLUMN call_id TEXT`
  yield* sql`ALTER TABLE graded_proposals ADD COLUMN expires_at ${orderedText}`
  yield* sql`ALTER TABLE graded_proposals ADD COLUMN delivery_key TEXT`
  yield* sql`CREATE INDEX graded_proposals_run ON graded_proposals (run_id, seq)`
  yield* sql`CREATE TABLE graded_deliveries (
    key TEXT PRIMARY KEY,
    proposal TEXT NOT NULL UNIQUE,
    tool TEXT NOT NULL,
    started_by TEXT NOT NULL,
    started_at TEXT NOT NULL,
    attempts INTEGER NOT NULL
  )`
  yield* sql`CREATE TABLE graded_runs (
    id TEXT PRIMARY KEY,
    status TEXT NOT NULL,
    trace_id TEXT NOT NULL,
    actor TEXT,
    version INTEGER NOT NULL,
    lease_until ${orderedText},
    created_at TEXT NOT NULL,
    updated_at ${orderedText} NOT NULL,
    state TEXT NOT NULL
  )`
  yield* sql`CREATE INDEX graded_runs_status ON graded_runs (status, updated_at)`
})

// Who decided (the `by` of a decided or delivered entry) and what, as
// columns, so "everything one person confirmed" and "every refusal at a gate"
// read an index rather than every row. Rows written before this migration
// get their columns from their JSON; a row whose JSON does not parse keeps
// them NULL (reading it back names it, as for any other row).
const auditDecisions = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE graded_audit ADD COLUMN decided_by TEXT`
  yield* sql`ALTER TABLE graded_audit ADD COLUMN decision TEXT`
  yield* sql`CREATE INDEX graded_audit_gate ON graded_audit (gate, seq)`
  yield* sql`CREATE INDEX graded_audit_decided_by ON graded_audit (decided_by, seq)`
  const rows = yield* sql<{ readonly seq: unknown; readonly entry: unknown }>`SELECT seq, entry FROM graded_audit
    WHERE type IN ('decided', 'delivered')`.withoutTransform
  for (const row of rows) {
    const { decidedBy, decision } = decisionColumns(row.entry)
    if (decidedBy === null) continue
    yield* sql`UPDATE graded_audit SET decided_by = ${decidedBy}, decision = ${decision} WHERE seq = ${Number(row.seq)}`
  }
})

// The decider and decision of an entry's JSON text, or nulls.
const decisionColumns = (json: unknown): { decidedBy: string | null; decision: string | null } => {
  try {
    const entry: unknown = typeof json === "string" ? JSON.parse(json) : undefined
    if (typeof entry !== "object" || entry === null || !("by" in entry) || typeof entry.by !== "string") {
      return { decidedBy: null, decision: null }
    }
    return {
      decidedBy: entry.by,
      decision: "decision" in entry && typeof entry.decision === "string" ? entry.decision : null
    }
  } catch {
    return { decidedBy: null, decision: null }
  }
}

// The policy's fallback: quota counters (one row a key: a trace, or a tenant
// and a UTC day), the review queue of fallback runs, and the guideline drafts
// humans make from it.
const policy = Effect.gen(function*() {
  const { rowNumber, sql } = yield* dialect
  if (rowNumber === undefined) return yield* Effect.die(new Error(unsupported))
  yield* sql`CREATE TABLE graded_fallback_quota (
    key TEXT PRIMARY KEY,
    count INTEGER NOT NULL
  )`
  yield* sql`CREATE TABLE graded_review_cases (
    seq ${rowNumber},
    tool TEXT NOT NULL,
    input TEXT,
    context TEXT NOT NULL,
    trace_id TEXT NOT NULL,
    tenant TEXT NOT NULL,
    day TEXT NOT NULL,
    at TEXT NOT NULL,
    over_quota INTEGER NOT NULL,
    status TEXT NOT NULL,
    decided_by TEXT,
    decided_at TEXT,
    reason TEXT,
    draft TEXT
  )`
  yield* sql`CREATE INDEX graded_review_cases_status ON graded_review_cases (status, seq)`
  yield* sql`CREATE TABLE graded_guideline_drafts (
    seq ${rowNumber},
    case_id TEXT NOT NULL UNIQUE,
    tool TEXT NOT NULL,
    guideline TEXT NOT NULL,
    status TEXT NOT NULL,
    drafted_by TEXT NOT NULL,
    drafted_at TEXT NOT NULL,
    decided_by TEXT,
    decided_at TEXT,
    reason TEXT
  )`
  yield* sql`CREATE INDEX graded_guideline_drafts_status ON graded_guideline_drafts (status, seq)`
})

// A proposal's identity in a run: (run, turn, call id), unique, so that no
// model call has two proposals whichever process made them (NULLs, the
// proposals of no run, never collide); and what the human approved, kept with
// the delivery for a retry to deliver again.
const proposalIdentity = Effect.gen(function*() {
  const { sql } = yield* dialect
  yield* sql`ALTER TABLE graded_proposals ADD COLUMN turn INTEGER`
  yield* sql`ALTER TABLE graded_proposals ADD COLUMN approved TEXT`
  yield* sql`CREATE UNIQUE INDEX graded_proposals_call ON graded_proposals (run_id, turn, call_id)`
})

// The audit as an outbox for other sinks: how far each has been fed. On
// PostgreSQL each row also keeps the transaction that wrote it, since rows
// are numbered before they commit and commit in another order: a forwarder
// feeds them in (transaction, row) order, and only those of transactions
// that every open one started after, so none commits behind it. SQLite
// commits one writer at a time, in row order.
const auditOutbox = Effect.gen(function*() {
  const { sql } = yield* dialect
  yield* sql.onDialectOrElse({
    pg: () =>
      Effect.andThen(
        sql`ALTER TABLE graded_audit ADD COLUMN xact xid8 NOT NULL DEFAULT pg_current_xact_id()`,
        sql`CREATE INDEX graded_audit_xact ON graded_audit (xact, seq)`
      ),
    orElse: () => Effect.void
  })
  yield* sql`CREATE TABLE graded_audit_forwarded (
    sink TEXT PRIMARY KEY,
    xact TEXT NOT NULL,
    seq BIGINT NOT NULL
  )`
})

// The path to the sub-agent that made a proposal (a JSON list of names; NULL
// for the root's own, as every row before it is).
const proposalPath = Effect.gen(function*() {
  const { sql } = yield* dialect
  yield* sql`ALTER TABLE graded_proposals ADD COLUMN path TEXT`
})

export const migrations: Record<string, Effect.Effect<void, unknown, SqlClient.SqlClient>> = {
  "1_proposals": proposals,
  "2_audit": audit,
  "3_runs": runs,
  "4_audit_decisions": auditDecisions,
  "5_policy": policy,
  "6_proposal_identity": proposalIdentity,
  "7_audit_outbox": auditOutbox,
  "8_proposal_path": proposalPath
}

// Sealed where they are made (Invocation.seal): each is shared by every
// fiber, and a tool's code that finds one must not rewrite it in place.
Invocation.seal(dialect)
Invocation.seal(proposals)
Invocation.seal(audit)
Invocation.seal(runs)
Invocation.seal(auditDecisions)
Invocation.seal(policy)
Invocation.seal(proposalIdentity)
Invocation.seal(auditOutbox)
Invocation.seal(proposalPath)
