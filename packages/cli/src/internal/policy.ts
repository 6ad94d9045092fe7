// `graded manifest` and `graded review`: the module's policy, read and
// reported; nothing runs.
import { Console, Effect } from "effect"
import { Printable } from "@graded/core"
import { Check, Manifest, Policy, Review } from "@graded/policy"
import type { Config } from "../Cli.js"
import { load } from "./load.js"
import { exitWith } from "./process.js"

// Tool names are checked by core, but tags, side effects and messages are the
// module's own text: shown through Printable, as everything else the command prints.
const print = (text: string) => Console.log(Printable.escape(text, { multiline: true }))

const fail = (message: string, code: number) => Effect.andThen(Console.error(Printable.escape(message)), exitWith(code))

// A module without a policy is asked for something it cannot give: a usage error, exit code 2.
const policyOf = (config: Config, file: string, command: string) =>
  config.policy === undefined
    ? Effect.fail({
      code: 2,
      message:
        `${file} exports no policy: ${command} reads the one it exports as "policy" (Policy.make from @graded/policy)`
    })
    : Effect.succeed(config.policy)

// The conflict checks (`Check.run`) over the policy's guidelines, with the
// vocabulary the module declares; only error-severity ones fail the command.
// Every review finding is an error: its tool is off in production.
const errorsIn = (review: ReadonlyArray<Review.Finding>, conflicts: ReadonlyArray<Check.Finding>): number =>
  review.length + conflicts.filter((finding) => finding.severity === "error").length

const reported = <A>(effect: Effect.Effect<A, { readonly code?: number; readonly message: string }>) =>
  Effect.catch(effect, (error) => fail(error.message, error.code ?? 1))

export const manifest = (options: { module: string; json: boolean; check: boolean }) =>
  reported(Effect.gen(function*() {
    const config = yield* load(options.module)
    const policy = yield* policyOf(
      config,
      options.module,
      options.check ? "graded manifest --check" : "graded manifest"
    )
    if (!options.check) {
      const rows = Manifest.make(policy)
      return yield* print(options.json ? Manifest.json(rows).trimEnd() : Manifest.table(rows))
    }
    const findings = Policy.review(policy)
    const conflicts = yield* Effect.try({
      try: () => Check.run(policy.guidelines, config.declared),
      catch: (error) => ({
        code: 1,
        message: `${options.module}: ${error instanceof Error ? error.message : String(error)}`
      })
    })
    if (options.json) {
      yield* print(JSON.stringify({ review: findings, conflicts }, null, 2))
    } else {
      yield* print(`Contract review:\n${Review.format(findings)}\n\nConflicts:\n${Check.format(conflicts)}`)
    }
    if (errorsIn(findings, conflicts) > 0) yield* exitWith(1)
  }))

export const review = (options: { module: string; json: boolean }) =>
  reported(Effect.gen(function*() {
    const config = yield* load(options.module)
    const policy = yield* policyOf(config, options.module, "graded review")
    const findings = Policy.review(policy)
    yield* print(options.json ? JSON.stringify(findings, null, 2) : Review.format(findings))
    if (findings.length > 0) yield* exitWith(1)
  }))
