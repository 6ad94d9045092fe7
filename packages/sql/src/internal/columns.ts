// How the dialects' numbered columns read back: a row number is a number from
// SQLite, a bigint from PostgreSQL's BIGINT (@effect/sql-pg 4), or digits
// from a client of the app's own (Sql.layer) that reads BIGINT as text.
// Who may import this: the stores (proposalStore.ts, runStore.ts, fallbackStore.ts).
import { Schema, SchemaTransformation } from "effect"

export const RowNumber = Schema.Union([
  Schema.Number,
  Schema.BigInt.pipe(
    Schema.decodeTo(Schema.Number, SchemaTransformation.transform({ decode: Number, encode: BigInt }))
  ),
  Schema.NumberFromString
])
