/**
 * The permission manifest: every tool of a policy with its grade, the roles
 * its guidelines admit, its compliance tags and side effects, the guidelines
 * that authorize and forbid it, and whether it is on in production and in a
 * test tenant. A table for people and JSON that diffs cleanly in review.
 *
 * @since 0.1.0
 */
import type { Policy } from "./Policy.js"
import * as internal from "./internal/manifest.js"
import { manifestOf } from "./internal/state.js"

/**
 * One tool in the manifest. `roles` are the role values the authorizing
 * guidelines' conditions admit (with the guidelines they require), or `"any"`
 * when a condition does not pin the role; `production` is `"on"`,
 * `"off (no guideline)"` or `"off (review: Q1 excess input, ...)"`;
 * `testTenant` is `"on"`, or `"off (no test tenant)"` when the policy has
 * none and the tool is off in production.
 *
 * @since 0.1.0
 * @category models
 */
export interface Row extends internal.Row {}

/**
 * The manifest of a policy, one row per tool, sorted by tool name.
 *
 * @example
 * import { Effect, Schema } from "effect"
 * import { Tool, Toolkit } from "@graded/core"
 * import { Condition, Guideline, Manifest, Policy } from "@graded/policy"
 * const Search = Tool.read("kb.search", {
 *   title: "Search",
 *   description: "Find articles.",
 *   input: Schema.Struct({ query: Schema.String }),
 *   output: Schema.Array(Schema.String),
 *   run: () => Effect.succeed([])
 * })
 * const policy = Policy.make([
 *   Guideline.make("agents-search", {
 *     description: "Support agents search articles.",
 *     when: Condition.role("support"),
 *     tools: ["kb.search"]
 *   })
 * ], { toolkit: Toolkit.make(Search) })
 * console.log(Manifest.table(Manifest.make(policy)))
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (policy: Policy<any>): ReadonlyArray<Row> => manifestOf(policy)

/**
 * The manifest as an aligned text table, one line per tool (lists joined by
 * commas, `-` for none).
 *
 * @since 0.1.0
 * @category formatting
 */
export const table: (rows: ReadonlyArray<Row>) => string = internal.table

/**
 * The manifest as JSON for review: rows sorted by tool, keys in a fixed
 * order, two-space indent and a trailing newline, so the same policy prints
 * the same bytes whatever order its guidelines were given in.
 *
 * @since 0.1.0
 * @category formatting
 */
export const json: (rows: ReadonlyArray<Row>) => string = internal.json
