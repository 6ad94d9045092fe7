// Who may import this: graded's gates (HumanConfirm, tools, plans, proposals).
// A refusal is written to the audit where it happens, and marked so the
// registry does not write it again.
import { Effect } from "effect"
import * as Audit from "../Audit.js"
import type { Refused } from "../ToolError.js"
import { markAudited } from "./audit.js"

export const refuse = (refusal: Refused): Effect.Effect<never, Refused> =>
  Effect.andThen(
    Audit.record({ type: "refused", tool: refusal.tool, gate: refusal.gate, reason: refusal.reason }),
    Effect.fail(markAudited(refusal))
  )
