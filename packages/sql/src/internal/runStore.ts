// The run store on a SqlClient. A run is one row: the columns a listing or a
// claim selects on, and the whole state as JSON. Every change is one
// conditional UPDATE ... RETURNING on the version (or, for a claim, on the
// status and lease), so of two processes only one moves a run; the other's
// UPDATE matches nothing and the row is read to say why.
// A state is decoded once per text: a claim that returns the state a get has
// just read reuses its decoding, and a save returns the state it was given
// (as RunStore.memory does) rather than decoding what it wrote. A run's state
// grows with its steps; decoding it is what a resume would otherwise repeat.
// The text is decoded and encoded by Effect's codec (`Schema.fromJsonString`).
// Who may import this: SqlRunStore.ts only.
import { Clock, Effect, Schema } from "effect"
import * as SqlClient from "effect/sql/SqlClient"
import type { Statement } from "effect/sql/Statement"
import { RunStore, Invocation } from "@graded/core"
import { RowNumber } from "./columns.js"
import { transactional } from "./transaction.js"

const Columns = {
  id: Schema.String,
  status: RunStore.Status,
  version: RowNumber,
  trace_id: Schema.String,
  actor: Schema.NullOr(Schema.String),
  lease_until: Schema.NullOr(Schema.String),
  created_at: Schema.String,
  updated_at: Schema.String
}
const Meta = Schema.Struct(Columns)
const Row = Schema.Struct({ ...Columns, state: Schema.String })

const decodeRow = Schema.decodeUnknownEffect(Row)
const decodeMeta = Schema.decodeUnknownEffect(Meta)
const stateCodec = Schema.fromJsonString(RunStore.State)
const decodeState = Schema.decodeUnknownEffect(stateCodec)
const encodeState = Schema.encodeSync(stateCodec)

// Every column but the state: what a save needs back.
const meta = "id, status, version, trace_id, actor, lease_until, created_at, updated_at"
// How many decoded states a store keeps, the most recently read ones.
const remembered = 64

const toRun = (row: typeof Meta.Type, state: RunStore.State): RunStore.Run => ({
  id: row.id,
  status: row.status,
  version: row.version,
  traceId: row.trace_id,
  ...(row.actor !== null ? { actor: row.actor } : {}),
  createdAt: row.created_at,
  updatedAt: row.updated_at,
  ...(row.lease_until !== null ? { leaseUntil: row.lease_until } : {}),
  state
})

export const make: Effect.Effect<RunStore.RunStore.Service, never, SqlClient.SqlClient> = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const decoded = new Map<string, { readonly text: string; readonly state: RunStore.State }>()
  const stateOf = (id: string, text: string) => {
    const known = decoded.get(id)
    if (known !== undefined && known.text === text) return Effect.succeed(known.state)
    return Effect.tap(decodeState(text), (state) =>
      Effect.sync(() => {
        decoded.delete(id)
        decoded.set(id, { text, state })
        if (decoded.size > remembered) decoded.delete(decoded.keys().next().value!)
      }))
  }
  // A statement the database refuses, or a row that does not decode, is a
  // defect of that call: the service's errors are the store's own answers.
  const rows = (statement: Statement<object>) =>
    statement.withoutTransform.pipe(
      Effect.flatMap(Effect.forEach((raw) =>
        Effect.flatMap(decodeRow(raw), (row) => Effect.map(stateOf(row.id, row.state), (state) => toRun(row, state)))
      )),
      Effect.orDie
    )
  const first = (statement: Statement<object>) => Effect.map(rows(statement), (found) => found[0])
  const read = (id: string) => first(sql`SELECT * FROM graded_runs WHERE id = ${id}`)
  const now = Effect.map(Clock.currentTimeMillis, (millis) => new Date(millis).toISOString())
  const why = (id: string): Effect.Effect<never, RunStore.RunNotFound | RunStore.RunBusy> =>
    Effect.flatMap(
      read(id),
      (found): Effect.Effect<never, RunStore.RunNotFound | RunStore.RunBusy> =>
        found === undefined
          ? Effect.fail(new RunStore.RunNotFound({ id }))
          : Effect.fail(new RunStore.RunBusy({ id, status: found.status, leaseUntil: found.leaseUntil }))
    )

  return Object.freeze<RunStore.RunStore.Service>({
    withTransaction: transactional(sql),
    create: (run) =>
      Effect.gen(function*() {
        // The id is the key: of two creates, the second inserts nothing.
        const created = yield* first(sql`INSERT INTO graded_runs
          (id, status, trace_id, actor, version, lease_until, created_at, updated_at, state)
          VALUES (${run.id}, ${run.status}, ${run.traceId}, ${run.actor ?? null}, 1, ${run.leaseUntil ?? null},
            ${run.createdAt}, ${run.updatedAt}, ${encodeState(run.state)})
          ON CONFLICT (id) DO NOTHING
          RETURNING *`)
        return created ?? (yield* new RunStore.RunExists({ id: run.id }))
      }),

    get: (id) =>
      Effect.flatMap(
        read(id),
        (found) => found === undefined ? Effect.fail(new RunStore.RunNotFound({ id })) : Effect.succeed(found)
      ),

    list: (filter) =>
      rows(
        filter?.status === undefined
          ? sql`SELECT * FROM graded_runs ORDER BY created_at, id`
          : sql`SELECT * FROM graded_runs WHERE status = ${filter.status} ORDER BY created_at, id`
      ),

    // The row is read (and decoded) first: a run whose state does not decode
    // is a defect and is left as it is, not taken. The UPDATE then holds only
    // at the version read, so of two claims one moves the run.
    claim: (id, leaseUntil, at) =>
      Effect.gen(function*() {
        const found = yield* read(id)
        if (found === undefined) return yield* new RunStore.RunNotFound({ id })
        const updatedAt = yield* now
        const claimed = yield* first(sql`UPDATE graded_runs
          SET status = 'running', lease_until = ${leaseUntil}, version = version + 1, updated_at = ${updatedAt}
          WHERE id = ${id} AND version = ${found.version}
            AND (status = 'waiting' OR (status = 'running' AND lease_until IS NOT NULL AND lease_until < ${at}))
          RETURNING *`)
        return claimed ?? (yield* why(id))
      }),

    save: (run) =>
      Effect.flatMap(now, (updatedAt) =>
        Effect.flatMap(
          sql`UPDATE graded_runs
            SET status = ${run.status}, lease_until = ${run.leaseUntil ?? null}, version = version + 1,
              updated_at = ${updatedAt}, state = ${encodeState(run.state)}
            WHERE id = ${run.id} AND version = ${run.version}
            RETURNING ${sql.literal(meta)}`.withoutTransform.pipe(
            Effect.flatMap(Effect.forEach((raw) => decodeMeta(raw))),
            Effect.orDie
          ),
          ([saved]): Effect.Effect<RunStore.Run, RunStore.RunNotFound | RunStore.RunBusy> =>
            saved !== undefined ? Effect.succeed(toRun(saved, run.state)) : why(run.id)
        ))
  })
})

// Sealed where they are made (Invocation.seal): each is shared by every
// fiber, and a tool's code that finds one must not rewrite it in place.
Invocation.seal(make)
