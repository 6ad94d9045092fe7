import { ParseResult, type Schema } from "effect"

// Who may import this: graded's decoders (the registry, HumanConfirm's edit
// check, Plan's input). JSON.parse makes `__proto__` an ordinary key, which a
// schema with optional fields drops without a word and a strict one refuses:
// refused everywhere, with one message, before decoding.

// The path of the first own `__proto__` key in `value`, or undefined. The
// path is written only for the key found: this runs on every call's input.
export const protoKeyPath = (value: unknown): string | undefined => {
  if (typeof value !== "object" || value === null) return undefined
  if (Object.hasOwn(value, "__proto__")) return `["__proto__"]`
  for (const key of Object.keys(value)) {
    const inner = (value as Record<string, unknown>)[key]
    if (typeof inner !== "object" || inner === null) continue
    const found = protoKeyPath(inner)
    if (found !== undefined) return `[${JSON.stringify(key)}]${found}`
  }
  return undefined
}

export const protoKeyIssue = (path: string): string => `${path}: the key "__proto__" is not accepted`

// The same refusal as a parse error, for decoders that report ParseErrors.
export const protoKeyError = (schema: Schema.Schema<any, any>, value: unknown): ParseResult.ParseError | undefined => {
  const path = protoKeyPath(value)
  return path === undefined
    ? undefined
    : new ParseResult.ParseError({ issue: new ParseResult.Type(schema.ast, value, protoKeyIssue(path)) })
}
