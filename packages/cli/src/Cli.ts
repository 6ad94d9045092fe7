/**
 * `graded`, the debug bridge as a command. It loads a module of yours that
 * exports a toolkit (and plans, and the layer their services come from), and
 * lets a person list, invoke and run them from a terminal with every gate on:
 * a write or a send is confirmed in the terminal, showing the exact payload,
 * and no flag skips that.
 *
 * ```sh
 * graded -m src/graded.config.ts list    # the module before the command, or after it
 * graded list --autonomous --page ticket
 * graded invoke kb.search '{"query":"invoice"}'
 * graded plan quick-ticket '{}'
 * graded schemas --autonomous
 * graded audit audit.jsonl
 * graded audit --sqlite graded.db --trace 6f1c0d2e   # the decisions on one run (also --gate, --actor; --postgres URL)
 * graded pending                        # proposals waiting for a human (the module's layer provides the store)
 * graded decide p-1 approve             # shows the card; approve, edit or reject there
 * graded decide p-2 reject --reason "wrong customer"
 * graded decide p-3 edit                # the card opens at the edit question
 * graded decide p-4 done                # an in-doubt delivery went out; or `retry` to deliver it again
 * graded runs --status waiting          # supervised runs (the module's layer provides the RunStore)
 * graded resume run-1                   # goes on with a run once its proposals are decided
 * graded cancel run-1 --reason "customer called"
 * graded manifest --json                # the module's policy: every tool, its grade, roles, guidelines
 * graded manifest --check               # the four-question review and conflict checks; exit 1 on an error
 * graded review                         # the four-question review of every tool
 * graded mcp serve                      # the toolkit to an MCP client over stdio; writes and sends become proposals
 * graded mcp serve --http 3000          # over Streamable HTTP on 127.0.0.1:3000/mcp, until Ctrl-C
 * ```
 *
 * @since 0.1.0
 */
import { Console, Effect, type Layer } from "effect"
import { Argument, type CliError, CliOutput, Command, Flag } from "effect/cli"
import type { Plan, Registry, Toolkit } from "@graded/core"
import type { McpServe } from "@graded/mcp"
import type { Check, Policy } from "@graded/policy"
import * as internal from "./internal/commands.js"
import * as mcpCommands from "./internal/mcp.js"
import * as policyCommands from "./internal/policy.js"

/**
 * What the module given with `--module` exports.
 *
 * @since 0.1.0
 * @category models
 */
export interface Config {
  readonly toolkit: Toolkit.Any
  readonly plans?: ReadonlyArray<Plan.Any> | undefined
  /**
   * The services the tools and plans need (a model for plans that generate
   * text, and for `resume`), the `ProposalStore` that `pending` and `decide`
   * read, and the `RunStore` that `runs`, `resume` and `cancel` read.
   */
  readonly layer?: Layer.Layer<any, any, never> | undefined
  /** Registry options: licensed features, known page types. */
  readonly registry?: Registry.Options | undefined
  /** The policy (`Policy.make` from @graded/policy) that `manifest` and `review` report on. */
  readonly policy?: Policy.Policy<any> | undefined
  /** The vocabulary the policy is written against (roles, pages, ...), for the conflict checks of `manifest --check`. */
  readonly declared?: Check.Declared | undefined
  /**
   * How `graded mcp serve` serves the toolkit: the name and version it
   * announces, the session's context (actor, role, page, features, tenant;
   * the actor defaults to `mcp:` and the person who started the server) and
   * the options of the proposals a client's writes and sends record.
   */
  readonly mcp?: McpOptions | undefined
}

/**
 * What a module may say about serving it over MCP (`export const mcp = ...`):
 * `McpServe.Options` from @graded/mcp.
 *
 * @since 0.2.0
 * @category models
 */
export type McpOptions = McpServe.Options

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
// The module may be named before the command (`graded -m desk.ts list`, which
// is how a package script passes it) or after it (`graded list -m desk.ts`):
// a flag of the root that every command inherits. Given more than once, the
// last one wins, as with any repeated flag.
const module = Flag.String("module").pipe(
  Flag.withAlias("m"),
  Flag.withDescription("the module exporting the toolkit, plans and layer (default graded.config.ts)"),
  Flag.atLeast(0)
)
const page = Flag.String("page").pipe(Flag.withDescription("the page the caller is on"), Flag.optional)
const feature = Flag.String("feature").pipe(
  Flag.withDescription("a licensed feature (repeatable)"),
  Flag.atLeast(0)
)
const text = (name: string, description: string) =>
  Flag.String(name).pipe(Flag.withDescription(description), Flag.optional)
const yes = (name: string, description: string) =>
  Flag.Boolean(name).pipe(Flag.withDescription(description), Flag.withDefault(false))
const autonomous = yes("autonomous", "see what a model would be offered")
const audit = text("audit", "append audit entries to this JSON Lines file")

const root = Command.make("graded").pipe(Command.withSharedFlags({ module }))

const withModule = <A extends { readonly module: string }, E, R>(
  handler: (options: A) => Effect.Effect<void, E, R>
) =>
(options: Omit<A, "module">) =>
  Effect.flatMap(root, (global) => handler({ ...options, module: global.module.at(-1) ?? "graded.config.ts" } as A))

// Printed by each command's `--help` (all of them by `graded --help`).
const examples = {
  list: ["graded list --autonomous --page ticket"],
  invoke: [
    "graded invoke kb.search '{\"query\":\"invoice\"}'",
    "graded invoke chat.sendMessage '{\"text\":\"Hello\"}' --audit audit.jsonl"
  ],
  plan: ["graded plan quick-ticket --audit audit.jsonl"],
  schemas: ["graded schemas --autonomous"],
  audit: [
    "graded audit audit.jsonl",
    "graded audit --sqlite graded.db --trace 6f1c0d2e",
    "graded audit --postgres postgres://graded@db.internal/graded --gate autonomous",
    "graded audit --sqlite graded.db --actor cli:alice"
  ],
  pending: ["graded pending", "graded pending --json"],
  decide: [
    "graded decide p-1 approve",
    "graded decide p-2 reject --reason \"wrong customer\"",
    "graded decide p-3 edit",
    "graded decide p-4 done --reason \"the customer has it\""
  ],
  runs: ["graded runs", "graded runs --status waiting --json"],
  resume: ["graded resume run-1"],
  cancel: ["graded cancel run-1 --reason \"the customer called\""],
  manifest: ["graded manifest", "graded manifest --json > manifest.json", "graded manifest --check"],
  review: ["graded review", "graded review --json"],
  mcp: [
    "graded mcp serve -m graded.config.ts",
    "graded mcp serve --http 3000",
    "graded mcp serve --http 8080 --host 0.0.0.0 --feature billing",
    `graded mcp serve --http 3000 --max-sessions 200 --idle-timeout "5 minutes"`
  ]
} as const satisfies Record<string, ReadonlyArray<string>>

const descriptions: { readonly [K in keyof typeof examples]: string } = {
  list: "every tool, and whether this context is offered it (and why not)",
  invoke: "run a tool as a human; writes and sends are confirmed here",
  plan: "run a fixed flow you started; sends inside it are confirmed here",
  schemas: "the OpenAI function definitions this context is offered",
  audit: "print an audit for people: a JSON Lines file, or SQL (--sqlite, --postgres)",
  pending: "the proposals waiting for a human and the deliveries in doubt, from the module's ProposalStore",
  decide: "approve or edit a proposal on its card, reject it, or settle an in-doubt delivery (done, retry)",
  runs: "the supervised runs, from the module's RunStore, with what each waits on",
  resume: "go on with a run whose proposals are decided (the module's layer provides the model)",
  cancel: "cancel a run with a reason; its open proposals are rejected",
  manifest: "the permission manifest of the module's policy; --check: review and conflicts (exit 1 on an error)",
  review: "the four-question contract review of the module's policy's tools (exit 1 on a finding)",
  mcp: "mcp serve: the toolkit to an MCP client (stdio; --http PORT); its writes and sends become proposals"
}

// A command with what it does and its examples, as `--help` prints them.
const exampled = (lines: ReadonlyArray<string>) => Command.withExamples(lines.map((line) => ({ command: `$ ${line}` })))
const described =
  (name: keyof typeof examples) =>
  <Name extends string, Input, ContextInput, E, R>(command: Command.Command<Name, Input, ContextInput, E, R>) =>
    command.pipe(Command.withDescription(descriptions[name]), exampled(examples[name]))

const list = Command.make("list", { page, feature, autonomous }, withModule(internal.list)).pipe(described("list"))
const schemas = Command.make("schemas", { page, feature, autonomous }, withModule(internal.schemas)).pipe(
  described("schemas")
)
const invoke = Command.make(
  "invoke",
  {
    page,
    feature,
    audit,
    name: Argument.String("tool"),
    input: Argument.String("json").pipe(Argument.withDefault("{}"))
  },
  withModule(internal.invoke)
).pipe(described("invoke"))
const plan = Command.make(
  "plan",
  { audit, name: Argument.String("plan"), input: Argument.String("json").pipe(Argument.withDefault("{}")) },
  withModule(internal.plan)
).pipe(described("plan"))
const auditLog = Command.make(
  "audit",
  {
    sqlite: text("sqlite", "read the audit from this SQLite file (Sql.sqlite's), instead of a JSON Lines file"),
    postgres: text("postgres", "read the audit from this PostgreSQL database: postgres://user:password@host:port/db"),
    trace: text("trace", "every decision on this run (trace id): asked, decided, delivered, refused"),
    gate: text("gate", "every refusal at this gate"),
    actor: text("actor", "everything this person confirmed: approvals and the deliveries they allowed"),
    file: Argument.String("file").pipe(Argument.optional)
  },
  internal.audit
).pipe(described("audit"))

const pending = Command.make("pending", { json: yes("json", "one JSON object a line") }, withModule(internal.pending))
  .pipe(described("pending"))
const decide = Command.make(
  "decide",
  {
    reason: text("reason", "why it is rejected (required with reject); with done, a note on how you checked"),
    id: Argument.String("id"),
    decision: Argument.Literals("approve|edit|reject|done|retry", ["approve", "edit", "reject", "done", "retry"])
  },
  withModule(internal.decide)
).pipe(described("decide"))
const runs = Command.make(
  "runs",
  {
    json: yes("json", "one JSON object a line"),
    status: Flag.Literals("status", ["waiting", "running", "finished", "cancelled"]).pipe(
      Flag.withDescription("only the runs with this status"),
      Flag.optional
    )
  },
  withModule(internal.runs)
).pipe(described("runs"))
const resume = Command.make("resume", { runId: Argument.String("runId") }, withModule(internal.resume)).pipe(
  described("resume")
)
const cancel = Command.make(
  "cancel",
  { reason: text("reason", "why (required)"), runId: Argument.String("runId") },
  withModule(internal.cancel)
).pipe(described("cancel"))

const manifest = Command.make(
  "manifest",
  {
    json: yes("json", "JSON for review: sorted, stable keys"),
    check: yes("check", "run the contract review and the conflict checks instead; exit 1 on an error")
  },
  withModule(policyCommands.manifest)
).pipe(described("manifest"))
const review = Command.make("review", { json: yes("json", "the findings as JSON") }, withModule(policyCommands.review))
  .pipe(described("review"))

const mcpServe = Command.make(
  "serve",
  {
    http: Flag.Int("http").pipe(
      Flag.withDescription("serve over Streamable HTTP on this port (0: any free one) instead of stdio"),
      Flag.optional
    ),
    host: text("host", "the address --http listens on (default 127.0.0.1)"),
    maxSessions: Flag.Int("max-sessions").pipe(
      Flag.withDescription("with --http: the most client sessions open at once (default 1000); beyond, 503"),
      Flag.optional
    ),
    idleTimeout: text(
      "idle-timeout",
      `with --http: close a session after this long without a request ("30 minutes", the default; "90 seconds"; "never")`
    ),
    page,
    feature
  },
  withModule(mcpCommands.serve)
).pipe(
  Command.withDescription(
    "serve the toolkit over MCP until the client closes stdin, or with --http until Ctrl-C; a read runs, a write or send records a proposal for graded pending and graded decide"
  ),
  exampled(examples.mcp)
)
const mcp = Command.make("mcp").pipe(described("mcp"), Command.withSubcommands([mcpServe]))

/**
 * The `graded` command, to embed or extend.
 *
 * @since 0.1.0
 * @category constructors
 */
export const command = root.pipe(
  // `graded --help` prints every command's examples.
  exampled(Object.values(examples).flat()),
  Command.withSubcommands([
    list,
    invoke,
    plan,
    schemas,
    auditLog,
    pending,
    decide,
    runs,
    resume,
    cancel,
    manifest,
    review,
    mcp
  ])
)

/**
 * The usage summary for a command line that names no known command: each
 * command with what it does, and where to read more.
 *
 * @example
 * import { Cli } from "@graded/cli"
 * console.error(Cli.usage())
 *
 * @since 0.1.0
 * @category constructors
 */
export const usage = (): string =>
  [
    "Usage: graded [-m module] <command> [options]",
    "",
    "Commands:",
    ...Object.entries(descriptions).map(([name, description]) => `  ${name.padEnd(8)}  ${description}`),
    "",
    "`graded <command> --help` shows a command's options and an example."
  ].join("\n")

/**
 * How an app runs the command: `by` names the person at the keyboard (the
 * actor, the HumanTrigger and the decider of every confirmation) when the app
 * knows them better than the operating system does; without it, that is
 * `cli:<the operating-system user>`. The command line has no such flag: the
 * person typing cannot claim to be someone else.
 *
 * @since 0.1.0
 * @category models
 */
export interface RunOptions {
  readonly by?: string | undefined
}

// What effect/cli prints for a command line it cannot run: what is wrong,
// on standard error, and nothing on standard output, which stays the
// command's (a script reads it). A command named without one of those it
// groups (`graded`, `graded mcp`) says which it takes. Help asked for goes to
// standard output, as effect/cli prints it.
const presenter: CliOutput.Presenter = {
  present: (event) =>
    event._tag === "InvalidInvocation"
      ? Effect.flatMap(CliOutput.Formatter, (formatter) => Console.error(formatter.formatErrors(event.errors)))
      : event._tag === "Help" && event.reason === "Implicit"
      ? Console.error(
        `${event.commandPath.join(" ")} needs a command: ${
          (event.helpDoc.subcommands ?? []).flatMap((group) => group.commands.map((sub) => sub.name)).join(", ")
        }`
      )
      : CliOutput.defaultPresenter.present(event)
}

/**
 * Runs the command on `argv` as `process.argv` gives it (the node and script
 * paths first). `--help` prints the usage and an example; a command line that
 * does not parse fails with a `CliError.ShowHelp` whose errors are already
 * printed, on standard error.
 *
 * @example
 * import { NodeRuntime, NodeServices } from "@effect/platform-node"
 * import { Effect } from "effect"
 * import { Cli } from "@graded/cli"
 * Cli.run(process.argv).pipe(Effect.provide(NodeServices.layer), NodeRuntime.runMain)
 *
 * @since 0.1.0
 * @category constructors
 */
export const run = (
  argv: ReadonlyArray<string>,
  options: RunOptions = {}
): Effect.Effect<void, CliError.CliError, Command.Environment> => {
  const program = Command.runWith(command, { version: "0.1.0" })(argv.slice(2)).pipe(
    Effect.provideService(CliOutput.Presenter, presenter)
  )
  return options.by === undefined ? program : Effect.provideService(program, internal.Person, options.by)
}
