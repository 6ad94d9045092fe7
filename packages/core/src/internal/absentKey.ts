// Keys of a stored record whose value may be undefined, which its JSON copy
// leaves out (`JSON.stringify` drops them): Effect 3 read such a missing key
// back as undefined wherever its schema took undefined (`Schema.Unknown`,
// `Schema.UndefinedOr`), Effect 4 calls it missing. So the schemas a store
// decodes with (RunStore.State, Audit.Entry) read it back as it was written.
// Who may import this: graded's own schemas of stored records.
import { Effect, Schema } from "effect"

/** Any value, undefined when the key is absent (a call's input or output, an entry's payload). */
export const unknownKey = Schema.Unknown.pipe(Schema.withDecodingDefaultKey(Effect.succeed(undefined)))

/** Text or undefined, undefined when the key is absent (an entry's trace and actor). */
export const textOrUndefinedKey = Schema.UndefinedOr(Schema.String).pipe(
  Schema.withDecodingDefaultKey(Effect.succeed(undefined))
)
