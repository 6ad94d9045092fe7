/**
 * Trimming happens inside the tool: what reaches the model is the output
 * encoded with its schema (undeclared fields dropped), arrays cut to
 * `maxItems`, and the whole result within `maxChars`, always as valid JSON
 * with a marker the model can see. Cutting the JSON text instead would hand
 * the model broken syntax, which it would then explain with confidence.
 *
 * @since 0.1.0
 */

/**
 * The limit on a result's serialized length when a tool sets none.
 *
 * @since 0.1.0
 * @category constructors
 */
export const defaultMaxChars = 4000

/**
 * What `Trim.fit` returns: the value to show the model, and what was cut, in
 * words.
 *
 * @since 0.1.0
 * @category models
 */
export interface Trimmed {
  /** The value the model sees. */
  readonly value: unknown
  /** What was cut, in words; `undefined` when nothing was. */
  readonly truncated: string | undefined
}

const cutString = (text: string, cap: number): string =>
  text.length <= cap ? text : `${text.slice(0, cap)}… [${text.length - cap} more characters cut]`

const itemsNote = (cut: number) => `[${cut} more items cut]`

interface Caps {
  readonly items: number
  readonly chars: number
}

// A copy of `value` with every array cut to `caps.items` and every string to
// `caps.chars`, recording what was cut.
const shrink = (value: unknown, caps: Caps, cuts: { items: number; chars: number }): unknown => {
  if (typeof value === "string") {
    if (value.length > caps.chars) cuts.chars += value.length - caps.chars
    return cutString(value, caps.chars)
  }
  if (Array.isArray(value)) {
    const kept = value.slice(0, caps.items).map((item) => shrink(item, caps, cuts))
    if (value.length > caps.items) {
      cuts.items += value.length - caps.items
      kept.push(itemsNote(value.length - caps.items))
    }
    return kept
  }
  if (typeof value === "object" && value !== null) {
    const out: Record<string, unknown> = {}
    for (const [key, item] of Object.entries(value)) out[key] = shrink(item, caps, cuts)
    return out
  }
  return value
}

const describeCuts = (cuts: { items: number; chars: number }, maxItems: number | undefined): string | undefined => {
  const parts: Array<string> = []
  if (cuts.items > 0) {
    parts.push(`${cuts.items} array item(s) cut${maxItems !== undefined ? ` (at most ${maxItems} per list)` : ""}`)
  }
  if (cuts.chars > 0) parts.push(`${cuts.chars} character(s) of text cut`)
  return parts.length > 0 ? `The result was trimmed: ${parts.join(", ")}.` : undefined
}

/**
 * Trims a JSON-safe value so that `render(value, truncated)` fits in
 * `maxChars`. `render` is what the model will see; the limit applies to it.
 * Throws only if `value` cannot be serialized at all (a cycle, a bigint).
 *
 * @example
 * import { Trim } from "@graded/core"
 * const { value, truncated } = Trim.fit(Array.from({ length: 100 }, (_, i) => i), {
 *   maxItems: 5,
 *   maxChars: 4000,
 *   render: (value) => JSON.stringify(value)
 * })
 *
 * @since 0.1.0
 * @category constructors
 */
export const fit = (
  value: unknown,
  options: {
    readonly maxItems?: number | undefined
    readonly maxChars?: number | undefined
    readonly render: (value: unknown, truncated: string | undefined) => string
  }
): Trimmed => {
  const maxChars = options.maxChars ?? defaultMaxChars
  const fits = (candidate: unknown, truncated: string | undefined) =>
    options.render(candidate, truncated).length <= maxChars
  let caps: Caps = { items: options.maxItems ?? Number.MAX_SAFE_INTEGER, chars: Number.MAX_SAFE_INTEGER }
  let cuts = { items: 0, chars: 0 }
  let candidate = shrink(value, caps, cuts)
  let truncated = describeCuts(cuts, options.maxItems)
  if (fits(candidate, truncated)) return { value: candidate, truncated }
  // Too long: tighten the caps until it fits. Start from the sizes that
  // matter; each step halves one cap, so this ends in a few dozen steps.
  caps = { items: Math.min(caps.items, longestArray(value)), chars: Math.min(maxChars, longestString(value)) }
  for (let step = 0; step < 64 && (caps.items > 0 || caps.chars > 0); step++) {
    caps = caps.chars >= 64 && (caps.chars >= caps.items * 8 || caps.items === 0)
      ? { ...caps, chars: Math.floor(caps.chars / 2) }
      : caps.items > 0
      ? { ...caps, items: Math.floor(caps.items / 2) }
      : { ...caps, chars: Math.floor(caps.chars / 2) }
    cuts = { items: 0, chars: 0 }
    candidate = shrink(value, caps, cuts)
    truncated = describeCuts(cuts, options.maxItems)
    if (fits(candidate, truncated)) return { value: candidate, truncated }
  }
  // Nothing left to cut that helps (say, thousands of keys): say so instead.
  const size = JSON.stringify(value).length
  const note = `The result was too large to show: ${size} characters.`
  return { value: null, truncated: note }
}

const longestArray = (value: unknown): number => {
  if (Array.isArray(value)) return value.reduce((max: number, item) => Math.max(max, longestArray(item)), value.length)
  if (typeof value === "object" && value !== null) {
    return Object.values(value).reduce((max: number, item) => Math.max(max, longestArray(item)), 0)
  }
  return 0
}

const longestString = (value: unknown): number => {
  if (typeof value === "string") return value.length
  if (Array.isArray(value)) return value.reduce((max: number, item) => Math.max(max, longestString(item)), 0)
  if (typeof value === "object" && value !== null) {
    return Object.values(value).reduce((max: number, item) => Math.max(max, longestString(item)), 0)
  }
  return 0
}
