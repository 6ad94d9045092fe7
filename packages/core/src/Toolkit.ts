/**
 * A toolkit is an ordered set of tools with unique names. Its type keeps every
 * tool, so the agent loop can tell at compile time which of them write or
 * send.
 *
 * @since 0.1.0
 */
import { Data } from "effect"
import { pipeArguments, type Pipeable } from "effect/Pipeable"
import * as Tool from "./Tool.js"
import { checkName, type ValidName } from "./Wire.js"

/**
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
 * @since 0.1.0
 * @category errors
 */
export type DuplicateMessage<Name extends string> = `Tool name '${Name}' is used by more than one tool in this toolkit`

// One pass, accumulating the names seen: linear in the number of tools.
type Duplicates<Tools, Seen = never, Dups = never> = Tools extends
  readonly [infer H extends Tool.Any, ...infer Rest] ?
  Duplicates<Rest, Seen | H["name"], H["name"] extends Seen ? Dups | H["name"] : Dups>
  : Dups

type Invalid<Tools extends ReadonlyArray<Tool.Any>> = Tools[number] extends infer T ?
  T extends Tool.Any ? ValidName<T["name"]> extends T["name"] ? never : T["name"] : never
  : never

type Mark<Tools, Dups> = {
  [K in keyof Tools]: Tools[K] extends Tool.Any ?
    Tools[K]["name"] extends Dups ? DuplicateMessage<Tools[K]["name"]>
    : ValidName<Tools[K]["name"]> extends Tools[K]["name"] ? Tools[K]
    : ValidName<Tools[K]["name"]>
    : Tools[K]
}

/**
 * `Tools` when every name is valid and unique; otherwise each offending tool
 * is replaced by the message that names it, so the error lands on that tool.
 *
 * @since 0.1.0
 * @category utility types
 */
export type Valid<Tools extends ReadonlyArray<Tool.Any>> = [Tools] extends [{ readonly 100: unknown }] ? Tools
  : Duplicates<Tools> extends infer Dups ? [Dups | Invalid<Tools>] extends [never] ? Tools : Mark<Tools, Dups>
  : never

// The check above costs the compiler time in the square of the number of
// tools. Past 100, a toolkit is checked where it is made instead (names
// are still checked where each tool is defined): 500 tools must compile.


const Proto = {
  [TypeId]: TypeId,
  pipe() {
    return pipeArguments(this, arguments)
  }
}

const build = <Tools extends ReadonlyArray<Tool.Any>>(tools: Tools): Toolkit<Tools> => {
  const byName = new Map<string, Tools[number]>()
  for (const tool of tools) {
    const problem = checkName(tool.name)
    if (problem !== undefined) throw new InvalidToolkit({ tool: tool.name, message: problem })
    if (byName.has(tool.name)) throw new InvalidToolkit({ tool: tool.name, message: duplicateMessage(tool.name) })
    byName.set(tool.name, tool)
  }
  return Object.assign(Object.create(Proto), { tools, get: (name: string) => byName.get(name) })
}

/**
 * Makes a toolkit. Two tools of one name, or a name that breaks the wire
 * mapping, fail to compile; where the names are not literal types, they
 * throw `InvalidToolkit` here.
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
): Toolkit<ReadTools<Tools>> => build(toolkit.tools.filter((tool) => tool.grade === "read") as unknown as ReadTools<Tools>)
