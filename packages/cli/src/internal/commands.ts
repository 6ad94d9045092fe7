import { NodeFileSystem } from "@effect/platform-node"
import { Cause, Console, Context, Effect, Exit, Layer, Option, Redacted } from "effect"
import { Audit, HumanConfirm, Invocation, Plan, Printable, Proposal, ProposalStore, Registry } from "@graded/core"
import { TerminalConfirm } from "@graded/confirm"
import { SqlAudit } from "@graded/sql"
import type { Config } from "../Cli.js"
import { load } from "./load.js"

// Who is at the keyboard: the actor of every invocation, the HumanTrigger and
// the decider of every confirmation. The operating-system user unless the app
// running the command names someone (`Cli.run(argv, { by })`); never a flag,
// so the person typing cannot claim to be someone else.
export class Person extends Context.Reference<Person>()("@graded/cli/Person", {
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
// and zero-width characters as escapes. Escapes inside JSON strings are JSON's
// own (`\u202E`), so printed JSON still parses to the same value.
const print = (text: string) => Console.log(Printable.escape(text, { multiline: true }))
const printJson = (value: unknown) => print(JSON.stringify(value, null, 2))

const fail = (message: string) =>
  Effect.zipRight(
    Console.error(Printable.escape(message, { multiline: true })),
    Effect.sync(() => void (process.exitCode = 1))
  )

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
  file: Option.Option<string>
) =>
  Layer.mergeAll(
    config.layer ?? Layer.empty,
    TerminalConfirm.layer({ by: who }).pipe(Layer.provide(TerminalConfirm.stdio)),
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
  }).pipe(Effect.catchAll((error) => fail(error.message)))

export const schemas = (
  options: { module: string; page: Option.Option<string>; feature: ReadonlyArray<string>; autonomous: boolean }
) =>
  Effect.gen(function*() {
    const config = yield* load(options.module)
    const registry = Registry.make(config.toolkit, config.registry)
    yield* printJson(registry.functionSchemas(context(yield* Person, options)))
  }).pipe(Effect.catchAll((error) => fail(error.message)))

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
    if (!exit.value.ok) process.exitCode = 1
  }).pipe(Effect.catchAll((error) => fail(error.message)))

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
    const failure = Cause.failureOption(exit.cause)
    if (Option.isSome(failure) && Plan.isPlanError(failure.value)) return yield* fail(failure.value.message)
    return yield* fail(`${options.name} failed unexpectedly: ${firstLine(exit.cause)}`)
  }).pipe(Effect.catchAll((error) => fail(error.message)))

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
  }).pipe(Effect.catchAll((error) => fail(error.message)))

// A command line that parses but asks for something the command cannot do
// (no ProposalStore to read, a rejection without a reason): a usage error,
// exit code 2, as for a command line that does not parse.
const usageError = (message: string) =>
  Effect.zipRight(
    Console.error(Printable.escape(message, { multiline: true })),
    Effect.sync(() => void (process.exitCode = 2))
  )

const noStore = (file: string) =>
  usageError(
    `${file} provides no ProposalStore: export a "layer" that provides one (Sql.sqlite({ filename }) from @graded/sql, or ProposalStore.memory)`
  )

// A value as one line of JSON, every character visible.
const oneLine = (value: unknown): string => {
  try {
    return Printable.escape(JSON.stringify(value) ?? "undefined")
  } catch {
    return "(a value that cannot be shown as JSON)"
  }
}

// Runs `body` with the module's services (and the terminal's HumanConfirm)
// when its layer provides a ProposalStore; says so (exit code 2) when not.
const withStore = <A, E>(
  file: string,
  who: string,
  body: (config: Config) => Effect.Effect<A, E, any>
) =>
  Effect.flatMap(load(file), (config) =>
    loaded(
      Effect.flatMap(
        Effect.serviceOption(ProposalStore.ProposalStore),
        (store) => Option.isNone(store) ? noStore(file) : body(config)
      ).pipe(
        Effect.provide(humanServices(who, config, Option.none())),
        Effect.exit
      )
    ))

export const pending = (options: { module: string; json: boolean }) =>
  Effect.gen(function*() {
    const who = yield* Person
    const exit = yield* withStore(options.module, who, () =>
      Effect.gen(function*() {
        const proposals = yield* Proposal.list({ status: "pending" })
        if (options.json) {
          // JSON Lines; Printable's escapes are JSON's own, so each line parses.
          for (const proposal of proposals) yield* Console.log(Printable.escape(JSON.stringify(proposal)))
          return
        }
        if (proposals.length === 0) return yield* print("No proposal is pending.")
        for (const proposal of proposals) {
          yield* print(
            [
              `${Printable.name(proposal.id)}  ${Printable.name(proposal.tool)} (${Printable.name(proposal.grade)})  ${
                Printable.escape(proposal.title)
              }`,
              `  proposed ${Printable.name(proposal.proposedAt)} by ${Printable.name(proposal.actor ?? "-")}, trace ${
                Printable.name(proposal.traceId ?? "-")
              }`,
              `  payload: ${oneLine(proposal.payload)}`
            ].join("\n")
          )
        }
      }))
    if (Exit.isFailure(exit)) return yield* fail(`pending failed unexpectedly: ${firstLine(exit.cause)}`)
  }).pipe(Effect.catchAll((error) => fail(error.message)))

const messageOf = (cause: Cause.Cause<unknown>): string => {
  const failure = Cause.failureOption(cause)
  if (Option.isSome(failure)) {
    const error = failure.value
    if (typeof error === "object" && error !== null && "message" in error && typeof error.message === "string") {
      return error.message
    }
  }
  return `failed unexpectedly: ${firstLine(cause)}`
}

export const decide = (
  options: { module: string; id: string; decision: "approve" | "reject"; reason: Option.Option<string> }
) =>
  Effect.gen(function*() {
    const reason = Option.getOrUndefined(options.reason)
    if (options.decision === "reject" && (reason === undefined || reason.trim() === "")) {
      return yield* usageError("decide <id> reject needs --reason TEXT: the person who proposed it reads why")
    }
    if (options.decision === "approve" && reason !== undefined) {
      return yield* usageError(
        "--reason is for reject; to reject from the card instead, answer r there and give the reason"
      )
    }
    const who = yield* Person
    const exit = yield* withStore(options.module, who, (config) =>
      options.decision === "reject"
        ? Effect.flatMap(
          Proposal.reject(options.id, { by: who, reason: reason ?? "" }),
          (proposal) =>
            print(
              `${Printable.name(proposal.id)} rejected by ${Printable.name(who)}: ${Printable.escape(reason ?? "")}`
            )
        )
        // The human sees the card with the exact stored payload and decides
        // there (approve, edit, reject), as for `graded invoke`.
        : Proposal.approve(config.toolkit, options.id).pipe(
          Invocation.within({ autonomous: false, actor: who, traceId: crypto.randomUUID() }),
          Effect.flatMap((approved) =>
            Effect.zipRight(
              print(
                `${Printable.name(approved.proposal.id)} ${approved.proposal.status} by ${
                  Printable.name(approved.proposal.decision?.by ?? who)
                }${approved.proposal.decision?.edited === true ? " (edited)" : ""}`
              ),
              printJson(approved.proposal.output ?? null)
            )
          )
        ))
    if (Exit.isFailure(exit)) return yield* fail(messageOf(exit.cause))
  }).pipe(Effect.catchAll((error) => fail(error.message)))
