/**
 * The ways a tool call can fail besides the tool's own errors. Each one
 * crosses a boundary (to the model, the audit log, a UI), so each is a
 * `Schema.TaggedError` whose message is computed from its fields.
 *
 * @since 0.1.0
 */
import { Schema, SchemaIssue } from "effect"
import type { ParseOptions } from "effect/SchemaAST"

/**
 * How graded decodes every input, payload and edit: a key the schema does not
 * name is an error (a model that adds a field is told so, not ignored), every
 * issue is reported, not only the first, and each names the value it refused
 * (`Expected string, got 42`).
 *
 * @since 0.1.0
 * @category models
 */
// Frozen: every decoder in graded shares it, so no code may loosen it.
export const parseOptions = Object.freeze(
  { onExcessProperty: "error", errors: "all", reportInput: true } as const satisfies ParseOptions
)

// An excess key says which keys the object takes, so a model can fix its
// call, and never its value (a password a model or a human put there).
const leafHook: SchemaIssue.LeafHook = (issue) => {
  if (issue._tag === "UnexpectedKey" && issue.ast._tag === "Objects") {
    const names = issue.ast.propertySignatures.map((signature) => JSON.stringify(String(signature.name)))
    if (names.length > 0) return `Unexpected key; expected one of ${names.join(", ")}`
  }
  return SchemaIssue.defaultLeafHook(issue)
}

const formatter = SchemaIssue.makeFormatterStandardSchemaV1({ leafHook })

// Where, as Effect writes it: `["tags"][0]["label"]`.
const pathOf = (path: ReadonlyArray<PropertyKey | { readonly key: PropertyKey }>): string =>
  path.map((segment) => {
    const key = typeof segment === "object" ? segment.key : segment
    return `[${typeof key === "string" ? JSON.stringify(key) : String(key)}]`
  }).join("")

/**
 * The text graded puts in an error's `issue`: each thing that did not decode,
 * as Effect words it, and where (`Expected string, got 42\n  at ["query"]`),
 * one after the other; an excess key's value is left out. An issue too deep to
 * format is described as such, rather than the formatting failing in its place.
 *
 * @since 0.1.0
 * @category combinators
 */
export const issueOf = (error: Schema.SchemaError | SchemaIssue.Issue): string => {
  try {
    const issue = SchemaIssue.isIssue(error) ? error : error.issue
    return formatter(issue).issues
      .map(({ message, path }) => path !== undefined && path.length > 0 ? `${message}\n  at ${pathOf(path)}` : message)
      .join("\n")
  } catch {
    // The formatter ran out of stack.
    return cannotShow
  }
}

const cannotShow = "the value does not match the schema, and cannot be shown (nested too deeply to print)"

/**
 * The input did not decode with the tool's input schema.
 *
 * @since 0.1.0
 * @category errors
 */
export class InvalidInput extends Schema.TaggedError<InvalidInput>()("@graded/core/ToolError/InvalidInput", {
  tool: Schema.String,
  issue: Schema.String
}) {
  /** The input of `tool` did not decode: the schema error, as text. */
  static fromParseError(tool: string, error: Schema.SchemaError | SchemaIssue.Issue): InvalidInput {
    return new InvalidInput({ tool, issue: issueOf(error) })
  }

  override get message(): string {
    return `Invalid input for ${this.tool}: ${this.issue}`
  }
}

/**
 * The message of an `InvalidInput`, for callers that refuse an input before
 * there is a decode error (argument text that is not JSON, or too long).
 *
 * @since 0.1.0
 * @category errors
 */
export const invalidInputMessage = (tool: string, issue: string): string => new InvalidInput({ tool, issue }).message

/**
 * The tool produced a value its output schema does not accept.
 *
 * @since 0.1.0
 * @category errors
 */
export class InvalidOutput extends Schema.TaggedError<InvalidOutput>()("@graded/core/ToolError/InvalidOutput", {
  tool: Schema.String,
  issue: Schema.String
}) {
  /** The output of `tool` did not encode: the schema error, as text. */
  static fromParseError(tool: string, error: Schema.SchemaError | SchemaIssue.Issue): InvalidOutput {
    return new InvalidOutput({ tool, issue: issueOf(error) })
  }

  override get message(): string {
    return `${this.tool} produced an invalid result: ${this.issue}`
  }
}

/**
 * A gate refused the call. `gate` names which one.
 *
 * @since 0.1.0
 * @category errors
 */
export class Refused extends Schema.TaggedError<Refused>()("@graded/core/ToolError/Refused", {
  tool: Schema.String,
  gate: Schema.String,
  reason: Schema.String
}) {
  override get message(): string {
    return `${this.tool} was refused by the ${this.gate} gate: ${this.reason}`
  }
}

/**
 * Why a write or send chosen by a model is refused: the one wording every
 * gate uses (HumanConfirm, the registry, the agent loop's refusing
 * capabilities).
 *
 * @since 0.1.0
 * @category errors
 */
export const autonomousReason = "a model chose this call; only a human may confirm a write or a send"

/**
 * Why a write or send is refused where code may cause no more than
 * `ceiling`, when no tool is named; inside a tool's own code the gate says
 * `Grade.gradeViolation` instead, as the compiler would.
 *
 * @since 0.1.0
 * @category errors
 */
export const gradeReason = (ceiling: string, grade: string): string =>
  `the code running here may cause no more than a ${ceiling}, not a ${grade}`

/**
 * Why an open-world tool is refused once untrusted content has entered a
 * model's run: `untrusted` names the tools that brought it in.
 *
 * @since 0.1.0
 * @category errors
 */
export const openWorldReason = (tool: string, untrusted: ReadonlyArray<string>): string =>
  `${tool} sends its arguments outside this system, and untrusted content (from ${untrusted.join(", ")}) has ` +
  `entered this run: it is not called, so that content cannot send data out through it`

/**
 * What a model or user sees of a defect: the cause goes to audit only.
 *
 * @since 0.1.0
 * @category errors
 */
export const unexpectedFailure = (tool: string): string => `${tool} failed unexpectedly.`

/**
 * A human saw the payload and said no.
 *
 * @since 0.1.0
 * @category errors
 */
export class Rejected extends Schema.TaggedError<Rejected>()("@graded/core/ToolError/Rejected", {
  tool: Schema.String,
  by: Schema.String,
  reason: Schema.String
}) {
  override get message(): string {
    return `${this.tool} was rejected by ${this.by}: ${this.reason}`
  }
}

/**
 * A human edited the payload into something the tool's schema does not
 * accept. Nothing was delivered.
 *
 * @since 0.1.0
 * @category errors
 */
export class InvalidEdit extends Schema.TaggedError<InvalidEdit>()("@graded/core/ToolError/InvalidEdit", {
  tool: Schema.String,
  by: Schema.String,
  issue: Schema.String
}) {
  /** The edit `by` made to `tool`'s payload did not decode: the schema error, as text. */
  static fromParseError(tool: string, by: string, error: Schema.SchemaError | SchemaIssue.Issue): InvalidEdit {
    return new InvalidEdit({ tool, by, issue: issueOf(error) })
  }

  override get message(): string {
    return `The edit by ${this.by} to ${this.tool} is invalid, nothing was delivered: ${this.issue}`
  }
}

/**
 * Failures that a human confirmation can end in.
 *
 * @since 0.1.0
 * @category errors
 */
export type ConfirmError = Rejected | InvalidEdit | Refused

/**
 * Every failure of `tool.invoke`: the tool's own errors `E` and graded's.
 *
 * @since 0.1.0
 * @category errors
 */
export type ToolError<E> = E | InvalidInput | InvalidOutput | ConfirmError

/**
 * graded's own failures as one schema: an error that crossed a wire (a store,
 * a web page, another process) decodes back into its class.
 *
 * @example
 * import { Schema } from "effect"
 * import { ToolError } from "@graded/core"
 *
 * const wire = Schema.encodeSync(ToolError.GradedError)(
 *   new ToolError.Refused({ tool: "kb.search", gate: "page", reason: "not on this page" })
 * )
 * const back = Schema.decodeUnknownSync(ToolError.GradedError)(JSON.parse(JSON.stringify(wire)))
 *
 * @since 0.1.0
 * @category schemas
 */
export const GradedError = Schema.Union([InvalidInput, InvalidOutput, Refused, Rejected, InvalidEdit])

/**
 * @since 0.1.0
 * @category models
 */
export type GradedError = typeof GradedError.Type

const tags: ReadonlySet<string> = new Set(GradedError.members.map((error) => error.fields._tag.schema.literal))

/**
 * Whether a value is one of graded's own failures, by its tag: an error
 * decoded from a wire, or made by another copy of graded, counts too.
 *
 * @since 0.1.0
 * @category guards
 */
export const isToolError = (u: unknown): u is GradedError =>
  typeof u === "object" && u !== null && "_tag" in u && typeof u._tag === "string" && tags.has(u._tag)
