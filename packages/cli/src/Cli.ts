/**
 * `graded`, the debug bridge as a command. It loads a module of yours that
 * exports a toolkit (and plans, and the layer their services come from), and
 * lets a person list, invoke and run them from a terminal with every gate on:
 * a write or a send is confirmed in the terminal, showing the exact payload,
 * and no flag skips that.
 *
 * ```sh
 * graded list --autonomous --page ticket
 * graded invoke kb.search '{"query":"invoice"}'
 * graded plan quick-ticket '{}'
 * graded schemas --autonomous
 * graded audit audit.jsonl
 * ```
 *
 * @since 0.1.0
 */
import { Args, Command, Options } from "@effect/cli"
import type { Layer } from "effect"
import type { Plan, Registry, Toolkit } from "@graded/core"
import * as internal from "./internal/commands.js"

/**
 * What the module given with `--module` exports.
 *
 * @since 0.1.0
 * @category models
 */
export interface Config {
  readonly toolkit: Toolkit.Any
  readonly plans?: ReadonlyArray<Plan.Any> | undefined
  /** The services the tools and plans need (a model for plans that generate text). */
  readonly layer?: Layer.Layer<any, any, never> | undefined
  /** Registry options: licensed features, known page types. */
  readonly registry?: Registry.Options | undefined
}

/**
 * Types a config module's exports.
 *
 * @example
 * import { Cli } from "@graded/cli"
 * import { Toolkit } from "@graded/core"
 * export default Cli.define({ toolkit: Toolkit.make() })
 *
 * @since 0.1.0
 * @category constructors
 */
export const define = (config: Config): Config => config

const module = Options.text("module").pipe(
  Options.withAlias("m"),
  Options.withDescription("the module exporting the toolkit, plans and layer"),
  Options.withDefault("graded.config.ts")
)
const page = Options.text("page").pipe(Options.withDescription("the page the caller is on"), Options.optional)
const feature = Options.text("feature").pipe(Options.withDescription("a licensed feature (repeatable)"), Options.repeated)
const autonomous = Options.boolean("autonomous").pipe(Options.withDescription("see what a model would be offered"))
const audit = Options.text("audit").pipe(Options.withDescription("append audit entries to this JSON Lines file"), Options.optional)

const list = Command.make("list", { module, page, feature, autonomous }, internal.list).pipe(
  Command.withDescription("every tool, and whether this context is offered it (and why not)")
)
const schemas = Command.make("schemas", { module, page, feature, autonomous }, internal.schemas).pipe(
  Command.withDescription("the OpenAI function definitions this context is offered")
)
const invoke = Command.make(
  "invoke",
  { module, page, feature, audit, name: Args.text({ name: "tool" }), input: Args.text({ name: "json" }).pipe(Args.withDefault("{}")) },
  internal.invoke
).pipe(Command.withDescription("run a tool as a human; writes and sends are confirmed here"))
const plan = Command.make(
  "plan",
  { module, audit, name: Args.text({ name: "plan" }), input: Args.text({ name: "json" }).pipe(Args.withDefault("{}")) },
  internal.plan
).pipe(Command.withDescription("run a fixed flow you started; sends inside it are confirmed here"))
const auditLog = Command.make("audit", { file: Args.text({ name: "file" }) }, internal.audit).pipe(
  Command.withDescription("print a JSON Lines audit file for people")
)

/**
 * The `graded` command, to embed or extend.
 *
 * @since 0.1.0
 * @category constructors
 */
export const command = Command.make("graded").pipe(
  Command.withSubcommands([list, invoke, plan, schemas, auditLog])
)

/**
 * Runs the command on `argv` (without the node and script paths... as
 * `process.argv` gives them, both included).
 *
 * @since 0.1.0
 * @category constructors
 */
export const run = Command.run(command, { name: "graded", version: "0.1.0" })
