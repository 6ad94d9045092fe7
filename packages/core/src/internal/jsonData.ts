import { Schema, SchemaIssue } from "effect"

// Who may import this: graded's decoders and the places a value is shown to
// a human or stored (the registry, HumanConfirm, Plan's input, Tool.proposal).
// What a value that crosses as JSON may not hold, refused everywhere with one
// message each, before it is decoded, shown or stored:
// 1. a `__proto__` key: JSON.parse makes it an ordinary key, which a schema
//    with optional fields drops without a word and a strict one refuses;
// 2. nesting deeper than `maxDepth`: JSON.parse takes a hundred thousand
//    levels (a 200 KB body), but JSON.stringify, structuredClone and Effect's
//    decoder recurse, and run out of stack a few thousand deep: a defect
//    where the store, the card or the audit meets the value;
// 3. a number JSON cannot write (`1e400` parses as Infinity, NaN, -0): the
//    card, JSON clients, the audit and a store would read null (or 0) while
//    `run` or `deliver` receives the number itself;

/** How deep objects and arrays may nest, the value itself being the first level (serde_json's limit). */
export const maxDepth = 128

// An object still to look into, where it is (its key in its parent), and how
// deep: the value itself is 1.
interface Frame {
  readonly value: object
  readonly key: string
  readonly parent: Frame | undefined
  readonly depth: number
}

const pathTo = (frame: Frame | undefined): string => {
  let path = ""
  for (let at = frame; at !== undefined; at = at.parent) path = `[${JSON.stringify(at.key)}]${path}`
  return path
}

const outermost = (frame: Frame): Frame => {
  let at = frame
  while (at.parent !== undefined) at = at.parent
  return at
}

const unwritable = (number: number): boolean => !Number.isFinite(number) || Object.is(number, -0)

const numberIssue = (path: string, number: number): string =>
  Object.is(number, -0)
    ? `${path || "the value"}: -0 is not a number JSON can carry (it would be written as 0)`
    : `${path || "the value"}: ${number} is not a number JSON can carry (it would be written as null)`

const protoKeyIssue = (path: string): string => `${path}: the key "__proto__" is not accepted`

const depthIssue = (path: string): string => `${path}: nested more than ${maxDepth} levels deep`

// 4. an object whose contents are not its own properties: JSON writes a Map,
//    a Set or a RegExp as {}, a typed array as an object of indexes, so a
//    card would show {} while `deliver` receives the Map.
const kindOf = (value: object): string | undefined =>
  value instanceof Map ? "a Map"
    : value instanceof Set ? "a Set"
    : value instanceof WeakMap ? "a WeakMap"
    : value instanceof WeakSet ? "a WeakSet"
    : value instanceof RegExp ? "a RegExp"
    : value instanceof ArrayBuffer || ArrayBuffer.isView(value) ? "binary data"
    : value instanceof Promise ? "a Promise"
    : undefined

const kindIssue = (path: string, kind: string): string =>
  `${path || "the value"}: ${kind} is not something JSON can carry (it would be written as {})`

// The first thing in `value` JSON cannot carry, as an issue naming where it
// is, or undefined. Depth first in key order, an object's own values judged
// before what is nested in them; without recursion, so that an input nested
// a hundred thousand deep is answered, not exhausts the stack. An object is
// looked into again only when it is met deeper than before (a value code
// made may share one), so the work is bounded and a cycle ends at
// `maxDepth`. Nothing is allocated for an input with no nested object, and a
// path is written only for the issue found: this runs on every call's input.
export const jsonIssue = (value: unknown): string | undefined => {
  if (typeof value === "number") return unwritable(value) ? numberIssue("", value) : undefined
  if (typeof value !== "object" || value === null) return undefined
  const kind = kindOf(value)
  if (kind !== undefined) return kindIssue("", kind)
  let current: object = value
  let frame: Frame | undefined
  let depth = 1
  let pending: Array<Frame> | undefined
  let seen: WeakMap<object, number> | undefined
  try {
    for (;;) {
      if (Object.hasOwn(current, "__proto__")) return protoKeyIssue(`${pathTo(frame)}["__proto__"]`)
      const keys = Object.keys(current)
      // Pushed last key first, so that the first key is looked into first.
      let number: { readonly key: string; readonly value: number } | undefined
      for (let i = keys.length - 1; i >= 0; i--) {
        const key = keys[i]!
        const inner = (current as Record<string, unknown>)[key]
        if (typeof inner === "number") {
          if (unwritable(inner)) number = { key, value: inner }
          continue
        }
        if (typeof inner !== "object" || inner === null) continue
        const kind = kindOf(inner)
        if (kind !== undefined) return kindIssue(`${pathTo(frame)}[${JSON.stringify(key)}]`, kind)
        // Where it is too deep: the outermost key it is under, not a path as long as the nesting.
        if (depth === maxDepth) {
          return depthIssue(`[${JSON.stringify(frame === undefined ? key : outermost(frame).key)}]`)
        }
        seen ??= new WeakMap([[value, 1]])
        if ((seen.get(inner) ?? 0) > depth) continue
        seen.set(inner, depth + 1)
        ;(pending ??= []).push({ value: inner, key, parent: frame, depth: depth + 1 })
      }
      if (number !== undefined) return numberIssue(`${pathTo(frame)}[${JSON.stringify(number.key)}]`, number.value)
      const next = pending?.pop()
      if (next === undefined) return undefined
      frame = next
      current = next.value
      depth = next.depth
    }
  } catch {
    // A getter that throws, in a value code made (JSON.stringify would throw too).
    return `${pathTo(frame) || "the value"}: it cannot be read (reading it threw)`
  }
}

// The same refusal as a schema error, for decoders that report SchemaErrors.
// The value itself stays out of the issue: its message names where and why.
export const jsonError = (value: unknown): Schema.SchemaError | undefined => {
  const issue = jsonIssue(value)
  return issue === undefined
    ? undefined
    : new Schema.SchemaError(new SchemaIssue.InvalidValue({ message: issue }))
}

/**
 * `value` with its plain objects and arrays copied, each property read once:
 * what the gates, the guards, the audit and the decoder then read is one
 * value, which a getter or a later change by the code that made it cannot
 * turn into another between them. Other objects (a Date, a Map, a class's
 * instance) are kept as they are, for the schema to judge. Nesting beyond
 * `maxDepth` (or a cycle) is left uncopied below that depth, where
 * `jsonIssue` refuses it. Throws what a getter throws.
 */
export const plainCopy = (value: unknown, depth = 1): unknown => {
  if (typeof value !== "object" || value === null || depth > maxDepth) return value
  if (Array.isArray(value)) {
    const copy = new Array<unknown>(value.length)
    for (let i = 0; i < value.length; i++) copy[i] = plainCopy(value[i], depth + 1)
    return copy
  }
  const prototype = Object.getPrototypeOf(value)
  if (prototype !== Object.prototype && prototype !== null) return value
  const copy: Record<string, unknown> = {}
  for (const key of Object.keys(value)) {
    const inner = plainCopy((value as Record<string, unknown>)[key], depth + 1)
    // `__proto__` as an own key, kept as one, for `jsonIssue` to name.
    if (key === "__proto__") Object.defineProperty(copy, key, { value: inner, enumerable: true, writable: true })
    else copy[key] = inner
  }
  return copy
}

const keyPath = (path: string, key: string | number): string =>
  typeof key === "number" ? `${path}[${key}]`
    : /^[A-Za-z_$][\w$]*$/.test(key) ? `${path}.${key}`
    : `${path}[${JSON.stringify(key)}]`

/**
 * Where `a` and `b`, two values of JSON's kinds, first differ (`$.to`,
 * `$.lines[2]`), or undefined when they hold the same: what a payload decodes
 * to, encoded again, against what was shown. Anything not plain data, or
 * nested past `maxDepth`, differs where it is.
 */
export const firstDifference = (a: unknown, b: unknown, path = "$", depth = 1): string | undefined => {
  if (Object.is(a, b)) return undefined
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null || depth > maxDepth) return path
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return path
    for (let i = 0; i < a.length; i++) {
      const found = firstDifference(a[i], b[i], keyPath(path, i), depth + 1)
      if (found !== undefined) return found
    }
    return undefined
  }
  // Dates compare by the instant they hold (a `Schema.Date` field is shown as one).
  if (a instanceof Date || b instanceof Date) {
    return a instanceof Date && b instanceof Date && Object.is(a.getTime(), b.getTime()) ? undefined : path
  }
  const plain = (value: object) => {
    const prototype = Object.getPrototypeOf(value)
    return prototype === Object.prototype || prototype === null
  }
  if (!plain(a) || !plain(b)) return path
  const keys = Object.keys(a)
  const other = Object.keys(b)
  for (const key of other) if (!Object.hasOwn(a, key)) return keyPath(path, key)
  for (const key of keys) {
    if (!Object.hasOwn(b, key)) return keyPath(path, key)
    const found = firstDifference(
      (a as Record<string, unknown>)[key],
      (b as Record<string, unknown>)[key],
      keyPath(path, key),
      depth + 1
    )
    if (found !== undefined) return found
  }
  return undefined
}
