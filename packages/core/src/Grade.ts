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
// Type-only: the capability types are defined a floor below; nothing here
// runs another module's code, so every module may use this table.
import { Schema } from "effect"
import type { HumanTrigger, SendCapability, WriteCapability } from "./Capability.js"

/**
 * The grades, from least to most consequential, as a schema (audit entries
 * and listings carry them across wires).
 *
 * @since 0.1.0
 * @category schemas
 */
export const schema = Schema.Literals(["read", "write", "send"])

/**
 * A tool's side-effect grade, `read`, `write` or `send`: it decides what the
 * tool's `invoke` requires and who may trigger it.
 *
 * @since 0.1.0
 * @category models
 */
export type Grade = typeof schema.Type

/**
 * All grades, from least to most consequential.
 *
 * @since 0.1.0
 * @category constructors
 */
export const all: ReadonlyArray<Grade> = schema.literals

/**
 * The grades a human (or a fixed flow a human started) must confirm: every
 * grade above `read`.
 *
 * @since 0.1.0
 * @category models
 */
export type Confirmable = Exclude<Grade, "read">

/**
 * Whether a grade needs a human's say (a confirmation, or a plan a human
 * started) before it happens: true for `write` and `send`.
 *
 * @since 0.1.0
 * @category guards
 */
export const isConfirmable = (grade: Grade): grade is Confirmable => grade !== "read"

/**
 * Where each grade stands, least consequential first: code running at a
 * grade may cause nothing ranked above it.
 *
 * @since 0.1.0
 * @category constructors
 */
export const rank: { readonly [G in Grade]: number } = { read: 0, write: 1, send: 2 }

/**
 * Whether something of grade `grade` may happen where `ceiling` is the most
 * that may.
 *
 * @since 0.1.0
 * @category guards
 */
export const within = (grade: Grade, ceiling: Grade): boolean => rank[grade] <= rank[ceiling]

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
 * The name of the capability a write or send grade requires, as text for
 * run-time messages (the registry's refusals) that match the compile errors.
 *
 * @since 0.1.0
 * @category constructors
 */
export const capabilityName = <G extends Confirmable>(grade: G): CapabilityName<G> =>
  (grade === "write" ? "WriteCapability" : "SendCapability") as CapabilityName<G>

/**
 * The parts of a definition whose code graded checks: a read or write tool's
 * `run`, a send tool's `prepare` and `deliver`, and the code in a tool's
 * schemas (a transformation's effect), which may cause nothing above a read.
 *
 * @since 0.1.0
 * @category models
 */
export type Part = "run" | "prepare" | "deliver" | "schema"

/**
 * What a part of a `G` tool may not require: a read tool's run none of the
 * built-in capabilities; a write tool's run no `SendCapability`; a send's
 * prepare neither capability.
 *
 * @since 0.1.0
 * @category utility types
 */
export type Forbidden<G extends Grade, P extends string> = G extends "read"
  ? WriteCapability | SendCapability | HumanTrigger
  : G extends "write" ? SendCapability
  : P extends "prepare" ? WriteCapability | SendCapability
  : never

/**
 * What to do about a part that needs what its grade forbids.
 *
 * @since 0.1.0
 * @category utility types
 */
export type Advice<G extends Grade, P extends string> = P extends "schema"
  ? "a schema only checks and converts values; do the effect in the tool's run or deliver"
  : G extends "read" ? "grade it Tool.write or Tool.send, or remove that call"
  : G extends "write" ? "grade it Tool.send, or remove that call"
  : P extends "prepare" ? "prepare only builds the payload; do the effect in deliver"
  : "remove that call"

/**
 * The same advice at run time.
 *
 * @since 0.1.0
 * @category constructors
 */
export const advice = <G extends Grade, P extends string>(grade: G, part: P): Advice<G, P> =>
  (part === "schema" ? "a schema only checks and converts values; do the effect in the tool's run or deliver"
    : grade === "read" ? "grade it Tool.write or Tool.send, or remove that call"
    : grade === "write" ? "grade it Tool.send, or remove that call"
    : part === "prepare" ? "prepare only builds the payload; do the effect in deliver"
    : "remove that call") as Advice<G, P>

/**
 * The compile error for a dishonest grade: the tool, its grade, the part of
 * its definition, what that part needs, and what to do about it.
 *
 * @since 0.1.0
 * @category errors
 */
export type GradeViolation<Name extends string, G extends Grade, P extends string, Caps extends string> =
  `${Name} is a ${G} tool, but its ${P} needs ${Caps}: ${Advice<G, P>}`

/**
 * The same message at run time: what a gate says when a tool's own code asks
 * for an effect above its grade.
 *
 * @since 0.1.0
 * @category errors
 */
export const gradeViolation = <
  const Name extends string,
  const G extends Grade,
  const P extends string,
  const Caps extends string
>(name: Name, grade: G, part: P, caps: Caps): GradeViolation<Name, G, P, Caps> =>
  `${name} is a ${grade} tool, but its ${part} needs ${caps}: ${advice(grade, part)}` as GradeViolation<
    Name,
    G,
    P,
    Caps
  >

/**
 * What keeps a tool out of an autonomous loop: it needs a capability only a
 * human gives. One entry of `Agent.AutonomousViolation`, and the reason the
 * registry gives when it hides the tool from a model.
 *
 * @since 0.1.0
 * @category errors
 */
export type Needs<Name extends string, G extends string, Caps extends string> = `${Name} (${G}) needs ${Caps}`

/**
 * The same text at run time.
 *
 * @since 0.1.0
 * @category errors
 */
export const needs = <const Name extends string, const G extends string, const Caps extends string>(
  name: Name,
  grade: G,
  caps: Caps
): Needs<Name, G, Caps> => `${name} (${grade}) needs ${caps}`
