// Which characters are shown as escapes, and how: the rules behind
// `Printable.escape` and `Printable.hidden`, and the display model
// (internal/display.ts). Imported by Printable.ts and internal/display.ts.

// Characters that reorder or hide text, by Unicode property rather than by
// list, so a new Unicode version's are covered too: the default-ignorable code
// points (which a renderer draws as nothing when it has no glyph for them:
// zero-width characters, variation selectors, Hangul fillers, tags, and
// the unassigned ones kept for more), the format characters (bidirectional
// controls among them), the object replacement character, and the braille
// blank (a letter drawn as a space). packages/confirm/test/hiddenCharacters.test.ts
// draws every code point in Chromium and checks each one drawn as nothing is here.
// One exception: the text or emoji presentation selector (U+FE0E, U+FE0F)
// right after an emoji is how that emoji is drawn (❤️), one per emoji, and
// carries no hidden text; a second one, or one after anything else, is flagged.
export const hiddenSource =
  "(?<!\\p{Emoji})[\\uFE0E\\uFE0F]|(?![\\uFE0E\\uFE0F])[\\p{Default_Ignorable_Code_Point}\\p{Cf}\\uFFFC\\u2800]"
const hiddenPattern = new RegExp(hiddenSource, "gu")

// Control characters (C0, DEL, C1), including ESC, which starts every ANSI
// escape: escaping ESC leaves the rest of the sequence as plain text. Line
// separators (U+2028, U+2029) end a line in some terminals and viewers.
const controlSource = "[\\u0000-\\u0008\\u000B-\\u001F\\u007F-\\u009F\\u2028\\u2029]"

/**
 * Every character shown as an escape in text with line breaks (tabs and line
 * breaks stay), as a pattern's source: one pass, so an escape written for one
 * character is not what another is judged after. The confirm page's script
 * uses this very pattern, so it marks what the server flags.
 */
export const escapedSource = `${controlSource}|${hiddenSource}`
const escapedPattern = new RegExp(escapedSource, "gu")

// Each UTF-16 unit as `\uXXXX`: a character outside the first plane is two,
// which JSON and JavaScript both read back as that character.
const code = (char: string): string => {
  let escaped = ""
  for (let i = 0; i < char.length; i++) {
    escaped += `\\u${char.charCodeAt(i).toString(16).toUpperCase().padStart(4, "0")}`
  }
  return escaped
}

export const hidden = (text: string): ReadonlyArray<string> => [...new Set(text.match(hiddenPattern) ?? [])].map(code)

export const escape = (text: string, options?: { readonly multiline?: boolean }): string => {
  const multiline = options?.multiline === true
  const source = multiline ? text.replace(/\r\n/g, "\n") : text
  const visible = source.replace(escapedPattern, code)
  return multiline ? visible : visible.replace(/\n/g, "\\n")
}
