/**
 * Text a person reads, made safe to show. A tool name, a payload or a reason
 * may come from a model, a web client or a terminal; shown raw, control
 * characters and ANSI escapes can erase or forge lines, and bidirectional
 * overrides or zero-width characters can make `fdp.exe` read as `exe.pdf`.
 * Every human-readable rendering in graded (audit lines, confirm cards) goes
 * through this module, which shows such characters as visible escapes; what
 * a person is shown of a payload (its fields, each cut to a length, and the
 * hidden characters flagged) is its one display model, `display`.
 *
 * @since 0.1.0
 */
import * as characters from "./internal/characters.js"
import * as model from "./internal/display.js"
import { checkName } from "./Wire.js"

/**
 * The characters `escape` shows as escapes in text with line breaks, as a
 * regular expression's source (use it with the `u` flag): for a page's own
 * script, which marks them where they stand and so marks what the server
 * flags. An emoji's own presentation selector (❤️) is not among them.
 *
 * @example
 * import { Printable } from "@graded/core"
 * new RegExp(Printable.escapedSource, "gu").test("a\u200Bb") // true
 *
 * @since 0.1.0
 * @category guards
 */
export const escapedSource: string = characters.escapedSource

/**
 * The characters of `text` that reorder or hide what is shown (bidirectional
 * controls, zero-width characters), as visible escapes (`\u202E`), once each
 * in the order found; empty when there are none. A confirm UI flags a card
 * that has any.
 *
 * @example
 * import { Printable } from "@graded/core"
 * Printable.hidden("invoice\u202Efdp.exe") // ["\\u202E"]
 *
 * @since 0.1.0
 * @category guards
 */
export const hidden = (text: string): ReadonlyArray<string> => characters.hidden(text)

/**
 * `text` with every control, ANSI and bidirectional or zero-width character
 * shown as a visible escape (`\u001B`, `\u202E`), so what a person reads is
 * what the text holds. Tabs are kept; line breaks are kept when
 * `multiline` is set (a payload's text), and shown as `\n` otherwise (an
 * audit line, a name).
 *
 * @example
 * import { Printable } from "@graded/core"
 * Printable.escape("ok\u001B[2K\rDELIVERED") // "ok\\u001B[2K\\u000DDELIVERED"
 *
 * @since 0.1.0
 * @category constructors
 */
export const escape = (text: string, options?: { readonly multiline?: boolean }): string =>
  characters.escape(text, options)

/**
 * The longest name kept when a name is not a valid tool name.
 *
 * @since 0.1.0
 * @category models
 */
export const maxNameLength = 100

/**
 * A name as the audit stores it: a valid tool name as it is; anything else (a
 * model's invented name, a web client's identity) escaped and cut to
 * `maxNameLength` characters, with `…` marking the cut.
 *
 * @example
 * import { Printable } from "@graded/core"
 * Printable.name("kb.search") // "kb.search"
 * Printable.name("x\nDELIVERED") // "x\\nDELIVERED"
 *
 * @since 0.1.0
 * @category constructors
 */
export const name = (text: string): string => {
  if (checkName(text) === undefined && text.length <= maxNameLength) return text
  const escaped = escape(text)
  return escaped.length <= maxNameLength ? escaped : `${escaped.slice(0, maxNameLength - 1)}…`
}

/**
 * `text` cut to at most `max` characters for display, and whether it was cut,
 * so a UI can say so rather than show a part as if it were the whole.
 *
 * @since 0.1.0
 * @category constructors
 */
export const cap = (text: string, max: number): { readonly text: string; readonly cut: number } =>
  text.length <= max ? { text, cut: 0 } : { text: text.slice(0, max), cut: text.length - max }

/**
 * How much of a value `display` shows: at most `field` characters of any one
 * text (a string value or a key), and `total` characters of the whole value,
 * counted as each text's length, each other value's shown length, and one for
 * each container. Either left out is no limit.
 *
 * @since 0.2.0
 * @category models
 */
export interface DisplayLimits {
  readonly field?: number | undefined
  readonly total?: number | undefined
}

/**
 * One entry of a display, in the order a person reads them: a container
 * (`object`, `array`) opens and its members follow, one level deeper; a
 * `rest` entry says the total ran out there and nothing after it is listed.
 *
 * @since 0.2.0
 * @category models
 */
export interface DisplayField {
  /** The keys and indexes from the value to this entry, as they are; `[]` for the value itself. */
  readonly path: ReadonlyArray<string | number>
  /** The last key, as `text` is shown (escaped, cut); undefined for the value itself and array items. */
  readonly key: string | undefined
  /** How many characters of the key were left out. */
  readonly keyCut: number
  readonly kind: "string" | "number" | "boolean" | "null" | "object" | "array" | "circular" | "other" | "rest"
  /**
   * What to show, escaped by `escape`'s rules with every backslash doubled
   * (so each `\u202E` a person reads is one graded made): a string's kept
   * part; a number, boolean or null as JSON writes it; `{}` or `[]` for an
   * empty container; empty for a container with members, a cycle and `rest`.
   */
  readonly text: string
  /** The characters of the whole value (a string's length, the shown length of anything else). */
  readonly length: number
  /** How many characters of the value were left out: 0 when it is shown whole. */
  readonly cut: number
  /**
   * The characters that hide or reorder text, or are controls, in the key and
   * (for a leaf) the whole value, the cut part included; a container's
   * members list their own.
   */
  readonly hidden: ReadonlyArray<string>
  /** Whether `text` holds line breaks, to be drawn as lines. */
  readonly multiline: boolean
}

/**
 * What a person is shown of a value: the one model every surface renders
 * (the web and terminal cards, the MCP form, the audit's lines). Plain,
 * frozen and serialisable.
 *
 * @since 0.2.0
 * @category models
 */
export interface Display {
  readonly fields: ReadonlyArray<DisplayField>
  /** Every character anywhere in the value (shown or cut, keys included) that `escape` shows as an escape, once each. */
  readonly hidden: ReadonlyArray<string>
  /** Whether anything was left out: such a display cannot be approved. */
  readonly cut: boolean
  /** The characters shown, and of how many, as `DisplayLimits` counts them. */
  readonly shown: number
  readonly total: number
}

/**
 * What a person is shown of `value` (a payload as its schema encodes it, or
 * a card's text): its entries in order with their paths, each escaped and
 * cut to `limits`, the characters that hide or reorder text (and the
 * controls) each holds, and whether anything was cut. A surface draws this
 * and decides nothing: it passes the limits its screen needs.
 *
 * @example
 * import { Printable } from "@graded/core"
 * const shown = Printable.display({ to: "a\u202Eb", text: "x".repeat(50) }, { field: 10 })
 * shown.hidden // ["\\u202E"]
 * shown.fields[2] // { path: ["text"], text: "xxxxxxxxxx", cut: 40, ... }
 *
 * @since 0.2.0
 * @category constructors
 */
export const display = (value: unknown, limits?: DisplayLimits): Display => model.display(value, limits)

/**
 * A display drawn as plain lines, as the terminal card and the MCP form show a
 * payload: a key and its value, members indented (deeper than 12 levels the
 * depth is written, `13› `), a text's line breaks behind a gutter (`┆`) that
 * no payload can draw, a cut text followed by `[showing n of m characters]`,
 * and where the total ran out, `[… the rest of the payload is not shown]`.
 * Given a `width`, each line is cut into rows of at most that many columns as
 * `rows` cuts them, so a terminal never wraps one itself.
 *
 * @example
 * import { Printable } from "@graded/core"
 * Printable.lines(Printable.display({ to: "ops", body: "a\nb" }))
 * // ['"to": "ops"', '"body":', '  ┆ a', '  ┆ b']
 *
 * @since 0.2.0
 * @category rendering
 */
export const lines = (shown: Display, options?: { readonly width?: number | undefined }): ReadonlyArray<string> =>
  model.lines(shown, options?.width)

/**
 * Text a person reads on a terminal `width` columns wide, as the rows to
 * print: escaped as `escape` does (line breaks kept, each line a row), and a
 * line wider than `width` cut into rows, each after the first behind the
 * line's indentation and `↳ `. A terminal that wraps a long line itself
 * starts the wrapped part at its left edge, where a padded reason or payload
 * could draw a row of the surface's own (an audit entry, a proposal, a card's
 * field); a row from here never reaches the edge. Columns are counted high (a
 * character outside the narrow scripts as two, a tab as eight).
 *
 * @example
 * import { Printable } from "@graded/core"
 * Printable.rows("REFUSED x: " + "y".repeat(30), 24)
 * // ["REFUSED x: yyyyyyyyyyyyy", "  ↳ yyyyyyyyyyyyyyyyy"]
 *
 * @since 0.2.0
 * @category rendering
 */
export const rows = (text: string, width: number): ReadonlyArray<string> => model.rows(text, width)
