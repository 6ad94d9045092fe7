/**
 * Tool names and their wire form.
 *
 * Inside graded a tool is named `<domain>.<capability>` (`kb.search`). OpenAI
 * and compatible gateways accept only `^[a-zA-Z0-9_-]{1,64}$`, so the name a
 * model sees is the wire form (`kb__search`). The two map one to one because a
 * segment may never contain `__`, nor start or end with `_` or `-`.
 *
 * @since 0.1.0
 */

// The pattern graded checks with, never exported: `RegExp.prototype.compile`
// rewrites a regular expression in place (even a frozen one), so the exported
// `namePattern` is a copy for callers to read, and changing it changes nothing.
const validName = /^[A-Za-z0-9]+(?:[-_][A-Za-z0-9]+)*(?:\.[A-Za-z0-9]+(?:[-_][A-Za-z0-9]+)*)+$/

/**
 * What a tool name must look like: segments of letters and digits, joined
 * inside a segment by single `-` or `_`, and segments joined by `.`.
 *
 * @since 0.1.0
 * @category models
 */
export const namePattern: RegExp = new RegExp(validName.source)

/**
 * What OpenAI accepts as a function name.
 *
 * @since 0.1.0
 * @category models
 */
export const wirePattern = /^[a-zA-Z0-9_-]{1,64}$/

/**
 * The longest wire name OpenAI accepts.
 *
 * @since 0.1.0
 * @category models
 */
export const maxWireLength = 64

/**
 * The wire form of a tool name: every `.` becomes `__`.
 *
 * @example
 * import { Wire } from "@graded/core"
 * Wire.toWire("kb.search") // "kb__search"
 *
 * @since 0.1.0
 * @category constructors
 */
export const toWire = (name: string): string => name.replaceAll(".", "__")

/**
 * A name a model gave, made safe to send back: a model may answer with a name
 * no gateway accepts ("ticket.submit", a thousand characters), which the loop
 * refuses, but the conversation still echoes its turn back, and a strict
 * gateway rejects the whole request for such a name. The call id, not the
 * name, ties a result to its call. A name in the wire pattern is kept.
 *
 * @since 0.2.0
 * @category constructors
 */
export const echoSafe = (name: string): string =>
  wirePattern.test(name) ? name : (name.replace(/[^a-zA-Z0-9_-]/g, "_").slice(0, maxWireLength) || "invalid_name")

/**
 * The tool name of a wire name: every `__` becomes `.`.
 *
 * @example
 * import { Wire } from "@graded/core"
 * Wire.fromWire("kb__search") // "kb.search"
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromWire = (wire: string): string => wire.replaceAll("__", ".")

/**
 * The message for a name that breaks the naming rule. The type-level check
 * (`Wire.ValidName`) produces the same text.
 *
 * @since 0.1.0
 * @category errors
 */
export const invalidNameMessage = <const Name extends string>(name: Name): InvalidNameMessage<Name> =>
  `Tool name '${name}' is invalid: write it as <domain>.<capability>, each segment letters and digits joined by a single - or _`

/**
 * The compile error `Wire.ValidName` gives for a name that breaks the naming
 * rule; `invalidNameMessage` writes the same text.
 *
 * @since 0.1.0
 * @category errors
 */
export type InvalidNameMessage<Name extends string> =
  `Tool name '${Name}' is invalid: write it as <domain>.<capability>, each segment letters and digits joined by a single - or _`

/**
 * The message for a name whose wire form is longer than OpenAI accepts.
 *
 * @since 0.1.0
 * @category errors
 */
export const tooLongMessage = <const Name extends string>(name: Name): TooLongMessage<Name> =>
  `Tool name '${name}' is too long: its wire form must fit in 64 characters`

/**
 * The compile error `Wire.ValidName` gives for a name whose wire form is too
 * long; `tooLongMessage` writes the same text.
 *
 * @since 0.1.0
 * @category errors
 */
export type TooLongMessage<Name extends string> =
  `Tool name '${Name}' is too long: its wire form must fit in 64 characters`

/**
 * Checks a tool name at run time; returns the message naming what is wrong,
 * or `undefined` when the name is valid.
 *
 * @since 0.1.0
 * @category guards
 */
export const checkName = (name: string): string | undefined => {
  if (!validName.test(name)) return invalidNameMessage(name)
  if (toWire(name).length > maxWireLength) return tooLongMessage(name)
  return undefined
}

type Letter = "a" | "b" | "c" | "d" | "e" | "f" | "g" | "h" | "i" | "j" | "k" | "l" | "m" | "n" | "o" | "p" | "q" | "r"
  | "s" | "t" | "u" | "v" | "w" | "x" | "y" | "z" | "A" | "B" | "C" | "D" | "E" | "F" | "G" | "H" | "I" | "J" | "K"
  | "L" | "M" | "N" | "O" | "P" | "Q" | "R" | "S" | "T" | "U" | "V" | "W" | "X" | "Y" | "Z"
type Alnum = Letter | "0" | "1" | "2" | "3" | "4" | "5" | "6" | "7" | "8" | "9"

// One pass over the characters. `Prev` is what came before: "start", an
// alphanumeric, a separator ("-" or "_") or a dot. `Wire` counts the wire
// length (a dot counts twice); `Dot` records that the name has a domain.
// The count grows by one or two, so past 64 it is 65 or 66 (a dot after
// the 64th character jumps from 64 to 66): the scan stops there, early.
type Scan<S extends string, Prev extends string, Dot extends boolean, Wire extends ReadonlyArray<0>> =
  Wire["length"] extends 65 | 66 ? "long"
    : S extends `${infer C}${infer Rest}` ? C extends Alnum ? Scan<Rest, "alnum", Dot, [...Wire, 0]>
      : Prev extends "alnum" ? C extends "-" | "_" ? Scan<Rest, "sep", Dot, [...Wire, 0]>
        : C extends "." ? Scan<Rest, "dot", true, [...Wire, 0, 0]>
        : "invalid"
      : "invalid"
    : Prev extends "alnum" ? Dot extends true ? "ok" : "invalid"
    : "invalid"

/**
 * `Name` when it is a valid tool name, otherwise the message that says why.
 * A name typed as plain `string`, or as a pattern like `${string}.search`, is
 * checked at construction instead.
 *
 * @since 0.1.0
 * @category utility types
 */
export type ValidName<Name extends string> = string extends Name ? Name
  // A pattern such as `${string}.search` is not one name: it is checked at construction.
  : {} extends Record<Name, 1> ? Name
  : Scan<Name, "start", false, []> extends infer Verdict ? Verdict extends "ok" ? Name
    : Verdict extends "long" ? TooLongMessage<Name>
    : InvalidNameMessage<Name>
  : never
