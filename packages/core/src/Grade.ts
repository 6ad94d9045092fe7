/**
 * The side-effect grade of a tool, decided by two questions: can it be undone,
 * and do people outside see it at once?
 *
 * | grade   | undo?                 | seen outside at once? | who may trigger it                       |
 * |---------|-----------------------|-----------------------|------------------------------------------|
 * | `read`  | nothing to undo       | no                    | anyone, an autonomous model included     |
 * | `write` | mostly (edit, delete) | later, if at all      | a human, or a fixed flow a human started |
 * | `send`  | no                    | yes                   | a human who confirmed the exact payload  |
 *
 * @since 0.1.0
 */
import type { SendCapability, WriteCapability } from "./Capability.js"

/**
 * @since 0.1.0
 * @category models
 */
export type Grade = "read" | "write" | "send"

/**
 * All grades, from least to most consequential.
 *
 * @since 0.1.0
 * @category constructors
 */
export const all: ReadonlyArray<Grade> = ["read", "write", "send"]

/**
 * The capability a grade's `invoke` requires.
 *
 * @since 0.1.0
 * @category utility types
 */
export type Capability<G extends Grade> = G extends "write" ? WriteCapability
  : G extends "send" ? SendCapability
  : never

/**
 * The name of the capability a grade requires, for messages.
 *
 * @since 0.1.0
 * @category utility types
 */
export type CapabilityName<G extends Grade> = G extends "write" ? "WriteCapability"
  : G extends "send" ? "SendCapability"
  : never

/**
 * @since 0.1.0
 * @category constructors
 */
export const capabilityName = <G extends Grade>(grade: G): CapabilityName<G> | undefined =>
  (grade === "write" ? "WriteCapability" : grade === "send" ? "SendCapability" : undefined) as
    | CapabilityName<G>
    | undefined
