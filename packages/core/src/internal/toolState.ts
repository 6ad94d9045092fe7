// Everything graded keeps about a tool it made, in one frozen record the
// constructor (tool.ts) makes with the tool: a tool object with no record was
// not made by graded (a structural copy, a tool with its invoke swapped), and
// a toolkit refuses it. What the registry and the model adapters build from
// a tool the first time it is listed or called is kept in the record's `built`
// cell, so a cold tool costs nothing to make.
// Who may import this: graded's own modules; nothing here is exported.
import type { Effect, Result, SchemaIssue } from "effect"
import type { Labels } from "./labels.js"
import type { Compiled } from "./functionSchema.js"

/** What a tool's schema code (an encode, a decode) is run under: the tool's code's ceiling. */
export type SchemaCode = <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>

/** How a write or send confirms a payload and then runs or delivers it (tool.ts). */
export type Confirmer = (payload: unknown, options?: ConfirmOptions) => Effect.Effect<Outcome, unknown, unknown>

// `Proposal.approve` passes a stored payload, the proposal's delivery key,
// and a `beforeEffect` that runs once the human approved and before anything
// is written or sent (it records the delivery with what was approved; if it
// fails, nothing runs). Nothing else outside the tool confirms with one.
export interface ConfirmOptions {
  readonly beforeEffect?:
    | ((approved: { readonly payload: unknown; readonly edited: boolean }) => Effect.Effect<void, unknown>)
    | undefined
  readonly idempotencyKey?: string | undefined
}

/** What a write or send that went through ended in: its output, and who approved it. */
export interface Outcome {
  readonly output: unknown
  readonly by: string
  readonly edited: boolean
}

/** A tool's decoder and encoders (registry.ts): building them per call costs more than the decoding. */
export interface Codecs {
  readonly decode: (input: unknown) => Result.Result<unknown, SchemaIssue.Issue>
  readonly encodeOutput: (output: unknown) => Effect.Effect<unknown, SchemaIssue.Issue>
  /** Fails with a `Forbidden` issue when the schema needs an effect. */
  readonly encodeOutputSync: (output: unknown) => Result.Result<unknown, SchemaIssue.Issue> | typeof needsEffect
}

/** Made on first use, once: the function schema a model is shown, and the registry's codecs. */
export interface Built {
  compiled?: Compiled
  codecs?: Codecs
}

export interface ToolState {
  /** The tool's tags and side effects, stamped on its audit entries; undefined when it has neither. */
  readonly labels: Labels | undefined
  readonly inSchema: SchemaCode
  /** For a write or send. */
  readonly confirmer: Confirmer | undefined
  readonly built: Built
}

const states = new WeakMap<object, ToolState>()

/** Records `state` for `tool`, as the constructor makes it. */
export const keep = (tool: object, state: Omit<ToolState, "built">): void => {
  states.set(tool, Object.freeze({ ...state, built: {} }))
}

export const stateOf = (tool: unknown): ToolState | undefined =>
  typeof tool === "object" && tool !== null ? states.get(tool) : undefined

/** `built[key]` of `tool`'s record, made by `make` the first time; made afresh for a tool graded did not make. */
export const builtOnce = <K extends keyof Built>(tool: object, key: K, make: () => NonNullable<Built[K]>) => {
  const built = states.get(tool)?.built
  if (built === undefined) return make()
  return (built[key] ??= make()) as NonNullable<Built[K]>
}

/** What a synchronous encode answers when the schema needs an effect (an asynchronous transformation). */
export const needsEffect: unique symbol = Symbol("needsEffect")
