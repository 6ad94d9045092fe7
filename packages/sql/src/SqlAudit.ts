/**
 * graded's audit in a database: each entry is a row of `graded_audit`, with
 * the columns a query selects on (type, tool, refusal gate, time, trace id,
 * actor, autonomous) and the whole entry as JSON, which is what reads back,
 * decoded with `Audit.Entry`. Entries read back in the order they were
 * written; `trace` gives one run's.
 *
 * Three questions have a query of their own, each on an index: `decisions`
 * (what a human was asked and decided on one run, what was delivered and
 * refused), `refusals` (every refusal, or those of one gate) and
 * `confirmedBy` (every approval one person gave, and the deliveries it
 * allowed). They read graded's database where `Sql.sqlite`, `Sql.postgres`
 * or `Sql.layer` is provided, or where `open` is: it reads a database without
 * migrating it, for a tool that only looks, such as `graded audit --sqlite`.
 *
 * Like every sink, it never fails the call it records: an entry the database
 * refuses is dropped with a warning in the log, and the tool call goes on.
 *
 * @since 0.1.0
 */
import { Context, Duration, Effect, Layer, type Redacted, Schedule, Schema } from "effect"
import type * as SqlClient from "effect/sql/SqlClient"
import type { SqlError } from "effect/sql/SqlError"
import { Audit, Invocation, ToolError } from "@graded/core"
import * as internal from "./internal/audit.js"
import * as database from "./internal/database.js"
import * as outbox from "./internal/forward.js"

/**
 * A row of `graded_audit` whose JSON does not decode as an `Audit.Entry`: it
 * was not written by this sink, or was changed since.
 *
 * @since 0.1.0
 * @category errors
 */
export class CorruptRow extends Schema.TaggedError<CorruptRow>()("@graded/sql/SqlAudit/CorruptRow", {
  seq: Schema.Number,
  issue: Schema.String
}) {
  override get message(): string {
    return `graded_audit, row ${this.seq}: not an audit entry: ${this.issue}`
  }
}

const corrupt = (seq: number, issue: string) => new CorruptRow({ seq, issue })

/**
 * Which entries `entries` reads: every field given must match (`since` and
 * `until` bound the time, ISO text, `until` excluded); `limit` keeps the first
 * ones in the order they were written.
 *
 * @since 0.1.0
 * @category models
 */
export interface Filter {
  readonly traceId?: string | undefined
  readonly tool?: string | undefined
  readonly type?: Audit.Entry["type"] | undefined
  /** The gate of a `refused` entry. */
  readonly gate?: string | undefined
  /** The invocation's actor (who the call ran for), not who decided. */
  readonly actor?: string | undefined
  readonly since?: string | undefined
  readonly until?: string | undefined
  readonly limit?: number | undefined
}

/**
 * Makes the sink on the `SqlClient` in context, whose database already holds
 * the tables (`SqlMigrations.run`).
 *
 * @since 0.1.0
 * @category constructors
 */
export const make: Effect.Effect<Audit.Audit.Service, never, SqlClient.SqlClient> = internal.make

/**
 * The sink as a layer on the `SqlClient` in context; it does not migrate
 * (`Sql.layer` does both).
 *
 * @example
 * import { PgClient } from "@effect/sql-pg"
 * import { Layer, Redacted } from "effect"
 * import { SqlAudit } from "@graded/sql"
 * // A client of your own, on a database SqlMigrations.run has migrated:
 * const audit = SqlAudit.layer.pipe(
 *   Layer.provide(PgClient.layer({ url: Redacted.make("postgres://graded@db.internal/graded") }))
 * )
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<Audit.Audit, never, SqlClient.SqlClient> = Invocation.freshLayer(
  Audit.Audit,
  () => internal.make
)

/**
 * Reads entries back, in the order they were written, each decoded with
 * `Audit.Entry`; a row that does not decode fails the read with `CorruptRow`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const entries = (
  filter?: Filter
): Effect.Effect<ReadonlyArray<Audit.Entry>, SqlError | CorruptRow, database.GradedDatabase> =>
  database.use(internal.read(filter, corrupt))

/**
 * One run's entries (one trace id), in the order they were written.
 *
 * @example
 * import { Effect } from "effect"
 * import { Audit } from "@graded/core"
 * import { Sql, SqlAudit } from "@graded/sql"
 * const program = SqlAudit.trace("t-42").pipe(
 *   Effect.map((entries) => entries.map(Audit.describe)),
 *   Effect.provide(Sql.sqlite({ filename: "graded.db" }))
 * )
 *
 * @since 0.1.0
 * @category constructors
 */
export const trace = (
  traceId: string
): Effect.Effect<ReadonlyArray<Audit.Entry>, SqlError | CorruptRow, database.GradedDatabase> => entries({ traceId })

/**
 * Every decision on one run (one trace id), in the order it happened: what a
 * human was asked to confirm (`confirm-requested`), what they decided
 * (`decided`: approved, edited, rejected, or an invalid edit), what went out
 * (`delivered`) and what a gate refused (`refused`).
 *
 * @example
 * import { Effect } from "effect"
 * import { Audit } from "@graded/core"
 * import { Sql, SqlAudit } from "@graded/sql"
 * const story = SqlAudit.decisions("t-42").pipe(
 *   Effect.map((entries) => entries.map(Audit.describe)),
 *   Effect.provide(Sql.sqlite({ filename: "graded.db" }))
 * )
 *
 * @since 0.1.0
 * @category constructors
 */
export const decisions = (
  traceId: string
): Effect.Effect<ReadonlyArray<Audit.Entry>, SqlError | CorruptRow, database.GradedDatabase> =>
  database.use(internal.decisions(traceId, corrupt))

/**
 * Which refusals `refusals` reads: those of one gate (`"autonomous"`,
 * `"offered"`, `"lease"`, ...), or all of them when `gate` is left out.
 *
 * @since 0.1.0
 * @category models
 */
export interface RefusalFilter {
  readonly gate?: string | undefined
}

/**
 * Every refusal, or every refusal at one gate, in the order they happened.
 *
 * @example
 * import { Effect } from "effect"
 * import { Sql, SqlAudit } from "@graded/sql"
 * // What models tried that only a human may do:
 * const attempts = SqlAudit.refusals({ gate: "autonomous" }).pipe(
 *   Effect.map((entries) => entries.length),
 *   Effect.provide(Sql.sqlite({ filename: "graded.db" }))
 * )
 *
 * @since 0.1.0
 * @category constructors
 */
export const refusals = (
  filter: RefusalFilter = {}
): Effect.Effect<ReadonlyArray<Audit.Entry>, SqlError | CorruptRow, database.GradedDatabase> =>
  database.use(internal.refusals(filter.gate, corrupt))

/**
 * Everything one person confirmed: each approval they gave (edited or not,
 * `decided` with `decision: "approved"` and `by` them) and each delivery it
 * allowed (`delivered`, confirmed `by` them), in the order they happened.
 * `by` is the decider as the `HumanConfirm` UI named them (`agent:alice`,
 * `cli:alice`), not the actor the call ran for.
 *
 * @example
 * import { Effect } from "effect"
 * import { Sql, SqlAudit } from "@graded/sql"
 * const alice = SqlAudit.confirmedBy("agent:alice").pipe(Effect.provide(Sql.sqlite({ filename: "graded.db" })))
 *
 * @since 0.1.0
 * @category constructors
 */
export const confirmedBy = (
  by: string
): Effect.Effect<ReadonlyArray<Audit.Entry>, SqlError | CorruptRow, database.GradedDatabase> =>
  database.use(internal.confirmedBy(by, corrupt))

/**
 * A database to read the audit from: a SQLite file (`{ sqlite: "graded.db" }`)
 * or a PostgreSQL URL (`{ postgres: "postgres://user@host/db" }`).
 *
 * @since 0.1.0
 * @category models
 */
export type Source =
  | { readonly sqlite: string }
  | { readonly postgres: string | Redacted.Redacted }

/**
 * The audit cannot be read from a database: the file is missing or is not
 * SQLite, the server does not answer, the URL does not parse, or the database
 * holds no `graded_audit` table. `database` is the file or the URL, without
 * its password.
 *
 * @since 0.1.0
 * @category errors
 */
export class Unreadable extends Schema.TaggedError<Unreadable>()("@graded/sql/SqlAudit/Unreadable", {
  database: Schema.String,
  reason: Schema.String
}) {
  override get message(): string {
    return `Cannot read the audit in ${this.database}: ${this.reason}`
  }
}

/**
 * A database graded wrote its audit to, opened only to read it (`entries`,
 * `decisions`, ...): unlike `Sql.sqlite` it makes no file and migrates
 * nothing, and it provides no `SqlClient`. It fails with `Unreadable` when
 * the file is missing, the server does not answer, or the database holds no
 * `graded_audit` table (or one an older @graded/sql made and nothing has
 * migrated since).
 *
 * @example
 * import { Effect } from "effect"
 * import { SqlAudit } from "@graded/sql"
 * const refused = SqlAudit.refusals().pipe(Effect.provide(SqlAudit.open({ sqlite: "graded.db" })))
 *
 * @since 0.1.0
 * @category layers
 */
export const open = (source: Source): Layer.Layer<database.GradedDatabase, Unreadable> =>
  Invocation.seal(
    database.layer.pipe(
      Layer.provide(internal.open(source, (database, reason) => new Unreadable({ database, reason })))
    )
  )

/**
 * A sink that entries were forwarded to did not store them all (its
 * `writeBatch` failed, or its `write` died): nothing was marked forwarded,
 * and the next pass forwards them again.
 *
 * @since 0.3.0
 * @category errors
 */
export class ForwardFailed extends Schema.TaggedError<ForwardFailed>()("@graded/sql/SqlAudit/ForwardFailed", {
  sink: Schema.String,
  issue: Schema.String
}) {
  override get message(): string {
    return `The audit sink ${this.sink} did not store the entries forwarded to it; they are forwarded again: ${this.issue}`
  }
}

/**
 * What `forward` and `forwarding` take: the name the sink is known by in
 * `graded_audit_forwarded` (how far it has been fed), the sink, and how many
 * entries one pass forwards at most (500 by default).
 *
 * @since 0.3.0
 * @category models
 */
export interface ForwardOptions {
  readonly sink: string
  readonly limit?: number | undefined
}

const defaultForwardLimit = 500

const sinkName = (options: ForwardOptions) =>
  options.sink.length === 0 || options.sink.length > 200
    ? Effect.die(new Error(`SqlAudit.forward: a sink's name is 1 to 200 characters, got ${options.sink.length}`))
    : Effect.succeed(options.sink)

// Marking entries forwarded is the app's: a tool's own code, or a model's
// run, that reaches the database through the layer the app provided could
// mark what no sink stored, and that sink would never get it.
const mayForward = Effect.flatMap(
  Invocation.decisionRefusal,
  (refusal) =>
    refusal === undefined ? Effect.void : Effect.die(
      new ToolError.Refused({
        tool: "SqlAudit.forward",
        gate: refusal === ToolError.autonomousReason ? "autonomous" : "grade",
        reason: "only the app's own code forwards the audit, not a tool's own code or a model's run"
      })
    )
)

const issueOf = (cause: unknown): string =>
  (cause instanceof Error ? cause.message : String(cause)).split("\n")[0]!.slice(0, 500)

/**
 * One pass of the outbox: forwards to `to` the entries this database
 * committed since the last pass for `options.sink`, in the order they
 * committed (on PostgreSQL too, where rows are numbered before they commit),
 * each with `id`, the number of its row, and says how many. At least once: a
 * process stopped after the sink stored them and before the database marked
 * them forwarded sends them again, so a reader drops repeats by `id`. A sink
 * with `writeBatch` (`Audit.jsonl`) gets each pass in one call and fails it
 * unless all were stored; a sink with `write` only drops what it drops.
 * Entries written inside a step's transaction are forwarded only once it
 * commits: a step rolled back leaves nothing in the other sink. A tool's own
 * code, or a model's run, that calls it is refused (`ToolError.Refused`, a
 * defect): it would mark forwarded what the sink never got.
 *
 * @example
 * import { NodeFileSystem } from "@effect/platform-node"
 * import { Context, Effect, Layer } from "effect"
 * import { Audit } from "@graded/core"
 * import { Sql, SqlAudit } from "@graded/sql"
 * const once = Effect.gen(function*() {
 *   const file = yield* Layer.build(Audit.jsonl("audit.jsonl").pipe(Layer.provide(NodeFileSystem.layer)))
 *   return yield* SqlAudit.forward({ sink: "audit.jsonl" }, Context.get(file, Audit.Audit))
 * }).pipe(Effect.scoped, Effect.provide(Sql.sqlite({ filename: "graded.db" })))
 *
 * @since 0.3.0
 * @category constructors
 */
export const forward = (
  options: ForwardOptions,
  to: Audit.Audit.Service
): Effect.Effect<number, SqlError | CorruptRow | ForwardFailed, database.GradedDatabase> =>
  Effect.flatMap(Effect.andThen(mayForward, sinkName(options)), (sink) =>
    database.use(outbox.forward(
      sink,
      to,
      options.limit ?? defaultForwardLimit,
      corrupt,
      (cause) => new ForwardFailed({ sink, issue: issueOf(cause) })
    )).pipe(
      // A sink whose write died stored nothing this pass can vouch for.
      Effect.catchDefect((defect) => Effect.fail(new ForwardFailed({ sink, issue: issueOf(defect) })))
    ))

/**
 * The outbox as a layer: while it is in scope, the entries this database
 * commits are forwarded to the sink `to` builds, every `every` (1 second by
 * default) and once more when the scope closes, so a process that stops
 * cleanly leaves nothing behind. A pass that fails (the sink, the database)
 * is logged and tried again on the next; nothing is lost, since only what the
 * sink stored is marked forwarded. Use it where the app's audit is
 * `SqlAudit.layer` (the one `Sql.sqlite` and `Sql.postgres` provide) and
 * another sink must see the entries too: each reaches it once the step that
 * wrote it committed, never one a rollback undid.
 *
 * @example
 * import { NodeFileSystem } from "@effect/platform-node"
 * import { Layer } from "effect"
 * import { Audit } from "@graded/core"
 * import { Sql, SqlAudit } from "@graded/sql"
 * const app = Layer.provideMerge(
 *   SqlAudit.forwarding({ sink: "audit.jsonl", to: Audit.jsonl("audit.jsonl").pipe(Layer.provide(NodeFileSystem.layer)) }),
 *   Sql.sqlite({ filename: "graded.db" })
 * )
 *
 * @since 0.3.0
 * @category layers
 */
export const forwarding = <E, R>(
  options: ForwardOptions & {
    readonly to: Layer.Layer<Audit.Audit, E, R>
    readonly every?: Duration.Input | undefined
  }
): Layer.Layer<never, E, R | database.GradedDatabase> =>
  Invocation.freshLayer(() =>
    Effect.gen(function*() {
      const to = Context.get(yield* Layer.build(options.to), Audit.Audit)
      const limit = options.limit ?? defaultForwardLimit
      // Everything there is, a full pass after another. Its schedule named: with
      // none, Effect repeats with a schedule of its own module, one object every
      // repeat in the process runs and sealing cannot reach.
      const drain = Effect.repeat(forward(options, to), {
        schedule: Schedule.forever,
        while: (forwarded) => forwarded === limit
      }).pipe(
        Effect.catchCause((cause) =>
          Effect.logWarning("@graded/sql: audit entries were not forwarded; the next pass tries again", cause).pipe(
            Effect.annotateLogs({ sink: options.sink })
          )
        )
      )
      yield* Effect.addFinalizer(() => drain)
      // A pass is not cut short when the scope closes (the wait between passes
      // is): one stopped after the sink stored its entries, before they were
      // marked, would have the last pass send them again.
      yield* Effect.forkScoped(
        Effect.repeat(Effect.uninterruptible(drain), Schedule.spaced(options.every ?? Duration.seconds(1)))
      )
      return Context.empty()
    })
  )

// Sealed where they are made (Invocation.seal): each is shared by every
// fiber, and a tool's code that finds one must not rewrite it in place.
Invocation.seal(make)
Invocation.seal(layer)
Invocation.seal(mayForward)
