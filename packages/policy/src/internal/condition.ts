import { Result, Schema } from "effect"
import type { Condition, Path, Scalar, Subject } from "../Condition.js"

const contextPaths = new Set(["role", "page", "tenant", "actor", "autonomous", "features", "consents"])

// `facts.x`, `input.x.y`: a prefix and dotted names, no empty segment.
const dotted = /^(facts|input)(\.[A-Za-z0-9_-]+)+$/

export const validPath = (path: unknown): path is Path =>
  typeof path === "string" && (contextPaths.has(path) || dotted.test(path))

const PathSchema = Schema.String.check(
  Schema.makeFilter((path: string) =>
    validPath(path) ||
    "a path is role, page, tenant, actor, autonomous, features, consents, facts.<name> or input.<field>"
  )
) as unknown as Schema.Codec<Path>

const ScalarSchema = Schema.Union([Schema.String, Schema.Number, Schema.Boolean])

const NonEmpty = Schema.String.check(Schema.isMinLength(1))

export const schema: Schema.Codec<Condition> = Schema.Union([
  Schema.Struct({ op: Schema.Literal("always") }),
  Schema.Struct({ op: Schema.Literal("equals"), path: PathSchema, value: ScalarSchema }),
  Schema.Struct({ op: Schema.Literal("in"), path: PathSchema, values: Schema.Array(ScalarSchema) }),
  Schema.Struct({ op: Schema.Literal("has"), path: PathSchema, value: Schema.String }),
  Schema.Struct({ op: Schema.Literal("and"), all: Schema.Array(Schema.suspend(() => schema)) }),
  Schema.Struct({ op: Schema.Literal("or"), any: Schema.Array(Schema.suspend(() => schema)) }),
  Schema.Struct({ op: Schema.Literal("not"), condition: Schema.suspend(() => schema) }),
  Schema.Struct({ op: Schema.Literal("text"), text: NonEmpty })
]) as unknown as Schema.Codec<Condition>

const decode = Schema.decodeUnknownResult(schema, { onExcessProperty: "error" })

/** Thrown where a condition is built from values the language does not admit. */
export class InvalidCondition extends TypeError {
  override readonly name = "InvalidCondition"
}

export const leaf = <C extends Condition>(condition: C): C => {
  const decoded = decode(condition)
  if (Result.isFailure(decoded)) {
    throw new InvalidCondition(`invalid ${condition.op} condition: ${decoded.failure.message}`)
  }
  return Object.freeze(condition)
}

/** Decodes a condition from data; the error text names what was wrong. */
// The decoder and its error formatter recurse with the data: data nested
// thousands deep runs out of stack in either, and is answered as such.
export const fromData = (data: unknown): Result.Result<Condition, string> => {
  try {
    return Result.mapError(decode(data), (error) => error.message)
  } catch {
    return Result.fail("the condition is nested too deeply to read")
  }
}

export const valueAt = (subject: Subject, path: Path): unknown => {
  switch (path) {
    case "role":
      return subject.role
    case "page":
      return subject.page
    case "tenant":
      return subject.tenant
    case "actor":
      return subject.actor
    case "autonomous":
      return subject.autonomous ?? false
    case "features":
      return subject.features ?? []
    case "consents":
      return subject.consents ?? []
  }
  const [head, ...rest] = path.split(".")
  if (head === "facts") {
    const facts = subject.facts
    const name = rest.join(".")
    return facts !== undefined && Object.hasOwn(facts, name) ? facts[name] : undefined
  }
  let value: unknown = subject.input
  for (const key of rest) {
    if (typeof value !== "object" || value === null || !Object.hasOwn(value, key)) return undefined
    value = (value as Record<string, unknown>)[key]
  }
  return value
}

// Three-valued (Kleene): a comparison over a fact never recorded, or an input
// field not given, is unknown, and so is its negation. Unknown never holds:
// it authorizes nothing, and it never lifts a forbid (policy.ts). A context
// field the app left unset (`role`, `page`, ...) is a value the app chose:
// it compares as equal to nothing.
export type Truth = "true" | "false" | "unknown"

interface Evaluation {
  readonly holds: boolean
  readonly truth: Truth
  /** Where it is false, or unknown: the leaf (or `not`) that decided it. */
  readonly failed?: Condition | undefined
}

const yes: Evaluation = { holds: true, truth: "true" }
const no = (failed: Condition): Evaluation => ({ holds: false, truth: "false", failed })
const unknown = (failed: Condition): Evaluation => ({ holds: false, truth: "unknown", failed })

const isScalar = (value: unknown): value is Scalar =>
  typeof value === "string" || typeof value === "number" || typeof value === "boolean"

const recorded = (path: Path): boolean => path.startsWith("facts.") || path.startsWith("input.")

const compare = (
  condition: Condition & { readonly path: Path },
  subject: Subject,
  test: (value: unknown) => boolean
) => {
  const value = valueAt(subject, condition.path)
  return value === undefined && recorded(condition.path) ? unknown(condition) : test(value) ? yes : no(condition)
}

export const evaluate = (
  condition: Condition,
  subject: Subject,
  matchText: ((text: string) => boolean) | undefined
): Evaluation => {
  switch (condition.op) {
    case "always":
      return yes
    case "equals":
      return compare(condition, subject, (value) => isScalar(value) && value === condition.value)
    case "in":
      return compare(condition, subject, (value) => isScalar(value) && condition.values.includes(value))
    case "has":
      return compare(condition, subject, (value) => Array.isArray(value) && value.includes(condition.value))
    case "and": {
      let open: Evaluation | undefined
      for (const part of condition.all) {
        const result = evaluate(part, subject, matchText)
        if (result.truth === "false") return result
        if (result.truth === "unknown") open ??= result
      }
      return open ?? yes
    }
    case "or": {
      let open: Evaluation | undefined
      let first: Evaluation | undefined
      for (const part of condition.any) {
        const result = evaluate(part, subject, matchText)
        if (result.holds) return yes
        if (result.truth === "unknown") open ??= result
        first ??= result
      }
      return open ?? first ?? no(condition)
    }
    case "not": {
      const inner = evaluate(condition.condition, subject, matchText)
      return inner.truth === "unknown" ? inner : inner.holds ? no(condition) : yes
    }
    case "text":
      return matchText !== undefined && matchText(condition.text) === true ? yes : no(condition)
  }
}

const show = (value: Scalar): string => JSON.stringify(value)

export const describe = (condition: Condition): string => {
  switch (condition.op) {
    case "always":
      return "always"
    case "equals":
      return `${condition.path} = ${show(condition.value)}`
    case "in":
      return `${condition.path} in [${condition.values.map(show).join(", ")}]`
    case "has":
      return `${condition.path} has ${show(condition.value)}`
    case "and":
      return condition.all.length === 0 ? "always" : condition.all.map(nested).join(" and ")
    case "or":
      return condition.any.length === 0 ? "never" : condition.any.map(nested).join(" or ")
    case "not":
      return `not ${nested(condition.condition)}`
    case "text":
      return `text ${JSON.stringify(condition.text)}`
  }
}

const nested = (condition: Condition): string =>
  condition.op === "and" && condition.all.length > 1 || condition.op === "or" && condition.any.length > 1
    ? `(${describe(condition)})`
    : describe(condition)

export const paths = (condition: Condition): ReadonlyArray<Path> => {
  const found = new Set<Path>()
  const visit = (part: Condition): void => {
    switch (part.op) {
      case "equals":
      case "in":
      case "has":
        found.add(part.path)
        return
      case "and":
        return part.all.forEach(visit)
      case "or":
        return part.any.forEach(visit)
      case "not":
        return visit(part.condition)
      default:
        return
    }
  }
  visit(condition)
  return [...found]
}

export const hasText = (condition: Condition): boolean => {
  switch (condition.op) {
    case "text":
      return true
    case "and":
      return condition.all.some(hasText)
    case "or":
      return condition.any.some(hasText)
    case "not":
      return hasText(condition.condition)
    default:
      return false
  }
}
