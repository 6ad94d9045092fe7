// The proposal store on a SqlClient. Every transition is one conditional
// UPDATE ... WHERE status = <the state it leaves> ... RETURNING: the database
// lets one of two racing processes through, the other's UPDATE matches no row,
// and only then is the row read, to say why (NotFound or AlreadyDecided). No
// transition reads a row and then writes it unconditionally.
// Who may import this: SqlProposalStore.ts only.
import * as SqlClient from "@effect/sql/SqlClient"
import type { Statement } from "@effect/sql/Statement"
import { Clock, Effect, Schema } from "effect"
import { Proposal, ProposalStore } from "@graded/core"
import { fromJson, toJson } from "./json.js"

const Row = Schema.Struct({
  // A number from SQLite, digits from PostgreSQL's BIGINT.
  seq: Schema.Union(Schema.Number, Schema.NumberFromString),
  tool: Schema.String,
  grade: Schema.Literal("write", "send"),
  title: Schema.String,
  input: Schema.NullOr(Schema.String),
  payload: Schema.NullOr(Schema.String),
  status: Schema.Literal("pending", "approving", "delivered", "rejected", "failed"),
  proposed_at: Schema.String,
  actor: Schema.NullOr(Schema.String),
  trace_id: Schema.NullOr(Schema.String),
  decided_by: Schema.NullOr(Schema.String),
  decided_at: Schema.NullOr(Schema.String),
  edited: Schema.NullOr(Schema.Number),
  reason: Schema.NullOr(Schema.String),
  lease_until: Schema.NullOr(Schema.String),
  output: Schema.NullOr(Schema.String)
})
type Row = typeof Row.Type

const decodeRow = Schema.decodeUnknown(Row)

// Ids are the row number behind a fixed prefix: short enough to type in a
// terminal, unique in the database whichever process added the row. Knowing
// one grants nothing: deciding needs the caller's HumanConfirm.
const idOf = (seq: number) => `p-${seq}`
const seqOf = (id: string): number | undefined => {
  const digits = /^p-([1-9][0-9]{0,14})$/.exec(id)?.[1]
  return digits === undefined ? undefined : Number(digits)
}

const toProposal = (row: Row): Proposal.Proposal => ({
  id: idOf(row.seq),
  tool: row.tool,
  grade: row.grade,
  title: row.title,
  input: fromJson(row.input),
  payload: fromJson(row.payload),
  status: row.status,
  proposedAt: row.proposed_at,
  actor: row.actor ?? undefined,
  traceId: row.trace_id ?? undefined,
  ...(row.decided_by !== null && row.decided_at !== null
    ? {
      decision: {
        by: row.decided_by,
        at: row.decided_at,
        edited: row.edited === 1,
        ...(row.reason !== null ? { reason: row.reason } : {})
      }
    }
    : {}),
  ...(row.lease_until !== null ? { leaseUntil: row.lease_until } : {}),
  ...(row.output !== null ? { output: fromJson(row.output) } : {})
})

const iso = (millis: number) => new Date(millis).toISOString()

// How many times a transition tries again when the row, read after its UPDATE
// matched nothing, is back in the state it leaves (an approval handed back to
// `pending` in between).
const retries = 3

export const make: Effect.Effect<ProposalStore.ProposalStore.Service, never, SqlClient.SqlClient> = Effect.gen(
  function*() {
    const sql = yield* SqlClient.SqlClient
    // The Service has no error channel for the database: a statement that
    // fails, or a row that does not decode, is a defect of that call.
    const rows = (statement: Statement<object>) =>
      statement.withoutTransform.pipe(
        Effect.flatMap(
          Effect.forEach((raw) => Effect.flatMap(decodeRow(raw), (row) => Effect.try(() => toProposal(row))))
        ),
        Effect.orDie
      )
    const first = (statement: Statement<object>) =>
      Effect.map(rows(statement), (found): Proposal.Proposal | undefined => found[0])
    const read = (seq: number) => first(sql`SELECT * FROM graded_proposals WHERE seq = ${seq}`)

    const transition = (
      id: string,
      from: Proposal.Status,
      update: (seq: number) => Statement<object>
    ): Effect.Effect<Proposal.Proposal, ProposalStore.NotFound | ProposalStore.AlreadyDecided> => {
      const seq = seqOf(id)
      if (seq === undefined) return Effect.fail(new ProposalStore.NotFound({ id }))
      const attempt = (left: number): Effect.Effect<
        Proposal.Proposal,
        ProposalStore.NotFound | ProposalStore.AlreadyDecided
      > =>
        Effect.flatMap(first(update(seq)), (updated) => {
          if (updated !== undefined) return Effect.succeed(updated)
          return Effect.flatMap(read(seq), (found) => {
            if (found === undefined) return Effect.fail(new ProposalStore.NotFound({ id }))
            if (found.status === from && left > 0) return attempt(left - 1)
            return Effect.fail(
              new ProposalStore.AlreadyDecided({ id, status: found.status, by: found.decision?.by })
            )
          })
        })
      return attempt(retries)
    }

    const decided = ({ at, by, edited, reason }: Proposal.Decided) =>
      sql`decided_by = ${by}, decided_at = ${at}, edited = ${edited ? 1 : 0}, reason = ${reason ?? null}`

    return {
      add: (record) => {
        if (!Proposal.isNew(record)) {
          return Effect.die(new Error("SqlProposalStore.add: this record was not made by Tool.proposal"))
        }
        const { grade, proposedAt, title, tool } = record
        const [input, payload] = [toJson(record.input), toJson(record.payload)]
        const [actor, traceId] = [record.actor ?? null, record.traceId ?? null]
        return Effect.flatMap(
          first(sql`INSERT INTO graded_proposals
            (tool, grade, title, input, payload, status, proposed_at, actor, trace_id)
            VALUES (${tool}, ${grade}, ${title}, ${input}, ${payload}, 'pending', ${proposedAt}, ${actor}, ${traceId})
            RETURNING *`),
          (added) => added === undefined ? Effect.dieMessage("INSERT ... RETURNING gave no row") : Effect.succeed(added)
        )
      },

      get: (id) => {
        const seq = seqOf(id)
        return Effect.flatMap(
          seq === undefined ? Effect.succeed(undefined) : read(seq),
          (found) => found === undefined ? Effect.fail(new ProposalStore.NotFound({ id })) : Effect.succeed(found)
        )
      },

      list: (filter) =>
        rows(
          filter?.status === undefined
            ? sql`SELECT * FROM graded_proposals ORDER BY seq`
            : sql`SELECT * FROM graded_proposals WHERE status = ${filter.status} ORDER BY seq`
        ),

      claim: (id, by, leaseUntil) =>
        Effect.flatMap(Clock.currentTimeMillis, (millis) => {
          const decision = decided({ by, at: iso(millis), edited: false })
          return transition(id, "pending", (seq) =>
            sql`UPDATE graded_proposals SET status = 'approving', ${decision}, lease_until = ${leaseUntil ?? null}
              WHERE seq = ${seq} AND status = 'pending'
              RETURNING *`)
        }),

      renew: (id, leaseUntil) =>
        transition(id, "approving", (seq) =>
          sql`UPDATE graded_proposals SET lease_until = ${leaseUntil}
            WHERE seq = ${seq} AND status = 'approving'
            RETURNING *`),

      // The reason names who held the lease and until when, which the UPDATE
      // overwrites (and RETURNING gives only the new row), so the candidates
      // are read first; each UPDATE then holds only if the row is still
      // exactly as read, so a renewal in between keeps its proposal, and of
      // two processes expiring at once, one settles each proposal.
      expire: (now) =>
        Effect.gen(function*() {
          const candidates = yield* rows(sql`SELECT * FROM graded_proposals
            WHERE status = 'approving' AND lease_until IS NOT NULL AND lease_until < ${now}
            ORDER BY seq`)
          const expired: Array<Proposal.Proposal> = []
          for (const proposal of candidates) {
            const decision = decided({
              by: "graded",
              at: now,
              edited: false,
              reason: ProposalStore.leaseEnded(proposal)
            })
            const settled = yield* first(sql`UPDATE graded_proposals
              SET status = 'failed', lease_until = NULL, ${decision}
              WHERE seq = ${seqOf(proposal.id)!} AND status = 'approving'
                AND lease_until = ${proposal.leaseUntil ?? null}
                AND decided_by = ${proposal.decision?.by ?? null} AND decided_at = ${proposal.decision?.at ?? null}
              RETURNING *`)
            if (settled !== undefined) expired.push(settled)
          }
          return expired
        }),

      reject: (id, decision) =>
        transition(id, "pending", (seq) =>
          sql`UPDATE graded_proposals SET status = 'rejected', ${decided(decision)}
            WHERE seq = ${seq} AND status = 'pending'
            RETURNING *`),

      settle: (id, outcome) =>
        transition(id, "approving", (seq) => {
          const set = outcome.status === "pending"
            ? sql`status = 'pending', decided_by = NULL, decided_at = NULL, edited = NULL, reason = NULL`
            : outcome.status === "delivered"
            ? sql`status = 'delivered', ${decided(outcome.decision)}, output = ${toJson(outcome.output)}`
            : sql`status = ${outcome.status}, ${decided(outcome.decision)}`
          return sql`UPDATE graded_proposals SET ${set}, lease_until = NULL
            WHERE seq = ${seq} AND status = 'approving'
            RETURNING *`
        })
    }
  }
)
