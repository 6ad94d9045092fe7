// `graded manifest` and `graded review`: the module's policy, read and
// reported; nothing runs.
import { Console, Effect } from "effect"
import { Printable } from "@graded/core"
import * as PolicyPackage from "@graded/policy"
import { Manifest, Policy, Review } from "@graded/policy"
import type { Config } from "../Cli.js"
import { load } from "./load.js"

// Tool names are checked by core, but tags, side effects and messages are the
// module's own text: shown through Printable, as everything else the command prints.
const print = (text: string) => Console.log(Printable.escape(text, { multiline: true }))

const exitWith = (code: number) => Effect.sync(() => void (process.exitCode = code))

const fail = (message: string, code: number) =>
  Effect.zipRight(Console.error(Printable.escape(message)), exitWith(code))

// A module without a policy is asked for something it cannot give: a usage error, exit code 2.
const policyOf = (config: Config, file: string, command: string) =>
  config.policy === undefined
    ? Effect.fail({
      code: 2,
      message:
        `${file} exports no policy: ${command} reads the one it exports as "policy" (Policy.make from @graded/policy)`
    })
    : Effect.succeed(config.policy)

// Conflict detection (`Policy.check`, or `Check.run` over the policy's
// guidelines), where this version of @graded/policy has it.
interface Conflict {
  readonly severity?: string | undefined
}
interface Conflicts {
  readonly findings: ReadonlyArray<Conflict>
  readonly text: string
}
export const conflictsIn = (
  pkg: Record<string, unknown>,
  policy: Policy.Policy<any>
): Conflicts | undefined => {
  const check = pkg["Check"] as
    | {
      readonly run?: (guidelines: unknown) => ReadonlyArray<Conflict>
      readonly format?: (findings: ReadonlyArray<Conflict>) => string
    }
    | undefined
  const viaPolicy = (pkg["Policy"] as Record<string, unknown> | undefined)?.["check"]
  const findings = typeof viaPolicy === "function"
    ? (viaPolicy as (policy: unknown) => ReadonlyArray<Conflict>)(policy)
    : typeof check?.run === "function"
    ? check.run(policy.guidelines)
    : undefined
  if (findings === undefined) return undefined
  const text = typeof check?.format === "function"
    ? check.format(findings)
    : findings.length === 0
    ? "No conflicts."
    : JSON.stringify(findings, null, 2)
  return { findings, text }
}

// The severity of a conflict counts; a review finding is always an error (the tool is off in production).
export const errorsIn = (review: ReadonlyArray<unknown>, conflicts: Conflicts | undefined): number =>
  review.length + (conflicts?.findings ?? []).filter((finding) => (finding.severity ?? "error") === "error").length

const reported = <A>(effect: Effect.Effect<A, { readonly code?: number; readonly message: string }>) =>
  Effect.catchAll(effect, (error) => fail(error.message, error.code ?? 1))

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
    const found = conflictsIn(PolicyPackage, policy)
    if (options.json) {
      yield* print(
        JSON.stringify({ review: findings, ...(found === undefined ? {} : { conflicts: found.findings }) }, null, 2)
      )
    } else {
      yield* print(Review.format(findings))
      if (found !== undefined) yield* print(found.text)
    }
    if (errorsIn(findings, found) > 0) yield* exitWith(1)
  }))

export const review = (options: { module: string; json: boolean }) =>
  reported(Effect.gen(function*() {
    const config = yield* load(options.module)
    const policy = yield* policyOf(config, options.module, "graded review")
    const findings = Policy.review(policy)
    yield* print(options.json ? JSON.stringify(findings, null, 2) : Review.format(findings))
    if (findings.length > 0) yield* exitWith(1)
  }))
