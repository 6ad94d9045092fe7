// The deciders graded writes itself: an auto-approval rule (`rule:<id>`), an
// MCP client's form (`mcp:<client>`), this server (`web-confirm`, on a
// timeout or a close). A name typed by a person must not read as one of them
// in the audit, in any case or compatibility form: compared after NFKC, case
// folding and with invisible format characters taken out (`Web-Confirm`,
// `RULE:auto`, `ｍｃｐ:x`, `rule\u200B:x` are all reserved).
const prefixes = ["rule:", "mcp:"] as const
const names = ["web-confirm"] as const

const folded = (name: string): string =>
  name.normalize("NFKC").replace(/[\p{Cf}\p{Default_Ignorable_Code_Point}]/gu, "").toLowerCase().normalize("NFKC")
    .trim()

export const isReserved = (name: string): boolean => {
  const key = folded(name)
  return names.some((reserved) => key === reserved) || prefixes.some((prefix) => key.startsWith(prefix))
}

export const reservedReason = `by: "web-confirm" and names starting "rule:" or "mcp:" (in any case) are the ones ` +
  `graded records for its own deciders; type your own name`
