import { NodeFileSystem } from "@effect/platform-node"
import { Cause, Console, Effect, Exit, Layer, Option } from "effect"
import { Audit, HumanConfirm, Plan, Registry } from "@graded/core"
import { TerminalConfirm } from "@graded/confirm"
import * as os from "node:os"
import { load } from "./load.js"
import * as Terminal from "./terminal.js"

const who = () => `cli:${os.userInfo().username}`

const context = (options: { page: Option.Option<string>; feature: ReadonlyArray<string>; autonomous?: boolean }) => ({
  autonomous: options.autonomous ?? false,
  actor: who(),
  traceId: crypto.randomUUID(),
  ...(Option.isSome(options.page) ? { page: options.page.value } : {}),
  ...(options.feature.length > 0 ? { features: options.feature } : {})
})

const fail = (message: string) =>
  Effect.zipRight(Console.error(message), Effect.sync(() => void (process.exitCode = 1)))

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
const humanServices = (config: { layer?: Layer.Layer<any, any, never> | undefined }, file: Option.Option<string>) =>
  Layer.mergeAll(
    config.layer ?? Layer.empty,
    TerminalConfirm.layer({ by: who() }).pipe(Layer.provide(Terminal.layer)),
    HumanConfirm.trigger({ by: who(), via: "cli" }),
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
    const listing = registry.list(context(options))
    const width = Math.max(...listing.map((entry) => entry.name.length), 4)
    for (const entry of listing) {
      yield* Console.log(
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
    yield* Console.log(JSON.stringify(registry.functionSchemas(context(options)), null, 2))
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
    const exit = yield* loaded(
      registry.invoke(options.name, input.value, context(options)).pipe(
        Effect.provide(humanServices(config, options.audit)),
        Effect.exit
      )
    )
    if (Exit.isFailure(exit)) return yield* fail(`${options.name} failed unexpectedly: ${firstLine(exit.cause)}`)
    yield* Console.log(JSON.stringify(exit.value, null, 2))
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
        Effect.provide(humanServices(config, options.audit)),
        Effect.exit
      )
    )
    if (Exit.isSuccess(exit)) return yield* Console.log(JSON.stringify({ ok: true, data: exit.value }, null, 2))
    const failure = Cause.failureOption(exit.cause)
    if (Option.isSome(failure) && Plan.isPlanError(failure.value)) return yield* fail(failure.value.message)
    return yield* fail(`${options.name} failed unexpectedly: ${firstLine(exit.cause)}`)
  }).pipe(Effect.catchAll((error) => fail(error.message)))

export const audit = (options: { file: string }) =>
  Effect.gen(function*() {
    const entries = yield* Audit.readJsonl(options.file)
    for (const entry of entries) {
      const who = `${entry.autonomous ? "agent" : "human"} ${entry.actor ?? "-"}`
      yield* Console.log(`${entry.at}  ${entry.traceId ?? "-"}  ${who}  ${Audit.describe(entry)}`)
    }
  }).pipe(
    Effect.provide(NodeFileSystem.layer),
    Effect.catchAll((error) => fail(error.message))
  )
