import { NodeFileSystem } from "@effect/platform-node"
import { Cause, Console, Context, Effect, Exit, Layer, Option, Redacted } from "effect"
import {
  Audit,
  HumanConfirm,
  Invocation,
  LanguageModel,
  Plan,
  Printable,
  Proposal,
  ProposalStore,
  Registry,
  Runs,
  RunStore
} from "@graded/core"
import { TerminalConfirm } from "@graded/confirm"
import { SqlAudit } from "@graded/sql"
import type { Config } from "../Cli.js"
import { load } from "./load.js"
import { ConfirmTerminal, exitWith } from "./process.js"

// Who is at the keyboard: the actor of every invocation, the HumanTrigger and
// the decider of every confirmation. The operating-system user unless the app
// running the command names someone (`Cli.run(argv, { by })`); never a flag,
// so the person typing cannot claim to be someone else.
export class Person extends Context.Reference<string>("@graded/cli/Person", {
  defaultValue: () => `cli:${TerminalConfirm.osUser()}`
}) {}

const context = (
  who: string,
  options: { page: Option.Option<string>; feature: ReadonlyArray<string>; autonomous?: boolean }
) => ({
  autonomous: options.autonomous ?? false,
  actor: who,
  traceId: crypto.randomUUID(),
  ...(Option.isSome(options.page) ? { page: options.page.value } : {}),
  ...(options.feature.length > 0 ? { features: options.feature } : {})
})

// What the command prints may hold text from outside (a tool's result, a
// model-facing description, an error that quotes a payload): shown through
// Printable, which keeps line breaks and shows control, ANSI, bidirectional
// and zero-width characters as escapes. On a terminal, a person's text is cut
// into rows at its width, so no field soft-wraps onto the left edge to draw an
// entry or a proposal there; to a pipe or a file, each line stays whole, for
// the program that reads it (`audit | grep`). JSON is never cut. Escapes
// inside JSON strings are JSON's own (`\u202E`), so printed JSON still parses
// to the same value.
const rowsOf = (text: string, stream: NodeJS.WriteStream) =>
  Printable.rows(text, stream.isTTY && stream.columns > 0 ? stream.columns : Number.POSITIVE_INFINITY).join("\n")
const print = (text: string) => Console.log(rowsOf(text, process.stdout))
const printJson = (value: unknown) => Console.log(Printable.escape(JSON.stringify(value, null, 2), { multiline: true }))

const fail = (message: string) => Effect.andThen(Console.error(rowsOf(message, process.stderr)), exitWith(1))

// A record as one line of JSON, or, when it cannot be written as JSON, a
// line naming it and saying so.
const jsonLine = (record: unknown, named: { readonly id: string; readonly status: string }): string => {
  try {
    return JSON.stringify(record)
  } catch {
    return JSON.stringify({ ...named, error: "this record cannot be written as JSON (nested too deeply)" })
  }
}

const parse = (text: string): Exit.Exit<unknown, string> => {
  try {
    return Exit.succeed(JSON.parse(text))
  } catch (error) {
    return Exit.fail(`The input is not JSON: ${String(error)}`)
  }
}

const auditLayer = (file: Option.Option<string>) =>
  Option.isSome(file) ? Audit.jsonl(file.value).pipe(Layer.provide(NodeFileSystem.layer)) : Layer.empty

// The services a human's invocation runs with: the module's, the terminal's
// HumanConfirm, a HumanTrigger for the person at the keyboard, and audit.
const humanServices = (
  who: string,
  config: { layer?: Layer.Layer<any, any, never> | undefined },
  file: Option.Option<string>,
  startWith: "decision" | "edit" = "decision"
) =>
  Layer.mergeAll(
    config.layer ?? Layer.empty,
    Layer.unwrap(
      Effect.map(ConfirmTerminal, (terminal) =>
        TerminalConfirm.layer({ by: who, startWith }).pipe(Layer.provide(terminal)))
    ),
    HumanConfirm.trigger({ by: who, via: "cli" }),
    auditLayer(file)
  )

// The module is loaded at run time, so the compiler cannot see whether its
// layer provides every service; one it misses is a defect, reported as such.
const loaded = <A, E>(effect: Effect.Effect<A, E, any>) => effect as Effect.Effect<A, E, never>

const firstLine = (cause: Cause.Cause<unknown>) => Cause.pretty(cause).split("\n")[0] ?? "unknown"

export const list = (
  options: { module: string; page: Option.Option<string>; feature: ReadonlyArray<string>; autonomous: boolean }
) =>
  Effect.gen(function*() {
    const config = yield* load(options.module)
    const registry = Registry.make(config.toolkit, config.registry)
    const listing = registry.list(context(yield* Person, options))
    const width = Math.max(...listing.map((entry) => entry.name.length), 4)
    for (const entry of listing) {
      yield* print(
        `${entry.name.padEnd(width)}  ${entry.grade.padEnd(5)}  ${
          entry.offered ? "offered" : `not offered: ${entry.reason}`
        }`
      )
    }
  }).pipe(Effect.catch((error) => fail(error.message)))

export const schemas = (
  options: { module: string; page: Option.Option<string>; feature: ReadonlyArray<string>; autonomous: boolean }
) =>
  Effect.gen(function*() {
    const config = yield* load(options.module)
    const registry = Registry.make(config.toolkit, config.registry)
    yield* printJson(registry.functionSchemas(context(yield* Person, options)))
  }).pipe(Effect.catch((error) => fail(error.message)))

export const invoke = (options: {
  module: string
  page: Option.Option<string>
  feature: ReadonlyArray<string>
  audit: Option.Option<string>
  name: string
  input: string
}) =>
  Effect.gen(function*() {
    const config = yield* load(options.module)
    const input = parse(options.input)
    if (Exit.isFailure(input)) return yield* fail(Cause.squash(input.cause) as string)
    const registry = Registry.make(config.toolkit, config.registry)
    const who = yield* Person
    const exit = yield* loaded(
      registry.invoke(options.name, input.value, context(who, options)).pipe(
        Effect.provide(humanServices(who, config, options.audit)),
        Effect.exit
      )
    )
    if (Exit.isFailure(exit)) return yield* fail(`${options.name} failed unexpectedly: ${firstLine(exit.cause)}`)
    yield* printJson(exit.value)
    if (!exit.value.ok) yield* exitWith(1)
  }).pipe(Effect.catch((error) => fail(error.message)))

export const plan = (options: { module: string; audit: Option.Option<string>; name: string; input: string }) =>
  Effect.gen(function*() {
    const config = yield* load(options.module)
    const input = parse(options.input)
    if (Exit.isFailure(input)) return yield* fail(Cause.squash(input.cause) as string)
    const found = (config.plans ?? []).find((candidate) => candidate.name === options.name)
    if (found === undefined) {
      const known = (config.plans ?? []).map((candidate) => candidate.name).join(", ") || "none"
      return yield* fail(`There is no plan named ${options.name} (plans: ${known})`)
    }
    const exit = yield* loaded(
      Plan.run(found, input.value).pipe(
        Effect.provide(humanServices(yield* Person, config, options.audit)),
        Effect.exit
      )
    )
    if (Exit.isSuccess(exit)) return yield* printJson({ ok: true, data: exit.value })
    const failure = Cause.findErrorOption(exit.cause)
    if (Option.isSome(failure) && Plan.isPlanError(failure.value)) return yield* fail(failure.value.message)
    return yield* fail(`${options.name} failed unexpectedly: ${firstLine(exit.cause)}`)
  }).pipe(Effect.catch((error) => fail(error.message)))

// Every field of a line came from the file or the database, which anyone may
// have written: each is shown through Printable, so one entry is one line.
const printEntries = (entries: ReadonlyArray<Audit.Entry>) =>
  Effect.forEach(entries, (entry) => {
    const who = `${entry.autonomous ? "agent" : "human"} ${Printable.name(entry.actor ?? "-")}`
    const at = Printable.name(entry.at)
    return print(`${at}  ${Printable.name(entry.traceId ?? "-")}  ${who}  ${Audit.describe(entry)}`)
  }, { discard: true })

export interface AuditOptions {
  readonly file: Option.Option<string>
  readonly sqlite: Option.Option<string>
  readonly postgres: Option.Option<string>
  readonly trace: Option.Option<string>
  readonly gate: Option.Option<string>
  readonly actor: Option.Option<string>
}

// The one question asked of a database: a filter names one of SqlAudit's
// queries; none reads every entry.
const query = (options: AuditOptions) =>
  Option.isSome(options.trace)
    ? SqlAudit.decisions(options.trace.value)
    : Option.isSome(options.gate)
    ? SqlAudit.refusals({ gate: options.gate.value })
    : Option.isSome(options.actor)
    ? SqlAudit.confirmedBy(options.actor.value)
    : SqlAudit.entries()

export const audit = (options: AuditOptions) =>
  Effect.gen(function*() {
    const sources = [options.file, options.sqlite, options.postgres].filter(Option.isSome)
    if (sources.length !== 1) {
      return yield* usageError(
        "audit reads one audit: a JSON Lines file (graded audit audit.jsonl), --sqlite FILE or --postgres URL"
      )
    }
    const filters = [options.trace, options.gate, options.actor].filter(Option.isSome)
    if (filters.length > 1) return yield* usageError("--trace, --gate and --actor are one question each: give one")
    if (Option.isSome(options.file)) {
      if (filters.length > 0) {
        return yield* usageError("--trace, --gate and --actor query a database: use them with --sqlite or --postgres")
      }
      return yield* printEntries(yield* Audit.readJsonl(options.file.value)).pipe(
        Effect.provide(NodeFileSystem.layer)
      )
    }
    const source: SqlAudit.Source = Option.isSome(options.sqlite)
      ? { sqlite: options.sqlite.value }
      : { postgres: Redacted.make(Option.getOrElse(options.postgres, () => "")) }
    const exit = yield* query(options).pipe(Effect.provide(SqlAudit.open(source)), Effect.exit)
    if (Exit.isFailure(exit)) return yield* fail(messageOf(exit.cause))
    yield* printEntries(exit.value)
  }).pipe(Effect.catch((error) => fail(error.message)))

// A command line that parses but asks for something the command cannot do
// (no ProposalStore to read, a rejection without a reason): a usage error,
// exit code 2, as for a command line that does not parse.
const usageError = (message: string) => Effect.andThen(Console.error(rowsOf(message, process.stderr)), exitWith(2))

// A service the module's layer must provide for a command, and how to say it does not.
interface Needed {
  readonly tag: Context.Key<any, any>
  readonly missing: (file: string) => string
}

const needsProposalStore: Needed = {
  tag: ProposalStore.ProposalStore,
  missing: (file) =>
    `${file} provides no ProposalStore: export a "layer" that provides one (Sql.sqlite({ filename }) from @graded/sql, or ProposalStore.memory)`
}
const needsRunStore: Needed = {
  tag: RunStore.RunStore,
  missing: (file) =>
    `${file} provides no RunStore: export a "layer" that provides one (RunStore.memory, or a durable store from @graded/sql) beside its ProposalStore`
}
const needsModel: Needed = {
  tag: LanguageModel.LanguageModel,
  missing: (file) =>
    `${file} provides no LanguageModel: a run goes on with a model, so export a "layer" that provides one (OpenAiModel.layer from @graded/openai, or ScriptedModel.layer)`
}

// A value as one line of JSON, every character visible, cut at as many
// characters as an audit line shows of a payload, saying how many more.
const oneLine = (value: unknown): string => {
  let json: string
  try {
    json = Printable.escape(JSON.stringify(value) ?? "undefined")
  } catch {
    return "(a value that cannot be shown as JSON)"
  }
  const shown = Printable.cap(json, Audit.maxShown)
  return shown.cut > 0 ? `${shown.text}… (${shown.cut} more characters)` : shown.text
}

// Runs `body` with the module's services when its layer provides every
// service `needs` names; says which is missing (exit code 2) when not. With
// `human`, the terminal's HumanConfirm and a HumanTrigger for the person are
// provided too; without, only the module's layer (a run resumed here never
// holds a capability, and is given none).
const withServices = <A, E>(
  file: string,
  who: string,
  needs: ReadonlyArray<Needed>,
  body: (config: Config) => Effect.Effect<A, E, any>,
  options: { readonly human: boolean; readonly startWith?: "decision" | "edit" } = { human: true }
) =>
  Effect.flatMap(load(file), (config) =>
    loaded(
      Effect.flatMap(
        Effect.forEach(needs, (need) => Effect.map(Effect.serviceOption(need.tag), Option.isSome)),
        (present): Effect.Effect<A | void, E, any> => {
          const missing = needs.find((_, i) => !present[i])
          return missing !== undefined ? usageError(missing.missing(file)) : body(config)
        }
      ).pipe(
        Effect.provide(
          options.human
            ? humanServices(who, config, Option.none(), options.startWith)
            : (config.layer ?? Layer.empty)
        ),
        Effect.exit
      )
    ))

const withStore = <A, E>(file: string, who: string, body: (config: Config) => Effect.Effect<A, E, any>) =>
  withServices(file, who, [needsProposalStore], body)

// A decision is a human's: in a model's fiber (an app that runs the command
// from a tool's code), every one is refused here, before the store is read;
// rejecting and cancelling included, which core leaves to the caller. Approving,
// retrying and marking done are refused by core too.
const refusedForModels = (what: string) =>
  Effect.map(Invocation.current, (context) =>
    context.autonomous
      ? `${what} is a human's decision: refused in a fiber running for a model; nothing was decided`
      : undefined)

// The context a decision runs in: a human's, the person at the keyboard.
const human = (who: string) => Invocation.within({ autonomous: false, actor: who, traceId: crypto.randomUUID() })

const proposalLines = (proposal: Proposal.Proposal): ReadonlyArray<string> => [
  `${Printable.name(proposal.id)}  ${Printable.name(proposal.tool)} (${Printable.name(proposal.grade)})  ${
    Printable.escape(proposal.title)
  }${proposal.status === "pending" ? "" : `  [${Printable.name(proposal.status)}]`}`,
  `  proposed ${Printable.name(proposal.proposedAt)} by ${Printable.name(proposal.actor ?? "-")}, trace ${
    Printable.name(proposal.traceId ?? "-")
  }${proposal.runId !== undefined ? `, run ${Printable.name(proposal.runId)}` : ""}`,
  // In doubt, what was approved (an edit included): what went out, or a retry delivers.
  `  ${proposal.status === "in-doubt" && proposal.approved !== undefined ? "approved" : "payload"}: ${
    oneLine(Proposal.payloadToConfirm(proposal))
  }`
]

// Proposals a human acts on, each listed in a section of its own: those
// pending a decision, and deliveries in doubt. (Approving and delivering ones
// are open too, but a process is acting on them.)
const open = ["pending", "in-doubt"] as const satisfies ReadonlyArray<Proposal.Status>

// Settles first what a process that died left half way, as an app does on
// start (`Proposal.recover`, audited as there): a delivery whose lease passed
// is listed in doubt, an approval that stopped is pending again, and a
// proposal past its expiry is expired, not offered; without waiting for some
// app process to recover. Of two processes recovering at once, one moves each.
const recovered = Effect.asVoid(Proposal.recover)

export const pending = (options: { module: string; json: boolean }) =>
  Effect.gen(function*() {
    const who = yield* Person
    const exit = yield* withStore(options.module, who, () =>
      Effect.gen(function*() {
        yield* recovered
        const [waiting, inDoubt] = yield* Effect.forEach(open, (status) => Proposal.list({ status }))
        if (options.json) {
          // JSON Lines; Printable's escapes are JSON's own, so each line parses.
          // Each record carries its status, and an in-doubt one its deliveryKey.
          // One that cannot be written as JSON (nested too deeply) is a line
          // that says so; the others are still listed.
          for (const proposal of [...(waiting ?? []), ...(inDoubt ?? [])]) {
            yield* Console.log(Printable.escape(jsonLine(proposal, { id: proposal.id, status: proposal.status })))
          }
          return
        }
        if ((waiting ?? []).length === 0) yield* print("No proposal is pending.")
        for (const proposal of waiting ?? []) yield* print(proposalLines(proposal).join("\n"))
        if ((inDoubt ?? []).length === 0) return
        yield* print(
          "\nIn doubt: these deliveries began and did not settle, so they may have gone out. Check the outside system, then `decide <id> done` if it went out, or `decide <id> retry` to deliver again with the same key."
        )
        for (const proposal of inDoubt ?? []) {
          yield* print(
            [
              ...proposalLines(proposal),
              `  delivery key ${Printable.name(proposal.deliveryKey ?? "-")}: ${
                Printable.escape(proposal.decision?.reason ?? `approved by ${proposal.decision?.by ?? "-"}`)
              }`
            ].join("\n")
          )
        }
      }))
    if (Exit.isFailure(exit)) return yield* fail(`pending failed unexpectedly: ${firstLine(exit.cause)}`)
  }).pipe(Effect.catch((error) => fail(error.message)))

/** A failure's own message, or the first line of what went wrong. */
export const messageOf = (cause: Cause.Cause<unknown>): string => {
  const failure = Cause.findErrorOption(cause)
  if (Option.isSome(failure)) {
    const error = failure.value
    if (typeof error === "object" && error !== null && "message" in error && typeof error.message === "string") {
      return error.message
    }
  }
  return `failed unexpectedly: ${firstLine(cause)}`
}

// Only a delivery in doubt is marked done or retried: one still being
// delivered is another process's, and one not begun went nowhere. (The store
// settles the race; this says what is wrong in words.)
const inDoubt = (id: string) =>
  Effect.flatMap(Proposal.get(id), (proposal) =>
    proposal.status === "in-doubt"
      ? Effect.void
      : Effect.fail({
        // Stored fields as names: one line each, so none can print a line of its own.
        message: proposal.status === "pending"
          ? `Proposal ${
            Printable.name(proposal.id)
          } is pending, not in doubt: nothing was delivered; approve or reject it`
          : `Proposal ${Printable.name(proposal.id)} is ${proposal.status}, not in doubt${
            proposal.decision !== undefined ? ` (decided by ${Printable.name(proposal.decision.by)})` : ""
          }; nothing was done`
      }))

/** What a person may decide about a proposal. */
export type Decision = "approve" | "edit" | "reject" | "done" | "retry"

const settled = (approved: Proposal.Approved) =>
  Effect.andThen(
    print(
      `${Printable.name(approved.proposal.id)} ${Printable.name(approved.proposal.status)} by ${
        Printable.name(approved.proposal.decision?.by ?? "-")
      }${approved.proposal.decision?.edited === true ? " (edited)" : ""}`
    ),
    printJson(approved.proposal.output ?? null)
  )

export const decide = (
  options: { module: string; id: string; decision: Decision; reason: Option.Option<string> }
) =>
  Effect.gen(function*() {
    const reason = Option.getOrUndefined(options.reason)
    if (options.decision === "reject" && (reason === undefined || reason.trim() === "")) {
      return yield* usageError("decide <id> reject needs --reason TEXT: the person who proposed it reads why")
    }
    if (options.decision !== "reject" && options.decision !== "done" && reason !== undefined) {
      return yield* usageError(
        "--reason is for reject and done; to reject from the card instead, answer r there and give the reason"
      )
    }
    const refused = yield* refusedForModels(`decide ${options.decision}`)
    if (refused !== undefined) return yield* fail(refused)
    const who = yield* Person
    const exit = yield* withServices(
      options.module,
      who,
      [needsProposalStore],
      (config) => {
        switch (options.decision) {
          case "reject":
            return Effect.flatMap(
              Proposal.reject(options.id, { by: who, reason: reason ?? "" }),
              (proposal) =>
                print(
                  `${Printable.name(proposal.id)} rejected by ${Printable.name(who)}: ${Printable.escape(reason ?? "")}`
                )
            )
          case "done":
            return Effect.flatMap(
              inDoubt(options.id),
              () =>
                Proposal.markDone(options.id, reason !== undefined ? { note: reason } : undefined).pipe(
                  human(who),
                  Effect.flatMap((done) =>
                    print(
                      `${Printable.name(done.id)} marked delivered by ${Printable.name(who)}${
                        reason !== undefined ? `: ${Printable.escape(reason)}` : ""
                      }`
                    )
                  )
                )
            )
          case "retry":
            // The card again, with the stored payload; an approval delivers
            // with the key the first attempt went out with.
            return Effect.flatMap(
              inDoubt(options.id),
              () => Proposal.retry(config.toolkit, options.id).pipe(human(who), Effect.flatMap(settled))
            )
          default:
            // The human sees the card with the exact stored payload and decides
            // there (approve, edit, reject), as for `graded invoke`; `edit`
            // opens it at the edit question. An edit is validated again by
            // HumanConfirm: an invalid one delivers nothing and says why.
            return Proposal.approve(config.toolkit, options.id).pipe(human(who), Effect.flatMap(settled))
        }
      },
      { human: true, startWith: options.decision === "edit" ? "edit" : "decision" }
    )
    if (Exit.isFailure(exit)) return yield* fail(messageOf(exit.cause))
  }).pipe(Effect.catch((error) => fail(error.message)))

// The proposals of a run's waiting turn that still wait on a human, and
// those of the sub-agents' runs it waits on (each with its path).
const openOf = (run: RunStore.Run): Effect.Effect<Array<Proposal.Proposal>, never, any> =>
  Effect.gen(function*() {
    const open: Array<Proposal.Proposal> = []
    for (const outcome of run.state.turn?.outcomes ?? []) {
      if ("proposal" in outcome) {
        const proposal = yield* Effect.option(Proposal.get(outcome.proposal))
        if (Option.isSome(proposal) && Proposal.isOpen(proposal.value.status)) open.push(proposal.value)
      } else if ("child" in outcome) {
        const child = yield* Effect.option(Effect.flatMap(RunStore.RunStore, (store) => store.get(outcome.child)))
        if (Option.isSome(child) && child.value.state.ended === undefined) open.push(...(yield* openOf(child.value)))
      }
    }
    return open
  })

export const runs = (options: { module: string; json: boolean; status: Option.Option<RunStore.Status> }) =>
  Effect.gen(function*() {
    const who = yield* Person
    const exit = yield* withServices(
      options.module,
      who,
      [needsRunStore, needsProposalStore],
      () =>
        Effect.gen(function*() {
          // What a waiting run waits on is shown as it stands: in doubt, expired.
          yield* recovered
          const store = yield* RunStore.RunStore
          const listed = yield* store.list({ status: Option.getOrUndefined(options.status) })
          if (!options.json && listed.length === 0) {
            return yield* print(
              Option.isSome(options.status) ? `No run is ${options.status.value}.` : "There are no runs."
            )
          }
          for (const run of listed) {
            const waitingOn = run.status === "waiting" ? yield* openOf(run) : []
            if (options.json) {
              yield* Console.log(Printable.escape(jsonLine({
                id: run.id,
                status: run.status,
                actor: run.actor,
                traceId: run.traceId,
                round: run.state.round,
                createdAt: run.createdAt,
                updatedAt: run.updatedAt,
                leaseUntil: run.leaseUntil,
                open: waitingOn.map((p) => ({
                  id: p.id,
                  tool: p.tool,
                  grade: p.grade,
                  status: p.status,
                  ...(p.path === undefined ? {} : { path: p.path })
                })),
                ended: run.state.ended
              }, { id: run.id, status: run.status })))
              continue
            }
            const ended = run.state.ended
            yield* print(
              [
                `${Printable.name(run.id)}  ${run.status}  by ${Printable.name(run.actor ?? "-")}, trace ${
                  Printable.name(run.traceId)
                }, round ${run.state.round}, updated ${Printable.name(run.updatedAt)}`,
                ...waitingOn.map((p) =>
                  `  waits on ${Printable.name(p.id)}  ${
                    [...(p.path ?? []), p.tool].map((step) => Printable.name(step)).join(" → ")
                  } (${Printable.name(p.grade)})  ${Printable.name(p.status)}`
                ),
                ...(run.status === "running" && run.leaseUntil !== undefined
                  ? [`  held by a process until ${Printable.name(run.leaseUntil)}`]
                  : []),
                ...(ended?.status === "finished"
                  ? [
                    `  ${ended.stopped === "answer" ? "answer" : "stopped at the round limit"}: ${
                      oneLine(ended.answer ?? null)
                    }`
                  ]
                  : ended?.status === "cancelled"
                  ? [`  cancelled by ${Printable.name(ended.by)}: ${Printable.escape(ended.reason)}`]
                  : [])
              ].join("\n")
            )
          }
        }),
      { human: false }
    )
    if (Exit.isFailure(exit)) return yield* fail(messageOf(exit.cause))
  }).pipe(Effect.catch((error) => fail(error.message)))

export const resume = (options: { module: string; runId: string }) =>
  Effect.gen(function*() {
    const who = yield* Person
    const exit = yield* withServices(
      options.module,
      who,
      [needsRunStore, needsProposalStore, needsModel],
      (config) =>
        Effect.flatMap(Runs.resume(options.runId, { toolkit: config.toolkit }), (outcome) => {
          const id = Printable.name(outcome.runId)
          switch (outcome.status) {
            case "waiting":
              return print(
                [
                  `${id} is waiting for a human to decide:`,
                  ...outcome.pending.flatMap((proposal) => proposalLines(proposal).map((line) => `  ${line}`)),
                  `Decide each (graded decide <id> approve|edit|reject), then resume again.`
                ].join("\n")
              )
            case "finished":
              return print(
                [
                  `${id} finished after ${outcome.result.rounds} round(s)${
                    outcome.result.stopped === "round-limit" ? ", at the round limit" : ""
                  }.`,
                  `answer: ${oneLine(outcome.result.answer ?? null)}`
                ].join("\n")
              )
            case "cancelled":
              return print(
                `${id} was cancelled by ${Printable.name(outcome.by)}: ${Printable.escape(outcome.reason)}`
              )
          }
        }),
      { human: false }
    )
    if (Exit.isFailure(exit)) return yield* fail(messageOf(exit.cause))
  }).pipe(Effect.catch((error) => fail(error.message)))

export const cancel = (options: { module: string; runId: string; reason: Option.Option<string> }) =>
  Effect.gen(function*() {
    const reason = Option.getOrUndefined(options.reason)
    if (reason === undefined || reason.trim() === "") {
      return yield* usageError("cancel <runId> needs --reason TEXT: it is recorded with the run and its rejections")
    }
    const refused = yield* refusedForModels("cancel")
    if (refused !== undefined) return yield* fail(refused)
    const who = yield* Person
    const exit = yield* withServices(
      options.module,
      who,
      [needsRunStore, needsProposalStore],
      () =>
        Effect.gen(function*() {
          const before = yield* Effect.flatMap(RunStore.RunStore, (store) => store.get(options.runId))
          const rejected = (yield* openOf(before)).filter((proposal) => proposal.status === "pending")
          yield* Runs.cancel(options.runId, { reason }).pipe(human(who))
          yield* print(
            `${Printable.name(options.runId)} cancelled by ${Printable.name(who)}: ${Printable.escape(reason)}${
              rejected.length > 0 ? `\nrejected: ${rejected.map((p) => Printable.name(p.id)).join(", ")}` : ""
            }`
          )
        }),
      { human: false }
    )
    if (Exit.isFailure(exit)) return yield* fail(messageOf(exit.cause))
  }).pipe(Effect.catch((error) => fail(error.message)))

// Sealed where they are made (Invocation.seal): each is shared by every
// fiber, and a tool's code that finds one must not rewrite it in place.
Invocation.seal(Person)
