import { ParseResult, type Schema } from "effect"

// Who may import this: graded's decoders (the registry, HumanConfirm's edit
// check, Plan's input). JSON.parse makes `__proto__` an ordinary key, which a
// schema with optional fields drops without a word and a strict one refuses:
// refused everywhere, with one message, before decoding.

// An object still to look into, and where it is: its key in its parent.
interface Frame {
  readonly value: object
  readonly key: string
  readonly parent: Frame | undefined
}

const pathTo = (frame: Frame | undefined): string => {
  let path = ""
  for (let at = frame; at !== undefined; at = at.parent) path = `[${JSON.stringify(at.key)}]${path}`
  return path
}

// The path of the first own `__proto__` key in `value` (depth first, in key
// order), or undefined. Without recursion: an input nested a hundred
// thousand deep (a JSON body of 600 KB) must be answered, not exhaust the
// stack; objects seen already are skipped, so a cycle ends. Nothing is
// allocated for an input with no nested object, and the path is written only
// for the key found: this runs on every call's input.
export const protoKeyPath = (value: unknown): string | undefined => {
  if (typeof value !== "object" || value === null) return undefined
  let current: object = value
  let frame: Frame | undefined
  let pending: Array<Frame> | undefined
  let seen: WeakSet<object> | undefined
  for (;;) {
    if (Object.hasOwn(current, "__proto__")) return `${pathTo(frame)}["__proto__"]`
    const keys = Object.keys(current)
    // Pushed last key first, so that the first key is looked into first.
    for (let i = keys.length - 1; i >= 0; i--) {
      const inner = (current as Record<string, unknown>)[keys[i]!]
      if (typeof inner !== "object" || inner === null) continue
      seen ??= new WeakSet([value])
      if (seen.has(inner)) continue
      seen.add(inner)
      ;(pending ??= []).push({ value: inner, key: keys[i]!, parent: frame })
    }
    const next = pending?.pop()
    if (next === undefined) return undefined
    frame = next
    current = next.value
  }
}

export const protoKeyIssue = (path: string): string => `${path}: the key "__proto__" is not accepted`

// The same refusal as a parse error, for decoders that report ParseErrors.
export const protoKeyError = (schema: Schema.Schema<any, any>, value: unknown): ParseResult.ParseError | undefined => {
  const path = protoKeyPath(value)
  return path === undefined
    ? undefined
    : new ParseResult.ParseError({ issue: new ParseResult.Type(schema.ast, value, protoKeyIssue(path)) })
}
