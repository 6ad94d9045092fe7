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
import { Args, Command, HelpDoc, Options } from "@effect/cli"
import { Effect, type Layer, Option } from "effect"
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
// is how a package script passes it) or after it (`graded list -m desk.ts`);
// when both are given, the later one wins, as with any repeated flag.
const module = Options.text("module").pipe(
  Options.withAlias("m"),
  Options.withDescription("the module exporting the toolkit, plans and layer (default graded.config.ts)"),
  Options.optional
)
const page = Options.text("page").pipe(Options.withDescription("the page the caller is on"), Options.optional)
const feature = Options.text("feature").pipe(
  Options.withDescription("a licensed feature (repeatable)"),
  Options.repeated
)
const autonomous = Options.boolean("autonomous").pipe(Options.withDescription("see what a model would be offered"))
const audit = Options.text("audit").pipe(
  Options.withDescription("append audit entries to this JSON Lines file"),
  Options.optional
)

const root = Command.make("graded", { module })

const withModule = <A extends { readonly module: Option.Option<string> }, E, R>(
  handler: (options: Omit<A, "module"> & { readonly module: string }) => Effect.Effect<void, E, R>
) =>
(options: A) =>
  Effect.flatMap(root, (global) =>
    handler({
      ...options,
      module: Option.getOrElse(Option.orElse(options.module, () => global.module), () => "graded.config.ts")
    }))

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

const list = Command.make("list", { module, page, feature, autonomous }, withModule(internal.list)).pipe(
  Command.withDescription(descriptions.list)
)
const schemas = Command.make("schemas", { module, page, feature, autonomous }, withModule(internal.schemas)).pipe(
  Command.withDescription(descriptions.schemas)
)
const invoke = Command.make(
  "invoke",
  {
    module,
    page,
    feature,
    audit,
    name: Args.text({ name: "tool" }),
    input: Args.text({ name: "json" }).pipe(Args.withDefault("{}"))
  },
  withModule(internal.invoke)
).pipe(Command.withDescription(descriptions.invoke))
const plan = Command.make(
  "plan",
  { module, audit, name: Args.text({ name: "plan" }), input: Args.text({ name: "json" }).pipe(Args.withDefault("{}")) },
  withModule(internal.plan)
).pipe(Command.withDescription(descriptions.plan))
const auditLog = Command.make(
  "audit",
  {
    sqlite: Options.text("sqlite").pipe(
      Options.withDescription("read the audit from this SQLite file (Sql.sqlite's), instead of a JSON Lines file"),
      Options.optional
    ),
    postgres: Options.text("postgres").pipe(
      Options.withDescription("read the audit from this PostgreSQL database: postgres://user:password@host:port/db"),
      Options.optional
    ),
    trace: Options.text("trace").pipe(
      Options.withDescription("every decision on this run (trace id): asked, decided, delivered, refused"),
      Options.optional
    ),
    gate: Options.text("gate").pipe(Options.withDescription("every refusal at this gate"), Options.optional),
    actor: Options.text("actor").pipe(
      Options.withDescription("everything this person confirmed: approvals and the deliveries they allowed"),
      Options.optional
    ),
    file: Args.text({ name: "file" }).pipe(Args.optional)
  },
  internal.audit
).pipe(Command.withDescription(descriptions.audit))

const pending = Command.make(
  "pending",
  { module, json: Options.boolean("json").pipe(Options.withDescription("one JSON object a line")) },
  withModule(internal.pending)
).pipe(Command.withDescription(descriptions.pending))
const decide = Command.make(
  "decide",
  {
    module,
    reason: Options.text("reason").pipe(
      Options.withDescription("why it is rejected (required with reject); with done, a note on how you checked"),
      Options.optional
    ),
    id: Args.text({ name: "id" }),
    decision: Args.choice(
      [
        ["approve", "approve" as const],
        ["edit", "edit" as const],
        ["reject", "reject" as const],
        ["done", "done" as const],
        ["retry", "retry" as const]
      ],
      { name: "approve|edit|reject|done|retry" }
    )
  },
  withModule(internal.decide)
).pipe(Command.withDescription(descriptions.decide))
const runs = Command.make(
  "runs",
  {
    module,
    json: Options.boolean("json").pipe(Options.withDescription("one JSON object a line")),
    status: Options.choice("status", ["waiting", "running", "finished", "cancelled"]).pipe(
      Options.withDescription("only the runs with this status"),
      Options.optional
    )
  },
  withModule(internal.runs)
).pipe(Command.withDescription(descriptions.runs))
const resume = Command.make(
  "resume",
  { module, runId: Args.text({ name: "runId" }) },
  withModule(internal.resume)
).pipe(Command.withDescription(descriptions.resume))
const cancel = Command.make(
  "cancel",
  {
    module,
    reason: Options.text("reason").pipe(Options.withDescription("why (required)"), Options.optional),
    runId: Args.text({ name: "runId" })
  },
  withModule(internal.cancel)
).pipe(Command.withDescription(descriptions.cancel))

const manifest = Command.make(
  "manifest",
  {
    module,
    json: Options.boolean("json").pipe(Options.withDescription("JSON for review: sorted, stable keys")),
    check: Options.boolean("check").pipe(
      Options.withDescription("run the contract review and the conflict checks instead; exit 1 on an error")
    )
  },
  withModule(policyCommands.manifest)
).pipe(Command.withDescription(descriptions.manifest))
const review = Command.make(
  "review",
  { module, json: Options.boolean("json").pipe(Options.withDescription("the findings as JSON")) },
  withModule(policyCommands.review)
).pipe(Command.withDescription(descriptions.review))

const mcpServe = Command.make(
  "serve",
  {
    module,
    http: Options.integer("http").pipe(
      Options.withDescription("serve over Streamable HTTP on this port (0: any free one) instead of stdio"),
      Options.optional
    ),
    host: Options.text("host").pipe(
      Options.withDescription("the address --http listens on (default 127.0.0.1)"),
      Options.optional
    ),
    maxSessions: Options.integer("max-sessions").pipe(
      Options.withDescription("with --http: the most client sessions open at once (default 1000); beyond, 503"),
      Options.optional
    ),
    idleTimeout: Options.text("idle-timeout").pipe(
      Options.withDescription(
        `with --http: close a session after this long without a request ("30 minutes", the default; "90 seconds"; "never")`
      ),
      Options.optional
    ),
    page,
    feature
  },
  withModule(mcpCommands.serve)
).pipe(
  Command.withDescription(
    "serve the toolkit over MCP until the client closes stdin, or with --http until Ctrl-C; a read runs, a write or send records a proposal for graded pending and graded decide"
  )
)
const mcp = Command.make("mcp").pipe(
  Command.withDescription(descriptions.mcp),
  Command.withSubcommands([mcpServe])
)

/**
 * The `graded` command, to embed or extend.
 *
 * @since 0.1.0
 * @category constructors
 */
export const command = root.pipe(Command.withSubcommands([
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
]))

const isCommand = (name: string | undefined): name is keyof typeof examples =>
  name !== undefined && Object.hasOwn(examples, name)

// The command named on the line (skipping the value of a -m before it), if any.
const commandIn = (args: ReadonlyArray<string>): keyof typeof examples | undefined => {
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]
    if (arg === "-m" || arg === "--module") i++
    else if (isCommand(arg)) return arg
    else if (!arg?.startsWith("-")) return undefined
  }
  return undefined
}

const examplesDoc = (name: keyof typeof examples | undefined): HelpDoc.HelpDoc => {
  const lines = name === undefined ? Object.values(examples).flat() : examples[name]
  return HelpDoc.blocks([
    HelpDoc.h1(lines.length === 1 ? "EXAMPLE" : "EXAMPLES"),
    ...lines.map((line) => HelpDoc.p(`$ ${line}`))
  ])
}

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

/**
 * Runs the command on `argv` as `process.argv` gives it (the node and script
 * paths first). `--help` prints the usage and an example; a command line that
 * does not parse fails with a `ValidationError` whose message is already printed.
 *
 * @example
 * import { NodeContext, NodeRuntime } from "@effect/platform-node"
 * import { Effect } from "effect"
 * import { Cli } from "@graded/cli"
 * Cli.run(process.argv).pipe(Effect.provide(NodeContext.layer), NodeRuntime.runMain)
 *
 * @since 0.1.0
 * @category constructors
 */
export const run = (argv: ReadonlyArray<string>, options: RunOptions = {}) => {
  const program = Command.run(command, {
    name: "graded",
    version: "0.1.0",
    footer: examplesDoc(commandIn(argv.slice(2)))
  })(argv)
  return options.by === undefined ? program : Effect.provideService(program, internal.Person, options.by)
}
