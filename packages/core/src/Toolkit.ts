/**
 * A toolkit is an ordered set of tools with unique names. Its type keeps every
 * tool, so the agent loop can tell at compile time which of them write or
 * send.
 *
 * @since 0.1.0
 */
import { Data } from "effect"
import { pipeArguments, type Pipeable } from "effect/Pipeable"
import { isMade } from "./internal/tool.js"
import * as Tool from "./Tool.js"
import { checkName, type ValidName } from "./Wire.js"

/**
 * The key that marks a value as a toolkit; `Toolkit.isToolkit` checks for it.
 *
 * @since 0.1.0
 * @category symbols
 */
export const TypeId: unique symbol = Symbol.for("@graded/core/Toolkit")

/**
 * @since 0.1.0
 * @category symbols
 */
export type TypeId = typeof TypeId

/**
 * An ordered set of tools with unique names whose type keeps each tool: what
 * `Agent.run`, `Registry.make` and `Proposal.approve` take.
 *
 * @since 0.1.0
 * @category models
 */
export interface Toolkit<Tools extends ReadonlyArray<Tool.Any>> extends Pipeable {
  readonly [TypeId]: TypeId
  /** The tools, in the order they were given. */
  readonly tools: Tools
  /** Looks a tool up by its name (not its wire name). */
  readonly get: (name: string) => Tools[number] | undefined
}

/**
 * Any toolkit, for constraints.
 *
 * @since 0.1.0
 * @category models
 */
export interface Any extends Toolkit<ReadonlyArray<Tool.Any>> {}

/**
 * The tools of a toolkit, as a tuple.
 *
 * @since 0.1.0
 * @category utility types
 */
export type Tools<T extends Any> = T["tools"]

/**
 * Everything the tools of a toolkit require when invoked, capabilities included.
 *
 * @since 0.1.0
 * @category utility types
 */
export type Requirements<T extends Any> = Tool.Requirements<T["tools"][number]>

/**
 * Whether a value is a toolkit (it carries `Toolkit.TypeId`), for code that
 * gets one from an untyped place.
 *
 * @since 0.1.0
 * @category guards
 */
export const isToolkit = (u: unknown): u is Any => typeof u === "object" && u !== null && TypeId in u

/**
 * Thrown when a toolkit is made with a duplicate or invalid name that the
 * type system could not see.
 *
 * @since 0.1.0
 * @category errors
 */
export class InvalidToolkit extends Data.TaggedError("@graded/core/Toolkit/InvalidToolkit")<{
  readonly tool: string
  readonly message: string
}> {}

/**
 * The message for two tools of one name.
 *
 * @since 0.1.0
 * @category errors
 */
export const duplicateMessage = <const Name extends string>(name: Name): DuplicateMessage<Name> =>
  `Tool name '${name}' is used by more than one tool in this toolkit`

/**
 * The message for a tool that Tool.read, Tool.write or Tool.send did not make
 * (a copy, or a tool with a part replaced).
 *
 * @since 0.1.0
 * @category errors
 */
export const notMadeMessage = (name: string): string =>
  `Tool '${name}' was not made by Tool.read, Tool.write or Tool.send: a copy or a changed tool loses its gates`

/**
 * The compile error for two tools of one name in a toolkit; `duplicateMessage`
 * writes the same text at run time.
 *
 * @since 0.1.0
 * @category errors
 */
export type DuplicateMessage<Name extends string> = `Tool name '${Name}' is used by more than one tool in this toolkit`

/**
 * The compile error for a tool whose grade is `never`: two tools merged into
 * one (`Object.assign`, an intersection) have no single grade.
 *
 * @since 0.1.0
 * @category errors
 */
export type NoGradeMessage<Name extends string> =
  `${Name} has no single grade (its grade is never): make each tool with Tool.read, Tool.write or Tool.send, and do not merge tools`

/**
 * The compile error for a place in the toolkit whose tool has type `never`
 * (two tools merged so that nothing is left of either).
 *
 * @since 0.1.0
 * @category errors
 */
export type NeverToolMessage<Index extends string> =
  `The tool at index ${Index} has type never: make each tool with Tool.read, Tool.write or Tool.send, and do not merge tools`

// One pass, accumulating the names seen: linear in the number of tools.
// Extract, not `extends`: a tool named by a union of literals repeats a name
// when any member of its union was seen, in either order.
type Duplicates<Tools, Seen = never, Dups = never> = Tools extends readonly [infer H extends Tool.Any, ...infer Rest]
  ? Duplicates<Rest, Seen | H["name"], Dups | Extract<H["name"], Seen>>
  : Dups

type Invalid<Tools extends ReadonlyArray<Tool.Any>> = Tools[number] extends infer T
  ? T extends Tool.Any ? ValidName<T["name"]> extends T["name"] ? never : T["name"] : never
  : never

// The names of the tools whose grade is `never`. `Extract` costs the compiler
// less than a hand-written distribution; a tool typed `any` (which would match)
// counts as having a grade, as it always did.
type NoGrade<Tools extends ReadonlyArray<Tool.Any>> = 0 extends 1 & Tools[number] ? never
  : Extract<Tools[number], { readonly grade: never }>["name"]

// The places of a tuple whose tool is `never`. `Tools[number]` cannot show
// them: a union drops `never`. The places are the keys that are numerals.
type NeverPlaces<Tools extends ReadonlyArray<unknown>> = (keyof Tools & `${number}`) extends infer K extends keyof Tools
  ? K extends unknown ? [Tools[K]] extends [never] ? K : never : never
  : never

type Mark<Tools, Dups> = {
  [K in keyof Tools]: Tools[K] extends Tool.Any ? [Tools[K]["grade"]] extends [never] ? NoGradeMessage<Tools[K]["name"]>
    : [Extract<Tools[K]["name"], Dups>] extends [never]
      ? ValidName<Tools[K]["name"]> extends Tools[K]["name"] ? Tools[K] : ValidName<Tools[K]["name"]>
    : DuplicateMessage<Extract<Tools[K]["name"], Dups>>
    : Tools[K]
}

// Past 100 tools only the linear checks run (see below).
type Big<Tools> = [Tools] extends [{ readonly 100: unknown }] ? true : false

// Shaped so that the compiler still sees a list in the result (a rest
// parameter must be one): most other arrangements of the same checks hide it.
type Checked<Tools extends ReadonlyArray<Tool.Any>> = (Big<Tools> extends true ? never : Duplicates<Tools>) extends
  infer Dups
  ? NoGrade<Tools> extends infer NoGrades
    ? [Dups | (Big<Tools> extends true ? never : Invalid<Tools>) | NoGrades] extends [never] ? Tools
    : Mark<Tools, Dups>
  : never
  : never

/**
 * `Tools` when every name is valid and unique and every tool has one grade;
 * otherwise each offending tool is replaced by the message that names it, so
 * the error lands on that tool. A tool of type `never` cannot be refused
 * where it stands (`never` fits any parameter), so the argument list is
 * asked for a property named by the message instead.
 *
 * @since 0.1.0
 * @category utility types
 */
export type Valid<Tools extends ReadonlyArray<Tool.Any>> = [NeverPlaces<Tools>] extends [never] ? Checked<Tools>
  : Checked<Tools> & { readonly [P in NeverPlaces<Tools> as NeverToolMessage<P & string>]: P }

// The duplicate check above costs the compiler time in the square of the
// number of tools. Past 100, names are checked where the toolkit is made
// instead (and still where each tool is defined); the grade and `never`
// checks, linear, still run: 500 tools must compile.

const Proto = {
  [TypeId]: TypeId,
  pipe() {
    return pipeArguments(this, arguments)
  }
}

const build = <Tools extends ReadonlyArray<Tool.Any>>(tools: Tools): Toolkit<Tools> => {
  const byName = new Map<string, Tools[number]>()
  for (const tool of tools) {
    // A copy of a tool, or a tool with a part swapped, lost the gates its
    // constructor built in: only tools made by Tool.read/write/send count.
    if (!isMade(tool)) {
      throw new InvalidToolkit({ tool: String(tool?.name), message: notMadeMessage(String(tool?.name)) })
    }
    const problem = checkName(tool.name)
    if (problem !== undefined) throw new InvalidToolkit({ tool: tool.name, message: problem })
    if (byName.has(tool.name)) throw new InvalidToolkit({ tool: tool.name, message: duplicateMessage(tool.name) })
    byName.set(tool.name, tool)
  }
  return Object.freeze(
    Object.assign(Object.create(Proto), { tools: Object.freeze([...tools]), get: (name: string) => byName.get(name) })
  )
}

/**
 * Makes a toolkit. Two tools of one name (a union of names included), a name
 * that breaks the wire mapping, a tool whose grade is `never` and a tool of
 * type `never` (two tools merged) fail to compile; where the names are not
 * literal types, they throw `InvalidToolkit` here.
 *
 * @example
 * import { Effect, Schema } from "effect"
 * import { Tool, Toolkit } from "@graded/core"
 *
 * const Ping = Tool.read("net.ping", {
 *   title: "Ping", description: "Answers pong.",
 *   input: Schema.Struct({}), output: Schema.String,
 *   run: () => Effect.succeed("pong")
 * })
 * const toolkit = Toolkit.make(Ping)
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = <const Tools extends ReadonlyArray<Tool.Any>>(...tools: Valid<Tools>): Toolkit<Tools> =>
  build(tools as Tools)

/**
 * The read tools of a list of tools. Kept as a list, not a tuple: filtering a
 * tuple costs the compiler time in the square of its length.
 *
 * @since 0.1.0
 * @category utility types
 */
export type ReadTools<Tools extends ReadonlyArray<Tool.Any>> = ReadonlyArray<
  Extract<Tools[number], { readonly grade: "read" }>
>

/**
 * The same toolkit with its read tools only: what an autonomous loop may be
 * given.
 *
 * @example
 * import { Toolkit } from "@graded/core"
 * declare const support: Toolkit.Any
 * const forTheAgent = Toolkit.readOnly(support)
 *
 * @since 0.1.0
 * @category combinators
 */
export const readOnly = <Tools extends ReadonlyArray<Tool.Any>>(
  toolkit: Toolkit<Tools>
): Toolkit<ReadTools<Tools>> =>
  build(toolkit.tools.filter((tool) => tool.grade === "read") as unknown as ReadTools<Tools>)
