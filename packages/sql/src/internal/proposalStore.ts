// The proposal store on a SqlClient. Every transition is one conditional
// UPDATE ... WHERE status IN (<the states it leaves, as Proposal.transitions
// allows>) ... RETURNING: the database
// lets one of two racing processes through, the other's UPDATE matches no row,
// and only then is the row read, to say why (NotFound or AlreadyDecided). No
// transition reads a row and then writes it unconditionally.
// Who may import this: SqlProposalStore.ts only.
import { Clock, Effect, Schema } from "effect"
import * as SqlClient from "effect/sql/SqlClient"
import type { Statement } from "effect/sql/Statement"
import { Proposal, ProposalStore, Invocation } from "@graded/core"
import { RowNumber } from "./columns.js"
import { fromJson, toJson } from "./json.js"
import { currentTransaction, durably, transactional } from "./transaction.js"

const Row = Schema.Struct({
  seq: RowNumber,
  tool: Schema.String,
  grade: Schema.Literals(["write", "send"]),
  title: Schema.String,
  input: Schema.NullOr(Schema.String),
  payload: Schema.NullOr(Schema.String),
  status: Proposal.Status,
  proposed_at: Schema.String,
  actor: Schema.NullOr(Schema.String),
  trace_id: Schema.NullOr(Schema.String),
  decided_by: Schema.NullOr(Schema.String),
  decided_at: Schema.NullOr(Schema.String),
  edited: Schema.NullOr(Schema.Number),
  reason: Schema.NullOr(Schema.String),
  lease_until: Schema.NullOr(Schema.String),
  output: Schema.NullOr(Schema.String),
  run_id: Schema.NullOr(Schema.String),
  call_id: Schema.NullOr(Schema.String),
  expires_at: Schema.NullOr(Schema.String),
  delivery_key: Schema.NullOr(Schema.String),
  turn: Schema.NullOr(Schema.Number).pipe(Schema.withDecodingDefaultType(Effect.succeed(null))),
  approved: Schema.NullOr(Schema.String).pipe(Schema.withDecodingDefaultType(Effect.succeed(null))),
  path: Schema.NullOr(Schema.String).pipe(Schema.withDecodingDefaultType(Effect.succeed(null)))
})
type Row = typeof Row.Type

const decodeRow = Schema.decodeUnknownEffect(Row)

// Ids are the row number behind a fixed prefix: short enough to type in a
// terminal, unique in the database whichever process added the row. Knowing
// one grants nothing: deciding needs the caller's HumanConfirm.
const idOf = (seq: number) => `p-${seq}`
const seqOf = (id: string): number | undefined => {
  const digits = /^p-([1-9][0-9]{0,14})$/.exec(id)?.[1]
  return digits === undefined ? undefined : Number(digits)
}

// A sub-agent's path as kept: a JSON list of names. One that is not reads as
// a path no toolkit has (no tool is named ""), never as no path at all: its
// proposal must not be approved as the root's tool of the same name.
const pathOf = (text: string): ReadonlyArray<string> => {
  let path: unknown
  try {
    path = fromJson(text)
  } catch {
    return [""]
  }
  return Array.isArray(path) && path.every((step) => typeof step === "string") ? path : [""]
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
  ...(row.run_id !== null ? { runId: row.run_id } : {}),
  ...(row.call_id !== null ? { callId: row.call_id } : {}),
  ...(row.turn !== null ? { turn: row.turn } : {}),
  ...(row.approved !== null ? { approved: fromJson(row.approved) } : {}),
  ...(row.path !== null ? { path: pathOf(row.path) } : {}),
  ...(row.expires_at !== null ? { expiresAt: row.expires_at } : {}),
  ...(row.delivery_key !== null ? { deliveryKey: row.delivery_key } : {}),
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

    // Moves the row from one of `from` to `to` (staying where it is, without `to`) with one conditional UPDATE
    // that sets `set` where `also` holds too. It leaves only the states of `from` that `Proposal.transitions`
    // lets move to `to`: a move the table does not list matches no row, and is refused.
    const transition = (
      id: string,
      move: { readonly from: ReadonlyArray<Proposal.Status>; readonly to?: Proposal.Status },
      set: Statement<object>,
      also?: Statement<object>,
      // Why a row still in a state it leaves did not move (a pending one past its expiry).
      stuck?: (found: Proposal.Proposal) => Effect.Effect<never, ProposalStore.AlreadyDecided> | undefined
    ): Effect.Effect<Proposal.Proposal, ProposalStore.NotFound | ProposalStore.AlreadyDecided> => {
      const { from, to } = move
      const states = to === undefined ? from : from.filter((status) => Proposal.transitions[status].includes(to))
      const seq = seqOf(id)
      if (seq === undefined) return Effect.fail(new ProposalStore.NotFound({ id }))
      const update = sql`UPDATE graded_proposals SET ${to === undefined ? sql`` : sql`status = ${to}, `}${set}
        WHERE seq = ${seq} AND status IN ${sql.in(states.length > 0 ? states : ["(none)"])} ${also ?? sql``}
        RETURNING *`
      const attempt = (left: number): Effect.Effect<
        Proposal.Proposal,
        ProposalStore.NotFound | ProposalStore.AlreadyDecided
      > =>
        Effect.flatMap(first(update), (updated) => {
          if (updated !== undefined) return Effect.succeed(updated)
          return Effect.flatMap(read(seq), (found) => {
            if (found === undefined) return Effect.fail(new ProposalStore.NotFound({ id }))
            const why = stuck?.(found)
            if (why !== undefined) return why
            if (states.includes(found.status) && left > 0) return attempt(left - 1)
            return Effect.fail(
              new ProposalStore.AlreadyDecided({
                id,
                status: found.status,
                by: found.decision?.by,
                at: found.decision?.at
              })
            )
          })
        })
      return attempt(retries)
    }

    const expireOne = (proposal: Proposal.Proposal, now: string) =>
      first(sql`UPDATE graded_proposals
        SET status = 'expired', decided_by = 'graded', decided_at = ${now}, edited = 0,
          reason = ${ProposalStore.expiredReason(proposal)}
        WHERE seq = ${seqOf(proposal.id)!} AND status = 'pending'
        RETURNING *`)

    const decided = ({ at, by, edited, reason }: Proposal.Decided) =>
      sql`decided_by = ${by}, decided_at = ${at}, edited = ${edited ? 1 : 0}, reason = ${reason ?? null}`

    const lockTrace = (traceId: string) =>
      sql.onDialectOrElse({
        pg: () => Effect.orDie(sql`SELECT pg_advisory_xact_lock(hashtext(${traceId}))`),
        orElse: () => Effect.void
      })
    const withTransaction = transactional(sql)
    return ProposalStore.guardDecisions(Object.freeze<ProposalStore.ProposalStore.Service>({
      withTransaction,

      add: (record) => {
        if (!Proposal.isNew(record)) {
          return Effect.die(new Error("SqlProposalStore.add: this record was not made by Tool.proposal"))
        }
        const { grade, proposedAt, title, tool } = record
        const [input, payload] = [toJson(record.input), toJson(record.payload)]
        const [actor, traceId] = [record.actor ?? null, record.traceId ?? null]
        const [runId, callId, expiresAt] = [record.runId ?? null, record.callId ?? null, record.expiresAt ?? null]
        const turn = record.turn ?? null
        const path = record.path === undefined || record.path.length === 0 ? null : JSON.stringify(record.path)
        return Effect.flatMap(
          first(sql`INSERT INTO graded_proposals
            (tool, grade, title, input, payload, status, proposed_at, actor, trace_id, run_id, call_id, expires_at,
              turn, path)
            VALUES (${tool}, ${grade}, ${title}, ${input}, ${payload}, 'pending', ${proposedAt}, ${actor}, ${traceId},
              ${runId}, ${callId}, ${expiresAt}, ${turn}, ${path})
            RETURNING *`),
          (added) =>
            added === undefined ? Effect.die(new Error("INSERT ... RETURNING gave no row")) : Effect.succeed(added)
        )
      },

      get: (id) => {
        const seq = seqOf(id)
        return Effect.flatMap(
          seq === undefined ? Effect.succeed(undefined) : read(seq),
          (found) => found === undefined ? Effect.fail(new ProposalStore.NotFound({ id })) : Effect.succeed(found)
        )
      },

      list: (filter) => {
        const where = [
          ...(filter?.status !== undefined ? [sql`status = ${filter.status}`] : []),
          ...(filter?.runId !== undefined ? [sql`run_id = ${filter.runId}`] : []),
          ...(filter?.traceId !== undefined ? [sql`trace_id = ${filter.traceId}`] : [])
        ]
        const select = rows(
          sql`SELECT * FROM graded_proposals ${where.length === 0 ? sql`` : sql`WHERE ${sql.and(where)}`} ORDER BY seq`
        )
        const traceId = filter?.traceId
        if (traceId === undefined) return select
        // A trace's proposals listed inside a transaction (Proposal.tool
        // counts a trace's pending ones and adds one): on PostgreSQL, whose
        // transactions do not see each other's inserts, the trace is locked
        // until the transaction ends, so two such counts of one trace run one
        // after the other. A SQLite transaction holds the file's write lock
        // from its BEGIN.
        return Effect.flatMap(
          currentTransaction,
          (open) => open?.sql === sql ? Effect.andThen(lockTrace(traceId), select) : select
        )
      },

      claim: (id, by, leaseUntil) =>
        Effect.flatMap(Clock.currentTimeMillis, (millis) => {
          const at = iso(millis)
          return transition(
            id,
            { from: ["pending"], to: "approving" },
            sql`${decided({ by, at, edited: false })}, lease_until = ${leaseUntil ?? null}`,
            sql`AND (expires_at IS NULL OR expires_at > ${at})`,
            // Pending but past its expiry: it expires now, and says so.
            (found) =>
              found.status === "pending" && found.expiresAt !== undefined && found.expiresAt <= at
                ? Effect.andThen(
                  expireOne(found, at),
                  Effect.fail(new ProposalStore.AlreadyDecided({ id, status: "expired", by: "graded", at }))
                )
                : undefined
          )
        }),

      retry: (id, by, leaseUntil) =>
        Effect.flatMap(Clock.currentTimeMillis, (millis) =>
          transition(
            id,
            { from: ["in-doubt"], to: "approving" },
            sql`${decided({ by, at: iso(millis), edited: false })}, lease_until = ${leaseUntil}`
          )),

      renew: (id, leaseUntil) =>
        transition(id, { from: ["approving", "delivering"] }, sql`lease_until = ${leaseUntil}`),

      // The status moves first (the one conditional UPDATE decides), then the
      // delivery is recorded under its unique key; the tool runs only after
      // both. A crash between them leaves a delivery that never ran in
      // doubt, which errs on the safe side: a human looks.
      // One transaction: the status moves and the delivery is recorded, or
      // neither; on disk before the tool runs.
      beginDelivery: (id, key, leaseUntil, holder, approved) =>
        durably(sql)(Effect.gen(function*() {
          const what = approved === undefined ? sql`` :
            sql`, approved = ${toJson(approved.payload)}, edited = ${approved.edited ? 1 : 0}`
          const moved = yield* transition(
            id,
            { from: ["approving"], to: "delivering" },
            sql`delivery_key = COALESCE(delivery_key, ${key}), lease_until = ${leaseUntil}${what}`,
            sql`${holder === undefined ? sql`` : sql`AND decided_by = ${holder.by} AND decided_at = ${holder.at}`}
              AND NOT EXISTS (SELECT 1 FROM graded_deliveries
                WHERE graded_deliveries.key = COALESCE(graded_proposals.delivery_key, ${key})
                  AND graded_deliveries.proposal <> ${id})`
          )
          const startedAt = yield* Effect.map(Clock.currentTimeMillis, iso)
          const recorded = yield* sql`INSERT INTO graded_deliveries
              (key, proposal, tool, started_by, started_at, attempts)
              VALUES (${moved.deliveryKey ?? key}, ${moved.id}, ${moved.tool}, ${moved.decision?.by ?? "human"},
                ${startedAt}, 1)
              ON CONFLICT (key) DO UPDATE SET attempts = graded_deliveries.attempts + 1
              WHERE graded_deliveries.proposal = ${moved.id}
              RETURNING key`.pipe(Effect.orDie)
          if (recorded.length === 0) {
            return yield* Effect.die(new Error(`the delivery key of ${id} belongs to another proposal`))
          }
          return moved
        })),

      // The reasons name who held the lease and until when, which the UPDATE
      // overwrites (and RETURNING gives only the new row), so the candidates
      // are read first; each UPDATE then holds only if the row is still
      // exactly as read, so a renewal in between keeps its proposal, and of
      // two processes expiring at once, one moves each proposal.
      expire: (now) =>
        Effect.gen(function*() {
          const candidates = yield* rows(sql`SELECT * FROM graded_proposals
            WHERE (status IN ('approving', 'delivering') AND lease_until IS NOT NULL AND lease_until < ${now})
              OR (status = 'pending' AND expires_at IS NOT NULL AND expires_at <= ${now})
            ORDER BY seq`)
          const moved: Array<Proposal.Proposal> = []
          for (const proposal of candidates) {
            const seq = seqOf(proposal.id)!
            const unchanged = sql`seq = ${seq} AND status = ${proposal.status}
              AND lease_until IS NOT DISTINCT FROM ${proposal.leaseUntil ?? null}
              AND decided_at IS NOT DISTINCT FROM ${proposal.decision?.at ?? null}`
            // A retry (its key recorded already) that lapsed is in doubt as before.
            const to = proposal.status === "pending" ? "expired"
              : proposal.status === "approving" && proposal.deliveryKey === undefined ? "pending"
              : "in-doubt"
            if (!Proposal.transitions[proposal.status].includes(to)) continue
            const done = to === "expired"
              ? yield* expireOne(proposal, now)
              : to === "pending"
              ? yield* first(sql`UPDATE graded_proposals
                  SET status = 'pending', lease_until = NULL, decided_by = NULL, decided_at = NULL, edited = NULL,
                    reason = NULL
                  WHERE ${unchanged}
                  RETURNING *`)
              : yield* first(sql`UPDATE graded_proposals
                  SET status = 'in-doubt', lease_until = NULL, decided_at = ${now},
                    reason = ${ProposalStore.leaseEnded(proposal)}
                  WHERE ${unchanged}
                  RETURNING *`)
            if (done !== undefined) moved.push(done)
          }
          return moved
        }),

      reject: (id, decision) => transition(id, { from: ["pending"], to: "rejected" }, decided(decision)),

      settle: (id, outcome, only) =>
        transition(
          id,
          {
            from: ProposalStore.settleFrom[outcome.status].filter((status) =>
              only === undefined || only.includes(status)
            ),
            to: outcome.status
          },
          outcome.status === "pending"
            ? sql`decided_by = NULL, decided_at = NULL, edited = NULL, reason = NULL, lease_until = NULL`
            : outcome.status === "delivered"
            ? sql`${decided(outcome.decision)}, output = ${toJson(outcome.output)}, lease_until = NULL`
            : sql`${decided(outcome.decision)}, lease_until = NULL`
        )
    }))
  }
)

// Sealed where they are made (Invocation.seal): each is shared by every
// fiber, and a tool's code that finds one must not rewrite it in place.
Invocation.seal(make)
