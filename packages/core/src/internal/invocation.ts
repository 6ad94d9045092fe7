import { FiberRef } from "effect"
import type { Context } from "../Invocation.js"

export const initial: Context = { autonomous: false }

// Shared with Audit, which reads it straight from the fiber on its hot path.
export const currentRef: FiberRef.FiberRef<Context> = FiberRef.unsafeMake(initial)
