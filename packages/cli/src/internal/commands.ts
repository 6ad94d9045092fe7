import { NodeFileSystem } from "@effect/platform-node"
import { Cause, Console, Context, Effect, Exit, Layer, Option } from "effect"
import { Audit, HumanConfirm, Plan, Printable, Registry } from "@graded/core"
import { TerminalConfirm } from "@graded/confirm"
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

export const audit = (options: { file: string }) =>
  Effect.gen(function*() {
    const entries = yield* Audit.readJsonl(options.file)
    // Every field of a line came from the file, which anyone may have written:
    // each is shown through Printable, so one entry is one line.
    for (const entry of entries) {
      const who = `${entry.autonomous ? "agent" : "human"} ${Printable.name(entry.actor ?? "-")}`
      const at = Printable.name(entry.at)
      yield* print(`${at}  ${Printable.name(entry.traceId ?? "-")}  ${who}  ${Audit.describe(entry)}`)
    }
  }).pipe(
    Effect.provide(NodeFileSystem.layer),
    Effect.catchAll((error) => fail(error.message))
  )
