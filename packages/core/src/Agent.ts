/**
 * The autonomous loop: a model turn, the tool calls it asked for, their
 * results back to the model, the next turn; until the model answers or the
 * round limit is reached. It accepts only toolkits whose every tool reads,
 * and it checks again at run time what the compiler checked.
 *
 * @since 0.1.0
 */
import type { Schema } from "effect"
import type { Effect } from "effect/Effect"
import type { Layer } from "effect/Layer"
import type { Stream } from "effect/Stream"
import type { Builtin, NeedsHumanConfirmFor } from "./Capability.js"
import type * as Grade from "./Grade.js"
import type * as Invocation from "./Invocation.js"
import type * as Registry from "./Registry.js"
import * as internal from "./internal/agent.js"
import { eventStream } from "./internal/events.js"
import { makeSubAgent, type SubAgentBadAnswer, type SubAgentNoAnswer } from "./internal/subAgent.js"
import { supervised as supervisedRun } from "./internal/supervised.js"
import type * as Tree from "./internal/tree.js"
import type { LanguageModel, Message, ModelError, Usage } from "./LanguageModel.js"
import type { Proposal } from "./Proposal.js"
import type * as Tool from "./Tool.js"
import type * as Toolkit from "./Toolkit.js"
import type { ValidName } from "./Wire.js"

// ---------------------------------------------------------------------------
// The compile-time check
// ---------------------------------------------------------------------------

/**
 * The offense of a tool that has no single grade: `never` (two tools merged
 * by `Object.assign` or an intersection), or a union of grades.
 *
 * @since 0.1.0
 * @category errors
 */
export type NoGrade<Name extends string, Grade extends string = "never"> =
  `${Name} has no single grade (its grade is ${Grade})`

/**
 * The offense of a place in a toolkit whose tool has type `never`.
 *
 * @since 0.1.0
 * @category errors
 */
export type NeverTool<Index extends string | number> = `the tool at index ${Index} has type never`

// What the tool's own code needs is read off its invoke: the requirements the
// loop would have to run it with, whatever the type parameters say.
type Own<T extends Tool.Any> = ReturnType<T["invoke"]> extends Effect<any, any, infer R> ? R : never

type ByGrade<N extends string, G, R> = G extends "read" ? [Tool.Needed<R, Builtin>] extends [never] ? never
  : Grade.Needs<N, "read", Tool.CapabilityNames<Tool.Needed<R, Builtin>>>
  : Grade.Needs<N, G & string, G extends Grade.Confirmable ? Grade.CapabilityName<G> : never>

type Single<G> = [G] extends ["read"] ? true : [G] extends ["write"] ? true : [G] extends ["send"] ? true : false

type Either<A extends string, B extends string> = [A] extends [never] ? B : [B] extends [never] ? A : `${A} | ${B}`

type GradeNames<G> = Either<
  Either<"read" extends G ? "read" : never, "write" extends G ? "write" : never>,
  "send" extends G ? "send" : never
>

// A tool typed as `Tool.Any` (a toolkit widened to any tools) has no name the
// compiler can print: say so rather than print `${string}`.
type Label<N extends string> = string extends N ? "a tool typed as Tool.Any (name and grade unknown to the compiler)"
  : N

// The common case in one step: a read tool whose invoke needs nothing (its
// requirements inferred from its last signature, as `ReturnType` in `Own`
// reads them) and whose name is a literal. Anything else, and the message,
// comes from the full check below.
type Offense<T> = T extends {
  readonly name: string
  readonly grade: "read"
  readonly invoke: (...args: any) => Effect<any, any, infer R>
} ? [R] extends [never] ? "read" extends T["grade"] ? string extends T["name"] ? FullOffense<T> : never
    : FullOffense<T>
  : FullOffense<T>
  : FullOffense<T>

type FullOffense<T> = T extends Tool.Any ? [T["grade"]] extends [never] ? NoGrade<T["name"]>
  : string extends T["name"] ? Label<T["name"]>
  : Single<T["grade"]> extends true ? Inside<T, ByGrade<T["name"], T["grade"], Own<T>>>
  : NoGrade<T["name"], GradeNames<T["grade"]>>
  : never

type Join<A extends string, B extends string> = [A] extends [never] ? B : [B] extends [never] ? A : `${A}; ${B}`

// A sub-agent (Agent.tool) is judged by the tools it holds, each offense
// told with the path to it: `billing → refund.issue (write) needs
// WriteCapability`. Nested sub-agents add one step each.
type Inside<T, Own extends string> = T extends
  { readonly name: infer N extends string; readonly subAgent: { readonly toolkit: { readonly tools: infer Inner } } }
  ? Inner extends ReadonlyArray<Tool.Any> ? [Offenses<Inner>] extends [never] ? Own : Prefixed<N, Offenses<Inner>>
  : Own
  : Own

type Prefixed<N extends string, Found extends string> = Found extends `${infer Head}; ${infer Rest}`
  ? `${N} → ${Head}; ${Prefixed<N, Rest>}`
  : `${N} → ${Found}`

// The places of a tuple (not of an array), as keys. Each place is checked on
// its own: a union drops `never`, and an intersection of toolkits may be
// `never` in `Tools[number]` while a place still holds a tool.
type Places<Tools extends ReadonlyArray<unknown>> = number extends Tools["length"] ? never
  : Exclude<keyof Tools, keyof ReadonlyArray<unknown>> & `${number}`

type PlaceOffense<Tools extends ReadonlyArray<unknown>, K> = K extends keyof Tools
  ? [Tools[K]] extends [never] ? NeverTool<K & string> : Offense<Tools[K]>
  : never

/**
 * What makes each tool unfit for an autonomous loop, in toolkit order;
 * `never` when every tool is fit.
 *
 * @since 0.1.0
 * @category utility types
 */
export type Offenses<Tools extends ReadonlyArray<Tool.Any>> =
  // The tools of two toolkits of different lengths, intersected, are never.
  [Tools] extends [never] ? NoTools
    // One list of tools at a time, when the toolkit's type is a union of toolkits.
    : Tools extends unknown ? OffensesOf<Tools>
    : never

type NoTools = "the toolkit's tools have type never"

type OffensesOf<Tools extends ReadonlyArray<Tool.Any>> =
  [Offense<Tools[number]> | PlaceOffense<Tools, Places<Tools>>] extends [never] ? never
    // Only a toolkit that fails the check pays for listing its offenders in order.
    : number extends Tools["length"] ? Offense<Tools[number]>
    : Collect<Tools, never, []>

// By index rather than by `[infer H, ...infer Rest]`: inferring from an
// intersection of tuples picks one of them.
type Collect<Tools extends ReadonlyArray<unknown>, Acc extends string, I extends ReadonlyArray<0>> = I["length"] extends
  Tools["length"] ? Acc
  : Collect<
    Tools,
    Join<Acc, [Tools[I["length"]]] extends [never] ? NeverTool<I["length"]> : Offense<Tools[I["length"]]>>,
    [...I, 0]
  >

/**
 * The compile error for a toolkit an autonomous loop may not have.
 *
 * @since 0.1.0
 * @category errors
 */
export type AutonomousViolation<Offenses extends string> =
  `Agent.run takes read tools only: ${Offenses}. Pass Toolkit.readOnly(toolkit), or let a human confirm these tools through HumanConfirm`

/**
 * The same message at run time.
 *
 * @since 0.1.0
 * @category errors
 */
export const autonomousViolation: <const Offenses extends string>(offenses: Offenses) => AutonomousViolation<Offenses> =
  internal.autonomousViolation

/**
 * `T` when every tool of the toolkit reads and needs no capability; otherwise
 * the message naming each offending tool, its grade and what it needs.
 *
 * @since 0.1.0
 * @category utility types
 */
// dprint-ignore: dprint would pull the comment below up after the first `?`
export type Autonomous<T> = [T] extends [Toolkit.Any] ?
  // `T["tools"]`, not a `Toolkit<infer Tools>` match: an intersection of two
  // toolkits matches no single one, and inferring from it picks one of them.
  T["tools"] extends infer Tools extends ReadonlyArray<Tool.Any> ?
    [Offenses<Tools>] extends [never] ? T : AutonomousViolation<Offenses<Tools>>
  : AutonomousViolation<NoTools>
  : T

// ---------------------------------------------------------------------------
// Results
// ---------------------------------------------------------------------------

/**
 * Why a call did not run, as the model and the caller see it. `expired` and
 * `cancelled` come from durable runs (`Runs`): no human decided in time, or
 * the run was cancelled while the call waited.
 *
 * @since 0.1.0
 * @category models
 */
export interface Denial {
  readonly code: Registry.Code | "round-limit" | "call-limit" | "expired" | "cancelled"
  readonly message: string
}

/**
 * A call that ran, typed by its tool.
 *
 * @since 0.1.0
 * @category models
 */
export type Succeeded<T> = T extends Tool.Tool<infer N, any, infer I, infer O, any, any> ? {
    readonly ok: true
    readonly id: string
    readonly tool: N
    readonly input: I
    readonly output: O
  }
  : never

/**
 * A call that did not run or failed. `tool` is the name the model asked for,
 * mapped from its wire form.
 *
 * @since 0.1.0
 * @category models
 */
export interface Denied {
  readonly ok: false
  readonly id: string
  readonly tool: string
  readonly error: Denial
}

/**
 * One tool call the model asked for in a run, in the order asked: its typed
 * input and output when it ran, or why it did not.
 *
 * @since 0.1.0
 * @category models
 */
export type Call<Tools extends ReadonlyArray<Tool.Any>> = Succeeded<Tools[number]> | Denied

/**
 * What `Agent.run` succeeds with: why the loop stopped, the model's last text,
 * every call in order, the whole conversation and the tokens its turns used.
 *
 * @since 0.1.0
 * @category models
 */
export interface Result<Tools extends ReadonlyArray<Tool.Any>> {
  /** Why the loop stopped: the model answered, or the round limit was reached. */
  readonly stopped: "answer" | "round-limit"
  /** The model's last text. */
  readonly answer: string | undefined
  /** Model turns taken. */
  readonly rounds: number
  readonly calls: ReadonlyArray<Call<Tools>>
  readonly messages: ReadonlyArray<Message>
  /** The tokens (and cost, where the provider says) of every turn, added up. */
  readonly usage: Usage
  /**
   * What each model turn used, by round, as its provider reported it; a turn
   * that reported nothing is not listed. Each is audited too (`usage`).
   *
   * @since 0.2.0
   */
  readonly turns: ReadonlyArray<{ readonly round: number; readonly usage: Usage }>
  /**
   * The tools marked `untrusted` whose output entered the conversation. To
   * continue it in a new run, pass them on (`context: { untrusted }`) with
   * its `messages`: open-world reads stay closed to it.
   *
   * @since 0.3.0
   */
  readonly untrusted: ReadonlyArray<string>
  /**
   * Each limit that stopped an agent of the run: this one (path `[]`) or a
   * sub-agent below it (its path of tool names), with which limit: its own
   * rounds or calls per round, or the run's budget over all its agents.
   *
   * @since 0.4.0
   */
  readonly limits: ReadonlyArray<Stop>
}

/**
 * One agent of a run stopped by one limit: `round-limit` and `call-limit`
 * are its own `maxRounds` and `maxCallsPerRound`; `budget-rounds` and
 * `budget-calls` the run's `budget`, counted over every agent of the tree.
 * `agent` is its path from the run's own toolkit (`["billing"]`), empty for
 * the run's own agent.
 *
 * @since 0.4.0
 * @category models
 */
export interface Stop extends Tree.Stop {}

/**
 * What a run and every sub-agent it calls may spend in all: model turns
 * (`rounds`) and tool calls (`calls`), counted by graded over the whole tree
 * beside each agent's own limits. Unset, only each agent's own limits hold.
 *
 * @since 0.4.0
 * @category models
 */
export interface Budget extends Tree.Budget {}

/**
 * Where a run starts: a single `prompt`, or the `messages` of a conversation to
 * continue; one of the two.
 *
 * @since 0.1.0
 * @category models
 */
export type Input =
  | { readonly prompt: string; readonly messages?: undefined }
  | { readonly messages: ReadonlyArray<Message>; readonly prompt?: undefined }

/**
 * What `Agent.run` takes: read tools only (the compiler checks), a prompt or
 * messages, and optional limits, system message and context.
 *
 * @since 0.1.0
 * @category models
 */
export type Options<T> = Input & {
  readonly toolkit: Autonomous<T>
  /** Model turns allowed (default 4). */
  readonly maxRounds?: number | undefined
  /**
   * Tool calls run from one model turn (default 8); the rest are refused back
   * to the model with the code `call-limit`, and audited.
   */
  readonly maxCallsPerRound?: number | undefined
  /** Longest argument text accepted from the model for one call (default 100,000 characters). */
  readonly maxArgumentChars?: number | undefined
  /** A system message placed first. */
  readonly system?: string | undefined
  /** The invocation context; `autonomous` is always true here. */
  readonly context?: Partial<Omit<Invocation.Context, "autonomous">> | undefined
  /**
   * Model turns and tool calls allowed over this agent and every sub-agent
   * it calls (`Agent.tool`), in all; the call or turn past it is refused as
   * `call-limit` or `round-limit`, and `Result.limits` says which agent it stopped.
   *
   * @since 0.4.0
   */
  readonly budget?: Budget | undefined
}

/**
 * The options were unusable: no prompt and no messages, or a round limit that
 * is not a positive whole number.
 *
 * @since 0.1.0
 * @category errors
 */
export { InvalidOptions } from "./internal/agent.js"

/**
 * Every way the loop itself can fail. Tool failures are not here: they go
 * back to the model as structured results.
 *
 * @since 0.1.0
 * @category errors
 */
export type AgentError = ModelError | internal.InvalidOptions

/**
 * The round limit `Agent.run` uses when `maxRounds` is not given: a model that
 * keeps calling tools is stopped after this many turns.
 *
 * @since 0.1.0
 * @category constructors
 */
export const defaultMaxRounds: number = internal.defaultMaxRounds

/**
 * The number of tool calls `Agent.run` runs from one model turn when
 * `maxCallsPerRound` is not given.
 *
 * @since 0.1.0
 * @category constructors
 */
export const defaultMaxCallsPerRound: number = internal.defaultMaxCallsPerRound

/**
 * The default limit on one call's argument text.
 *
 * @since 0.1.0
 * @category constructors
 */
export const defaultMaxArgumentChars: number = internal.defaultMaxArgumentChars

/**
 * Runs the autonomous loop.
 *
 * @example
 * import { Effect } from "effect"
 * import { Agent, ScriptedModel, Toolkit } from "@graded/core"
 *
 * const program = Agent.run({ toolkit: Toolkit.make(), prompt: "Hello?" }).pipe(
 *   Effect.provide(ScriptedModel.layer([ScriptedModel.text("Hello!")]))
 * )
 *
 * @since 0.1.0
 * @category constructors
 */
export const run = <T extends Toolkit.Any>(
  options: Options<T>
): Effect<Result<Toolkit.Tools<T>>, AgentError, LanguageModel | Toolkit.Requirements<T>> =>
  // The loop is written once for any toolkit; this signature restores what
  // the toolkit's type knows: its typed calls and its tools' requirements.
  internal.run(options as internal.RunOptions) as Effect<
    Result<Toolkit.Tools<T>>,
    AgentError,
    LanguageModel | Toolkit.Requirements<T>
  >

/**
 * What `Agent.supervised` takes: any tools (reads, writes and sends), a prompt
 * or messages, and the same limits, system message and context as `Agent.run`.
 *
 * @since 0.1.0
 * @category models
 */
export type SupervisedOptions<T> = Input & {
  readonly toolkit: T
  /** Model turns allowed (default 4). */
  readonly maxRounds?: number | undefined
  /** Tool calls run from one model turn (default 8); the rest are refused with `call-limit`. */
  readonly maxCallsPerRound?: number | undefined
  /** Longest argument text accepted from the model for one call (default 100,000 characters). */
  readonly maxArgumentChars?: number | undefined
  /** A system message placed first. */
  readonly system?: string | undefined
  /** The invocation context: who the human supervising is (`actor`), the page, features, trace id. */
  readonly context?: Partial<Omit<Invocation.Context, "autonomous">> | undefined
}

/**
 * Runs the loop under a human's supervision: the model may call every tool of
 * the toolkit. Reads run at once, as the model's (marked autonomous, under
 * capabilities that refuse). A write or send waits for a human, asked through
 * the caller's `HumanConfirm` with the exact payload (a send's prepared one):
 * approved, it runs or is delivered; edited, the edit is decoded again;
 * rejected, the model gets the reason as the call's result. The calls of one
 * turn are asked together, and the turn goes on once all are decided. Its type
 * needs `WriteCapability`/`SendCapability` for the toolkit's writes and sends,
 * so it compiles only where a `HumanConfirm` layer is provided; called from a
 * model's fiber or a read tool's own code, every write and send is refused.
 * It is the loop of `Runs.start` on stores of its own in memory, each
 * proposal decided through the caller's `HumanConfirm` as it comes: outcomes
 * and audit are those of a durable run (a restart loses it).
 *
 * @example
 * import { Effect, Layer } from "effect"
 * import { Agent, HumanConfirm, ScriptedModel, type Tool, Toolkit } from "@graded/core"
 *
 * declare const SendReply: Tool.SendTool<"chat.sendMessage", { text: string }, { text: string }, { delivered: boolean }, never, never>
 *
 * const program = Agent.supervised({ toolkit: Toolkit.make(SendReply), prompt: "Tell the customer it is fixed." }).pipe(
 *   Effect.provide(Layer.merge(
 *     ScriptedModel.layer([ScriptedModel.calls(ScriptedModel.call("chat.sendMessage", { text: "Fixed." })), ScriptedModel.text("Sent.")]),
 *     HumanConfirm.layer(HumanConfirm.scripted([HumanConfirm.approve("agent:alice")]))
 *   ))
 * )
 *
 * @since 0.1.0
 * @category constructors
 */
export const supervised = <T extends Toolkit.Any>(
  options: SupervisedOptions<T>
): Effect<
  Result<Toolkit.Tools<T>>,
  AgentError,
  LanguageModel | Toolkit.Requirements<T> | NeedsHumanConfirmFor<Toolkit.Tools<T>[number]>
> =>
  supervisedRun(options as internal.RunOptions) as Effect<
    Result<Toolkit.Tools<T>>,
    AgentError,
    LanguageModel | Toolkit.Requirements<T> | NeedsHumanConfirmFor<Toolkit.Tools<T>[number]>
  >

/**
 * What a streaming loop tells as it goes, in order: the model's text as it
 * comes (`text-delta`), each call as its arguments arrive (`call-start`, then
 * `call-delta` pieces of its JSON; nothing is judged or run on a part), a
 * refusal with the gate and reason (`refused`), each call's outcome once known
 * (`call`: it ran, with its typed input and output, or why not), and, where a
 * human decides, each write or send waiting with its card (`pending`: the
 * proposal, with the exact payload) and the decision once made (`decided`).
 * `round` is the model turn. `tool` is the name the model asked for, mapped
 * from its wire form and escaped as the audit stores it.
 *
 * @since 0.2.0
 * @category models
 */
export type Event<Tools extends ReadonlyArray<Tool.Any>> =
  | { readonly type: "text-delta"; readonly round: number; readonly delta: string }
  | { readonly type: "call-start"; readonly round: number; readonly id: string; readonly tool: string }
  | { readonly type: "call-delta"; readonly round: number; readonly id: string; readonly delta: string }
  | {
    readonly type: "refused"
    readonly round: number
    readonly id: string
    readonly tool: string
    readonly gate: string
    readonly reason: string
  }
  | { readonly type: "call"; readonly round: number; readonly call: Call<Tools> }
  | { readonly type: "pending"; readonly proposal: Proposal }
  | { readonly type: "decided"; readonly proposal: Proposal }

/**
 * The last event of `runStream` and `supervisedStream`: the loop's result, as
 * `run` and `supervised` succeed with it.
 *
 * @since 0.2.0
 * @category models
 */
export interface End<Tools extends ReadonlyArray<Tool.Any>> {
  readonly type: "end"
  readonly result: Result<Tools>
}

/**
 * `run`, streamed: the same loop, gates and audit, told as a `Stream` of
 * events that ends with the result. The model's turns are streamed where its
 * adapter streams (`LanguageModel.Service.stream`); a call is judged once its
 * arguments are complete, and one the stream cut is refused, never run.
 * Ending the stream early interrupts the run.
 *
 * @example
 * import { Effect, Stream } from "effect"
 * import { Agent, ScriptedModel, Toolkit } from "@graded/core"
 *
 * const program = Agent.runStream({ toolkit: Toolkit.make(), prompt: "Hello?" }).pipe(
 *   Stream.runForEach((event) => Effect.log(event.type === "text-delta" ? event.delta : event.type)),
 *   Effect.provide(ScriptedModel.layer([ScriptedModel.text("Hello!")]))
 * )
 *
 * @since 0.2.0
 * @category constructors
 */
export const runStream = <T extends Toolkit.Any>(
  options: Options<T>
): Stream<Event<Toolkit.Tools<T>> | End<Toolkit.Tools<T>>, AgentError, LanguageModel | Toolkit.Requirements<T>> =>
  eventStream(
    (emit) => internal.run(options as internal.RunOptions, emit),
    (result) => ({ type: "end", result })
  ) as Stream<Event<Toolkit.Tools<T>> | End<Toolkit.Tools<T>>, AgentError, LanguageModel | Toolkit.Requirements<T>>

/**
 * `supervised`, streamed: each write or send waits as a `pending` event with
 * its proposal (the card: the exact payload a human decides) while the run
 * asks the caller's `HumanConfirm`; the decision is a `decided` event, the
 * call's outcome follows, and the model's next turn streams on in the same
 * stream. Ending the stream early interrupts the run; nothing waiting is run.
 *
 * @since 0.2.0
 * @category constructors
 */
export const supervisedStream = <T extends Toolkit.Any>(
  options: SupervisedOptions<T>
): Stream<
  Event<Toolkit.Tools<T>> | End<Toolkit.Tools<T>>,
  AgentError,
  LanguageModel | Toolkit.Requirements<T> | NeedsHumanConfirmFor<Toolkit.Tools<T>[number]>
> =>
  eventStream(
    (emit) => supervisedRun(options as internal.RunOptions, emit),
    (result) => ({ type: "end", result })
  ) as Stream<
    Event<Toolkit.Tools<T>> | End<Toolkit.Tools<T>>,
    AgentError,
    LanguageModel | Toolkit.Requirements<T> | NeedsHumanConfirmFor<Toolkit.Tools<T>[number]>
  >

// ---------------------------------------------------------------------------
// Sub-agents
// ---------------------------------------------------------------------------

/**
 * The grade of a sub-agent holding tools of grades `G`: the highest of them
 * (`send` over `write` over `read`); `read` for none.
 *
 * @since 0.4.0
 * @category utility types
 */
export type TopGrade<G> = "send" extends G ? "send" : "write" extends G ? "write" : "read"

/**
 * An agent another agent calls as a tool (`Agent.tool`). Its grade is the
 * highest grade of the tools it holds and its requirements are theirs, their
 * capabilities included: one holding only reads is a read tool an autonomous
 * loop may call; one holding a write or send needs that capability, so
 * `Agent.run` over it does not compile, and its message names the path to
 * each tool that needs one.
 *
 * @since 0.4.0
 * @category models
 */
export interface SubAgent<Name extends string, Tools extends ReadonlyArray<Tool.Any>, I, O> extends
  Tool.Tool<
    Name,
    TopGrade<Tools[number]["grade"]>,
    I,
    O,
    SubAgentNoAnswer | SubAgentBadAnswer,
    LanguageModel | Tool.Requirements<Tools[number]>
  >
{
  /** What the sub-agent runs with: its tools and its instructions. */
  readonly subAgent: { readonly toolkit: Toolkit.Toolkit<Tools>; readonly instructions: string }
}

/**
 * What `Agent.tool` takes: the tool's options (a title and a description for
 * the calling model), the sub-agent's toolkit and instructions (its system
 * message), the input the calling model gives, and optionally the output it
 * answers with (its answer is read as JSON and decoded; unset, the answer is
 * its text), how the input becomes its prompt (unset, the input as JSON), its
 * own limits and its own model (unset, the calling run's).
 *
 * @since 0.4.0
 * @category models
 */
export interface ToolOptions<T, I, IE, O, OE> extends Omit<Tool.Options, "failureMessages"> {
  readonly toolkit: T
  readonly instructions: string
  readonly input: Schema.Codec<I, IE>
  readonly output?: Schema.Codec<O, OE> | undefined
  readonly prompt?: ((input: I) => string) | undefined
  /** The sub-agent's model turns for one call (default 4). */
  readonly maxRounds?: number | undefined
  /** The sub-agent's tool calls from one turn (default 8). */
  readonly maxCallsPerRound?: number | undefined
  readonly model?: Layer<LanguageModel> | undefined
}

/**
 * A sub-agent's failure told to the calling model (never a defect): it gave
 * no answer (a limit stopped it, its model failed), or one that is not of the
 * form its `output` says.
 *
 * @since 0.4.0
 * @category errors
 */
export { SubAgentBadAnswer, SubAgentNoAnswer } from "./internal/subAgent.js"

/**
 * An agent usable as a tool by another agent. A call runs the sub-agent's own
 * loop (the one loop of `Agent.run`, autonomous) on the input, with its
 * toolkit and instructions; its answer is the call's output. What its model
 * read that is marked untrusted marks the calling run too, every audit entry
 * written inside it carries its path (`agent`) and the run's trace id, and
 * the run's `budget` counts its turns and calls.
 *
 * @example
 * import { Effect, Schema } from "effect"
 * import { Agent, Tool, Toolkit } from "@graded/core"
 *
 * const KbSearch = Tool.read("kb.search", {
 *   title: "Search the knowledge base",
 *   description: "Find articles that answer a customer's question.",
 *   input: Schema.Struct({ query: Schema.String }),
 *   output: Schema.Array(Schema.String),
 *   run: ({ query }) => Effect.succeed([`About ${query}`])
 * })
 *
 * const Researcher = Agent.tool("agent.researcher", {
 *   title: "Researcher",
 *   description: "Finds what the knowledge base says about a question.",
 *   toolkit: Toolkit.make(KbSearch),
 *   instructions: "Search the knowledge base and answer in one sentence.",
 *   input: Schema.Struct({ question: Schema.String }),
 *   prompt: ({ question }) => question
 * })
 *
 * const program = Agent.run({ toolkit: Toolkit.make(Researcher), prompt: "How do refunds work?" })
 *
 * @since 0.4.0
 * @category constructors
 */
export const tool = <const Name extends string, T extends Toolkit.Any, I, IE, O = string, OE = string>(
  name: ValidName<Name>,
  options: ToolOptions<T, I, IE, O, OE>
): SubAgent<Name, Toolkit.Tools<T>, I, O> =>
  makeSubAgent(name as string, options as never) as unknown as SubAgent<Name, Toolkit.Tools<T>, I, O>
