// `graded mcp serve`: the module's toolkit served to an MCP client, over
// stdio (the default: what a client that spawns a command expects) or
// Streamable HTTP (`--http PORT`). Every call is a model's: a read runs, a
// write or send records a proposal in the module's ProposalStore, which
// `graded pending` and `graded decide` then show and decide.
//
// In stdio mode stdout is the protocol's channel: everything this command
// says goes to stderr.
import { Cause, Console, Context, Duration, Effect, Exit, Layer, Option } from "effect"
import { Grade, Guard, Printable, ProposalStore, Registry } from "@graded/core"
import { McpServe } from "@graded/mcp"
import { Policy } from "@graded/policy"
import { messageOf, Person } from "./commands.js"
import { load } from "./load.js"
import { exitWith } from "./process.js"

export interface ServeOptions {
  readonly module: string
  readonly http: Option.Option<number>
  readonly host: Option.Option<string>
  readonly maxSessions: Option.Option<number>
  readonly idleTimeout: Option.Option<string>
  readonly page: Option.Option<string>
  readonly feature: ReadonlyArray<string>
}

const say = (message: string) => Console.error(Printable.escape(message, { multiline: true }))

const fail = (message: string) => Effect.andThen(say(message), exitWith(1))

// A command line that parses but cannot be served: exit code 2, as for one that does not parse.
const usageError = (message: string) => Effect.andThen(say(message), exitWith(2))

const loopback = new Set(["127.0.0.1", "localhost", "::1", "[::1]"])

// The session limits the command line sets, checked here so that a bad one
// is a usage error naming the flag; a string says what is wrong.
const sessionLimits = (
  options: ServeOptions
): { readonly maxSessions?: number; readonly idleTimeout?: Duration.Duration } | string => {
  const limits: { maxSessions?: number; idleTimeout?: Duration.Duration } = {}
  if (Option.isSome(options.maxSessions)) {
    const max = options.maxSessions.value
    if (!Number.isInteger(max) || max < 1) return `--max-sessions takes a positive whole number, not ${max}`
    limits.maxSessions = max
  }
  if (Option.isSome(options.idleTimeout)) {
    const text = options.idleTimeout.value.trim()
    // What the person typed, read as a duration if it is one ("90 seconds"; "soon" is not).
    const timeout = text === "never" ? Option.some(Duration.infinity) : Duration.fromInput(text as Duration.Input)
    if (Option.isNone(timeout) || !Duration.isGreaterThan(timeout.value, Duration.zero)) {
      return `--idle-timeout takes a duration such as "30 minutes" or "90 seconds", or "never", not ${
        JSON.stringify(options.idleTimeout.value)
      }`
    }
    limits.idleTimeout = timeout.value
  }
  return limits
}

export const serve = (options: ServeOptions) =>
  Effect.gen(function*() {
    const port = Option.getOrUndefined(options.http)
    if (Option.isSome(options.host) && port === undefined) {
      return yield* usageError("--host is where --http listens: give --http PORT too (stdio has no host)")
    }
    if (port !== undefined && (!Number.isInteger(port) || port < 0 || port > 65535)) {
      return yield* usageError(`--http takes a port from 0 to 65535 (0: any free one), not ${port}`)
    }
    const limits = sessionLimits(options)
    if (typeof limits === "string") return yield* usageError(limits)
    if (port === undefined && Object.keys(limits).length > 0) {
      return yield* usageError(
        "--max-sessions and --idle-timeout bound --http's sessions: give --http PORT too (stdio has one session)"
      )
    }
    const config = yield* load(options.module)
    const registry = Registry.make(config.toolkit, config.registry)
    const mcp = config.mcp ?? {}
    // The session's context: the module's `mcp.context`, the page and
    // features of the command line on top. The actor is the module's, or the
    // person who started the server, marked as reached through MCP.
    const who = yield* Person
    const serveOptions: McpServe.Options = {
      ...mcp,
      context: {
        actor: `mcp:${who}`,
        ...mcp.context,
        ...(Option.isSome(options.page) ? { page: options.page.value } : {}),
        ...(options.feature.length > 0 ? { features: options.feature } : {})
      }
    }
    const proposes = config.toolkit.tools.some((tool) => Grade.isConfirmable(tool.grade))

    const serving = Effect.gen(function*() {
      if (proposes && Option.isNone(yield* Effect.serviceOption(ProposalStore.ProposalStore))) {
        return yield* usageError(
          `${options.module} provides no ProposalStore: a client's call to a write or send records a proposal there. Export a "layer" that provides one (Sql.sqlite({ filename }) from @graded/sql, so graded pending and graded decide see it, or ProposalStore.memory)`
        )
      }
      // A policy the module exports screens every listing and call. The
      // module's layer puts it in force (`Policy.layer`) as for any command;
      // when it does not, this command does, rather than serve a model without it.
      const policed = config.policy !== undefined && !(yield* Guard.current).some((guard) => guard.name === "policy")
      const inForce = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
        policed && config.policy !== undefined
          ? Effect.andThen(
            say(`graded mcp serve: ${options.module}'s policy is in force (its layer does not add Policy.layer)`),
            Effect.provide(effect, Policy.layer(config.policy))
          )
          : effect
      if (port === undefined) {
        yield* say(`graded mcp serve: ${options.module} over stdio; end of input stops it`)
        return yield* inForce(McpServe.stdio(registry, serveOptions))
      }
      const host = Option.getOrElse(options.host, () => "127.0.0.1")
      // Reachable from other machines with no authentication, a client's
      // form would be a stranger's: unless the module says otherwise, every
      // write and send is proposed, for pending and decide.
      const open = !loopback.has(host)
      const forms = open && mcp.elicitation === undefined ? { elicitation: false as const } : {}
      return yield* inForce(Effect.scoped(Effect.gen(function*() {
        const built = yield* Layer.build(
          McpServe.layerHttp(registry, { ...serveOptions, ...forms, ...limits, host, port })
        )
        const address = Context.get(built, McpServe.Address)
        if (open) {
          yield* say(
            `graded mcp serve: ${host} is not a loopback address: whoever reaches it may call the tools (no authentication; ${
              mcp.elicitation === undefined
                ? "writes and sends only become proposals: no client's form is asked"
                : "the module's mcp.elicitation lets a client's form approve writes and sends"
            })`
          )
        }
        yield* say(`graded mcp serve: ${options.module} at ${address.url} (Ctrl-C stops it)`)
        return yield* Effect.never
      })))
    })
    // The module is loaded at run time: the compiler cannot see whether its
    // layer provides what its tools need; one it misses is a defect, said in a line.
    const exit = yield* (Effect.exit(Effect.provide(serving, config.layer ?? Layer.empty)) as Effect.Effect<
      Exit.Exit<void, unknown>
    >)
    // Stopped by a signal (Ctrl-C, SIGTERM): the servers closed on the way out; exit code 0.
    if (Exit.isFailure(exit) && !Cause.hasInterruptsOnly(exit.cause)) return yield* fail(messageOf(exit.cause))
  }).pipe(Effect.catch((error) => fail(error.message)))
