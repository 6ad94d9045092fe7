/**
 * Where supervised runs keep their state between a model's write or send and
 * the human's decision. A run is data: its messages, the calls so far, the
 * turn that waits, its limits and trace. `Runs.resume` reads it back in any
 * process and goes on from there; nothing is replayed.
 *
 * The store makes each run worked on by one process at a time: `claim` takes
 * a waiting run (or one whose holder's lease has passed), and `save` replaces
 * the state only for the holder of the version it read.
 *
 * @since 0.1.0
 */
import { Clock, Context, Effect, Layer, Schema } from "effect"
import { sealed } from "./internal/seal.js"
import { freshService } from "./internal/freshLayer.js"
import { unknownKey } from "./internal/absentKey.js"

/**
 * A call of the run as stored: its input and output encoded with the tool's
 * schemas, or why it did not run.
 *
 * @since 0.1.0
 * @category schemas
 */
export const StoredCall = Schema.Union([
  Schema.Struct({
    ok: Schema.Literal(true),
    id: Schema.String,
    tool: Schema.String,
    // Undefined when absent: an output nobody knows (a delivery a human marked done) is stored without one.
    input: unknownKey,
    output: unknownKey
  }),
  Schema.Struct({
    ok: Schema.Literal(false),
    id: Schema.String,
    tool: Schema.String,
    error: Schema.Struct({ code: Schema.String, message: Schema.String })
  })
])

// Recorded facts: names to strings, numbers or booleans.
const Facts = Schema.Record(Schema.String, Schema.Union([Schema.String, Schema.Number, Schema.Boolean]))

const ToolCall = Schema.Struct({ id: Schema.String, name: Schema.String, arguments: Schema.String })

/**
 * A message of the run's conversation, as stored.
 *
 * @since 0.1.0
 * @category schemas
 */
export const StoredMessage = Schema.Union([
  Schema.Struct({ role: Schema.Literals(["system", "user"]), content: Schema.String }),
  Schema.Struct({
    role: Schema.Literal("assistant"),
    content: Schema.optional(Schema.String),
    toolCalls: Schema.Array(ToolCall)
  }),
  Schema.Struct({ role: Schema.Literal("tool"), callId: Schema.String, name: Schema.String, content: Schema.String })
])

/**
 * The outcome of one call of the waiting turn: known (a read that ran, a call
 * refused), or waiting on a human's decision of a proposal.
 *
 * @since 0.1.0
 * @category schemas
 */
export const TurnOutcome = Schema.Union([
  Schema.Struct({ call: StoredCall, content: Schema.String }),
  Schema.Struct({ proposal: Schema.String }),
  /** A write/send sub-agent's call: its own durable run, by id, whose answer the call waits on (since 0.4.0). */
  Schema.Struct({ child: Schema.String })
])

/**
 * Everything a run needs to go on: its limits and context, the conversation,
 * the calls so far, the turn waiting on decisions, and how it ended.
 *
 * @since 0.1.0
 * @category schemas
 */
export const State = Schema.Struct({
  maxRounds: Schema.Number,
  maxCallsPerRound: Schema.Number,
  maxArgumentChars: Schema.Number,
  /** How long a human has for each decision, in milliseconds; none when unset. */
  decisionTimeout: Schema.optional(Schema.Number),
  context: Schema.Struct({
    page: Schema.optional(Schema.String),
    features: Schema.optional(Schema.Array(Schema.String)),
    role: Schema.optional(Schema.String),
    tenant: Schema.optional(Schema.String),
    consents: Schema.optional(Schema.Array(Schema.String)),
    facts: Schema.optional(Facts)
  }),
  round: Schema.Number,
  messages: Schema.Array(StoredMessage),
  calls: Schema.Array(StoredCall),
  usage: Schema.Struct({
    inputTokens: Schema.Number,
    outputTokens: Schema.Number,
    cost: Schema.optional(Schema.Number)
  }),
  /**
   * The usage each model turn reported, by round (a turn that reported none is not here).
   *
   * @since 0.2.0
   */
  turns: Schema.optional(Schema.Array(Schema.Struct({
    round: Schema.Number,
    inputTokens: Schema.Number,
    outputTokens: Schema.Number,
    cost: Schema.optional(Schema.Number)
  }))),
  untrusted: Schema.Array(Schema.String),
  refusedBefore: Schema.Array(Schema.String),
  /** Facts the run's tools recorded, for a policy's conditions. */
  facts: Schema.optional(Facts),
  /**
   * The limits that stopped this run's agent or a sub-agent of it, by path
   * (`Agent.Result.limits`); none when unset.
   *
   * @since 0.4.0
   */
  limits: Schema.optional(Schema.Array(Schema.Struct({
    agent: Schema.Array(Schema.String),
    limit: Schema.Literals(["round-limit", "call-limit", "budget-rounds", "budget-calls"])
  }))),
  /**
   * The model's last turn, stored as soon as it answered and before any of
   * its calls ran (the turn is the last message): a resume goes on from it
   * and does not ask the model again. Holds which calls were malformed.
   *
   * @since 0.3.0
   */
  answered: Schema.optional(Schema.Struct({
    malformed: Schema.Array(Schema.Struct({ index: Schema.Number, issue: Schema.String }))
  })),
  /**
   * A sub-agent's run (Agent.tool, holding writes or sends) started by a
   * run's call: the run, turn and call it answers, the sub-agent's tool and
   * the path from the root to it. Only its parent resumes it.
   *
   * @since 0.4.0
   */
  parent: Schema.optional(Schema.Struct({
    run: Schema.String,
    turn: Schema.Number,
    call: Schema.String,
    tool: Schema.String,
    path: Schema.Array(Schema.String)
  })),
  /** The turn whose writes and sends wait for a human, in the order the model asked. */
  turn: Schema.optional(Schema.Struct({ calls: Schema.Array(ToolCall), outcomes: Schema.Array(TurnOutcome) })),
  /** How the run ended. */
  ended: Schema.optional(Schema.Union([
    Schema.Struct({
      status: Schema.Literal("finished"),
      stopped: Schema.Literals(["answer", "round-limit"]),
      answer: Schema.optional(Schema.String)
    }),
    Schema.Struct({
      status: Schema.Literal("cancelled"),
      by: Schema.String,
      reason: Schema.String,
      at: Schema.String
    })
  ]))
})

/**
 * @since 0.1.0
 * @category models
 */
export interface State extends Schema.Schema.Type<typeof State> {}

/**
 * Where a run stands: `running` while a process holds it, `waiting` for
 * decisions, `finished` or `cancelled`, which are final.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Status = Schema.Literals(["running", "waiting", "finished", "cancelled"])

/**
 * @since 0.1.0
 * @category models
 */
export type Status = typeof Status.Type

/**
 * A stored run. `version` grows with each save; `leaseUntil` (ISO) is how long
 * the process running it holds it.
 *
 * @since 0.1.0
 * @category schemas
 */
export const Run = Schema.Struct({
  id: Schema.String,
  status: Status,
  version: Schema.Number,
  traceId: Schema.String,
  actor: Schema.optional(Schema.String),
  createdAt: Schema.String,
  updatedAt: Schema.String,
  leaseUntil: Schema.optional(Schema.String),
  state: State
})

/**
 * @since 0.1.0
 * @category models
 */
export interface Run extends Schema.Schema.Type<typeof Run> {}

/**
 * No run has this id.
 *
 * @since 0.1.0
 * @category errors
 */
export class RunNotFound extends Schema.TaggedError<RunNotFound>()("@graded/core/RunStore/RunNotFound", {
  id: Schema.String
}) {
  override get message(): string {
    return `There is no run ${this.id}`
  }
}

/**
 * A run with this id exists already.
 *
 * @since 0.1.0
 * @category errors
 */
export class RunExists extends Schema.TaggedError<RunExists>()("@graded/core/RunStore/RunExists", {
  id: Schema.String
}) {
  override get message(): string {
    return `A run ${this.id} exists already`
  }
}

/**
 * Another process holds the run, or saved it since it was read: nothing was
 * changed.
 *
 * @since 0.1.0
 * @category errors
 */
export class RunBusy extends Schema.TaggedError<RunBusy>()("@graded/core/RunStore/RunBusy", {
  id: Schema.String,
  status: Status,
  leaseUntil: Schema.optional(Schema.String)
}) {
  override get message(): string {
    return this.status === "running"
      ? `Run ${this.id} is being run by another process (held until ${this.leaseUntil ?? "it finishes"})`
      : `Run ${this.id} changed since it was read (now ${this.status}); nothing was saved`
  }
}

/**
 * The service that keeps runs: provide `RunStore.memory`, or a durable one
 * (`@graded/sql`'s `SqlRunStore`).
 *
 * @since 0.1.0
 * @category services
 */
export class RunStore extends Context.Service<RunStore, RunStore.Service>()("@graded/core/RunStore") {}

/**
 * @since 0.1.0
 */
export declare namespace RunStore {
  /**
   * What a store implements: each change is one atomic step on one run.
   *
   * @since 0.1.0
   * @category models
   */
  export interface Service {
    /** Records a new run (version 1). */
    readonly create: (run: Run) => Effect.Effect<Run, RunExists>
    readonly get: (id: string) => Effect.Effect<Run, RunNotFound>
    /** Runs, oldest first, by status when given. */
    readonly list: (filter?: { readonly status?: Status | undefined }) => Effect.Effect<ReadonlyArray<Run>>
    /**
     * Takes the run for this process until `leaseUntil`: a waiting run, or a
     * running one whose lease passed before `now` (its process stopped). The
     * run comes back `running`, with its version increased.
     */
    readonly claim: (id: string, leaseUntil: string, now: string) => Effect.Effect<Run, RunNotFound | RunBusy>
    /**
     * Replaces the run with `run` (its status, lease and state), if the stored
     * version is still `run.version`; the saved run has the next version.
     */
    readonly save: (run: Run) => Effect.Effect<Run, RunNotFound | RunBusy>
    /**
     * Runs `self` as one transaction of the database the store keeps: the
     * run's save, the proposals it makes and the audit entries of the step
     * commit together or not at all (every graded store and sink on that
     * database joins it). A store without it (memory) writes each at once.
     *
     * @since 0.3.0
     */
    readonly withTransaction?: (<A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>) | undefined
  }
}

/**
 * An in-memory store, for tests and single-process apps: a restart loses it.
 *
 * @since 0.1.0
 * @category layers
 */
export const memory: Layer.Layer<RunStore> = freshService(RunStore, () => Effect.sync(memoryStore))

const memoryStore = (): RunStore.Service => {
  const runs = new Map<string, Run>()
  const iso = Effect.map(Clock.currentTimeMillis, (millis) => new Date(millis).toISOString())
  // Each step reads and writes in one synchronous block: no fiber runs between.
  return Object.freeze<RunStore.Service>({
    create: (run) =>
      Effect.suspend(() => {
        if (runs.has(run.id)) return Effect.fail(new RunExists({ id: run.id }))
        const created = { ...run, version: 1 }
        runs.set(run.id, created)
        return Effect.succeed(created)
      }),
    get: (id) =>
      Effect.suspend(() => {
        const run = runs.get(id)
        return run === undefined ? Effect.fail(new RunNotFound({ id })) : Effect.succeed(run)
      }),
    list: (filter) =>
      Effect.sync(() =>
        [...runs.values()].filter((run) => filter?.status === undefined || run.status === filter.status)
      ),
    claim: (id, leaseUntil, now) =>
      Effect.flatMap(iso, (updatedAt) =>
        Effect.suspend((): Effect.Effect<Run, RunNotFound | RunBusy> => {
          const run = runs.get(id)
          if (run === undefined) return Effect.fail(new RunNotFound({ id }))
          const free = run.status === "waiting" ||
            (run.status === "running" && run.leaseUntil !== undefined && run.leaseUntil < now)
          if (!free) return Effect.fail(new RunBusy({ id, status: run.status, leaseUntil: run.leaseUntil }))
          const claimed: Run = { ...run, status: "running", leaseUntil, version: run.version + 1, updatedAt }
          runs.set(id, claimed)
          return Effect.succeed(claimed)
        })),
    save: (run) =>
      Effect.flatMap(iso, (updatedAt) =>
        Effect.suspend((): Effect.Effect<Run, RunNotFound | RunBusy> => {
          const stored = runs.get(run.id)
          if (stored === undefined) return Effect.fail(new RunNotFound({ id: run.id }))
          if (stored.version !== run.version) {
            return Effect.fail(new RunBusy({ id: run.id, status: stored.status, leaseUntil: stored.leaseUntil }))
          }
          // Only what a save changes: the run's id, trace, actor and creation stay.
          const saved: Run = {
            ...stored,
            status: run.status,
            leaseUntil: run.leaseUntil,
            state: run.state,
            version: run.version + 1,
            updatedAt
          }
          runs.set(run.id, saved)
          return Effect.succeed(saved)
        }))
  })
}

// Sealed where they are made (Invocation.seal): each is shared by every
// fiber, and a tool's code that finds one must not rewrite it in place.
sealed(RunStore)
sealed(memory)
