import { Context } from "effect"
import { sealed } from "./seal.js"

/** A tool's compliance tags and declared side effects, stamped on every entry of its calls. */
export interface Labels {
  readonly tool: string
  readonly tags: ReadonlyArray<string> | undefined
  readonly sideEffects: ReadonlyArray<string> | undefined
}

// Its own module: the audit stamps entries from it, and a tool's code must
// not leave a value in it for its caller (invocation.ts puts it back).
export const labelsRef: Context.Reference<Labels | undefined> = sealed(
  Context.Reference<Labels | undefined>("@graded/core/Audit/labels", { defaultValue: () => undefined })
)
