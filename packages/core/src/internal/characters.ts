// Which characters are shown as escapes, and how: the rules behind
// `Printable.escape` and `Printable.hidden`, and the display model
// (internal/display.ts). Imported by Printable.ts and internal/display.ts.

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

export const hidden = (text: string): ReadonlyArray<string> => [...new Set(text.match(hiddenPattern) ?? [])].map(code)

export const escape = (text: string, options?: { readonly multiline?: boolean }): string => {
  const multiline = options?.multiline === true
  const source = multiline ? text.replace(/\r\n/g, "\n") : text
  const visible = source.replace(controlPattern, code).replace(hiddenPattern, code)
  return multiline ? visible : visible.replace(/\n/g, "\\n")
}
