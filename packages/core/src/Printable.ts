/**
 * Text a person reads, made safe to show. A tool name, a payload or a reason
 * may come from a model, a web client or a terminal; shown raw, control
 * characters and ANSI escapes can erase or forge lines, and bidirectional
 * overrides or zero-width characters can make `fdp.exe` read as `exe.pdf`.
 * Every human-readable rendering in graded (audit lines, confirm cards) goes
 * through this module, which shows such characters as visible escapes.
 *
 * @since 0.1.0
 */
import { checkName } from "./Wire.js"

// Characters that reorder or hide text: the bidirectional embeddings,
// overrides, isolates and marks, the zero-width characters, and the other
// format characters a terminal or a browser draws as nothing (the soft
// hyphen, the Mongolian vowel separator, the deprecated format controls, the
// interlinear annotation controls, the shorthand format controls, the musical
// beam and phrase controls, and the tag characters, which can spell a whole
// hidden sentence).
const hiddenPattern =
  /[\u00AD\u061C\u180E\u200B-\u200F\u202A-\u202E\u2060-\u2064\u2066-\u206F\uFEFF\uFFF9-\uFFFB\u{1BCA0}-\u{1BCA3}\u{1D173}-\u{1D17A}\u{E0001}\u{E0020}-\u{E007F}]/gu

// Control characters (C0, DEL, C1), including ESC, which starts every ANSI
// escape: escaping ESC leaves the rest of the sequence as plain text. Line
// separators (U+2028, U+2029) end a line in some terminals and viewers.
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const controlPattern = /[\u0000-\u0008\u000B-\u001F\u007F-\u009F\u2028\u2029]/g

// Each UTF-16 unit as `\uXXXX`: a character outside the first plane is two,
// which JSON and JavaScript both read back as that character.
const code = (char: string): string => {
  let escaped = ""
  for (let i = 0; i < char.length; i++) {
    escaped += `\\u${char.charCodeAt(i).toString(16).toUpperCase().padStart(4, "0")}`
  }
  return escaped
}

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
export const hidden = (text: string): ReadonlyArray<string> => [...new Set(text.match(hiddenPattern) ?? [])].map(code)

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
export const escape = (text: string, options?: { readonly multiline?: boolean }): string => {
  const multiline = options?.multiline === true
  const source = multiline ? text.replace(/\r\n/g, "\n") : text
  const visible = source.replace(controlPattern, code).replace(hiddenPattern, code)
  return multiline ? visible : visible.replace(/\n/g, "\\n")
}

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
