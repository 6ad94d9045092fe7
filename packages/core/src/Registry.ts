/**
 * The registry is the one runtime entry for every caller: a shortcut, a fixed
 * flow, the agent loop, the debug bridge. It runs the gates in order, never
 * fails and never throws; every answer is a `ToolResult`.
 *
 * 1. unknown name: refused, naming it;
 * 2. feature flag, then page: refused with the gate named (an unknown page
 *    passes: a wrapper is never stricter than the function it wraps);
 * 3. a write or send chosen by a model: refused with `requiresConfirm`, and for
 *    a send the prepared payload as `confirmPayload`; nothing runs or is sent;
 * 4. input decoded with the tool's schema; excess properties are errors;
 * 5. the tool runs; its result is encoded and trimmed; a defect becomes a
 *    fixed message and its cause goes to audit.
 *
 * @since 0.1.0
 */
import { Schema } from "effect"
import type { Effect } from "effect/Effect"
import type * as Grade from "./Grade.js"
import type * as Invocation from "./Invocation.js"
import * as internal from "./internal/registry.js"
import type { FunctionSchema } from "./LanguageModel.js"
import type * as Tool from "./Tool.js"
import type * as Toolkit from "./Toolkit.js"

/**
 * Why a call did not succeed, for programs.
 *
 * @since 0.1.0
 * @category models
 */
export const Code = Schema.Literals([
  "unknown-tool",
  "not-offered",
  "feature",
  "page",
  "requires-confirm",
  "invalid-input",
  "refused",
  "rejected",
  "failed"
])

/**
 * @since 0.1.0
 * @category models
 */
export type Code = typeof Code.Type

/**
 * The answer to every invocation: the seed's shape, plus a code and the gate
 * for programs, and a note when the result was trimmed.
 *
 * @since 0.1.0
 * @category models
 */
export const ToolResult = Schema.Struct({
  ok: Schema.Boolean,
  data: Schema.optional(Schema.Unknown),
  error: Schema.optional(Schema.String),
  code: Schema.optional(Code),
  gate: Schema.optional(Schema.String),
  requiresConfirm: Schema.optional(Schema.Boolean),
  confirmPayload: Schema.optional(Schema.Unknown),
  truncated: Schema.optional(Schema.String)
})

/**
 * @since 0.1.0
 * @category models
 */
export interface ToolResult extends Schema.Schema.Type<typeof ToolResult> {}

/**
 * A tool as a caller in some context sees it: offered or not, and why not.
 *
 * @since 0.1.0
 * @category models
 */
export interface Listing {
  readonly name: string
  readonly wire: string
  readonly grade: Grade.Grade
  readonly title: string
  readonly description: string
  readonly offered: boolean
  /** Its arguments reach an outside party (`openWorld` on the tool). */
  readonly openWorld: boolean
  readonly gate?: string | undefined
  readonly reason?: string | undefined
}

/**
 * What a registry knows of the installation: the features it licenses and the
 * page types the app recognises.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** Features licensed for this installation; a context's `features` replace them. */
  readonly features?: ReadonlyArray<string> | undefined
  /**
   * The page types the app can recognise. A context page outside this list is
   * unknown and never blocks a tool. Defaults to every page a tool names.
   */
  readonly pages?: ReadonlyArray<string> | undefined
  /**
   * Whether an autonomous context that has read untrusted content (its
   * `untrusted` is not empty) may still call open-world tools. Default
   * `"refuse"`: the content could tell the model to send data out through them.
   */
  readonly openWorldAfterUntrusted?: "refuse" | "allow" | undefined
}

/**
 * The requirements of invoking the tool named `N`; of every tool when `N` is
 * not exactly one literal name of the toolkit (a wider string, a pattern such
 * as `${string}.submit`, a name no tool has, `never`). A branded name
 * (`"kb.search" & Brand`) is the tool whose name it refines. A union of names
 * needs what each of them needs.
 *
 * @since 0.1.0
 * @category utility types
 */
export type RequirementsOf<Tools extends ReadonlyArray<Tool.Any>, N extends string> = [N] extends [never]
  ? Tool.Requirements<Tools[number]>
  : N extends unknown ? RequirementsOfName<Tools[number], N>
  : never

// The tools whose name type admits the name `N`: the tool of that literal
// name, and any tool whose name is a pattern or `string`.
type Admitting<T, N> = T extends Tool.Any ? [N] extends [T["name"]] ? T : never : never

type LiteralNamed<T> = T extends Tool.Any ? IsLiteral<T["name"]> extends true ? T : never : never

type IsLiteral<S extends string> = string extends S ? false : {} extends Record<S, 1> ? false : true

// `N` is exactly a literal name of the toolkit when it refines the name of a
// tool named by a literal; then it can be no other tool than those admitting
// it. Otherwise the registry may resolve it to any tool at run time.
type RequirementsOfName<T, N> = [LiteralNamed<Admitting<T, N>>] extends [never] ? Tool.Requirements<T>
  : Tool.Requirements<Admitting<T, N>>

/**
 * One toolkit's runtime entry: list what a caller is offered, invoke a tool by
 * name through every gate, and list function definitions for a model.
 *
 * @since 0.1.0
 * @category models
 */
export interface Registry<Tools extends ReadonlyArray<Tool.Any>> {
  readonly toolkit: Toolkit.Toolkit<Tools>
  /** Every tool, and whether this context is offered it by the registry's own gates. */
  readonly list: (context?: Partial<Invocation.Context>) => ReadonlyArray<Listing>
  /**
   * Every tool, and whether this context is offered it by every gate in
   * force: the registry's, then any guard (a policy, see `Guard`); the context
   * is merged into the current one. Without a guard, the same as `list`.
   */
  readonly candidates: (context?: Partial<Invocation.Context>) => Effect<ReadonlyArray<Listing>>
  /** Runs a tool through every gate. Never fails. */
  readonly invoke: <const N extends string>(
    name: N,
    input: unknown,
    context?: Partial<Invocation.Context>
  ) => Effect<ToolResult, never, RequirementsOf<Tools, N>>
  /** OpenAI function definitions of the tools this context is offered. */
  readonly functionSchemas: (context?: Partial<Invocation.Context>) => ReadonlyArray<FunctionSchema>
}

/**
 * Builds the registry of a toolkit, for every place tools are called by name at
 * run time (a shortcut, a form, a console, a model's calls).
 *
 * @example
 * import { Effect } from "effect"
 * import { Registry, Toolkit } from "@graded/core"
 *
 * const registry = Registry.make(Toolkit.make(), { features: ["kb"] })
 * const result = registry.invoke("kb.search", { query: "invoice" }, { autonomous: true, page: "ticket" })
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = <Tools extends ReadonlyArray<Tool.Any>>(
  toolkit: Toolkit.Toolkit<Tools>,
  options: Options = {}
): Registry<Tools> =>
  // Written once for any toolkit; the signature restores what the toolkit type knows.
  // Frozen: code holding the app's registry must not swap its functions.
  Object.freeze(internal.make(toolkit, options)) as unknown as Registry<Tools>

/**
 * Why a function definition is not valid for OpenAI's strict mode; empty when
 * it is. `functionSchemas` marks a definition `strict: true` only then.
 *
 * @since 0.1.0
 * @category utility types
 */
export const strictViolations: (parameters: unknown) => ReadonlyArray<string> = internal.strictViolations
