// How a value a tool encoded (input, payload, output) or an audit entry
// becomes column text and back: JSON, with NULL for `undefined`, so `null`
// and "absent" stay apart. bigint becomes its digits, as in Audit.jsonl, so a
// value JSON cannot hold does not lose the row.
// Who may import this: this package's internal modules.

const replacer = (_key: string, value: unknown) => typeof value === "bigint" ? value.toString() : value

export const toJson = (value: unknown): string | null =>
  value === undefined ? null : JSON.stringify(value, replacer) ?? null

export const fromJson = (text: string | null): unknown => text === null ? undefined : JSON.parse(text)
