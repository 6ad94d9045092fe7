/**
 * A tool is a named capability a model or a human can call, graded by its
 * side effect. Its grade decides what `invoke` requires: nothing more for a
 * `read`, `WriteCapability` for a `write`, `SendCapability` for a `send`.
 *
 * @since 0.1.0
 */
import type { Schema } from "effect"
import type { Effect } from "effect/Effect"
import type { Pipeable } from "effect/Pipeable"
import type { Confirmed, HumanTrigger, SendCapability, WriteCapability } from "./Capability.js"
import * as Grade_ from "./Grade.js"
import type * as Invocation from "./Invocation.js"
import * as internal from "./internal/tool.js"
import * as Proposal from "./Proposal.js"
import type { ToolError } from "./ToolError.js"
import type { ValidName } from "./Wire.js"

/**
 * The key that marks a graded tool; `Tool.isTool` checks for it.
 *
 * @since 0.1.0
 * @category symbols
 */
export const TypeId: typeof internal.TypeId = internal.TypeId

/**
 * @since 0.1.0
 * @category symbols
 */
export type TypeId = typeof TypeId

/**
 * How much of a result reaches the model. Trimming happens inside the tool,
 * never by cutting the JSON text.
 *
 * @since 0.1.0
 * @category models
 */
export interface Limits {
  /** Longest array the model sees; longer arrays are cut with a marker. */
  readonly maxItems?: number | undefined
  /** Longest serialized result the model sees (default 4000). */
  readonly maxChars?: number | undefined
}

/**
 * What every grade's definition has in common.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** A short name for people: panels and logs. */
  readonly title: string
  /** For the model: what the tool does and when to use it. */
  readonly description: string
  /** Feature flags the tool needs: unless the caller has licensed every one of them, the tool is not offered. */
  readonly features?: ReadonlyArray<string> | undefined
  /** Page types the tool is meant for. An unknown page never blocks it. */
  readonly pages?: ReadonlyArray<string> | undefined
  /**
   * Its arguments reach an outside party (fetching a URL the model chose, a web
   * search): data the model puts in them leaves the system. Shown in listings,
   * in the function definition's description and in audit; once untrusted
   * content entered an autonomous run, the registry refuses it.
   */
  readonly openWorld?: boolean | undefined
  /**
   * For a write or send: `false` when a call only adds (a new ticket, a new
   * note) and never overwrites or deletes what is there. Announced to MCP
   * clients as `destructiveHint`; unset, a write or send counts as
   * destructive, the safe reading. A read ignores it. Grades and gates do not
   * read it: a non-destructive write is still a write.
   */
  readonly destructive?: boolean | undefined
  /**
   * Its output comes from outside and may carry instructions (a web page, an
   * inbound email). Once a model has read it, open-world tools are refused for
   * the rest of the run.
   */
  readonly untrusted?: boolean | undefined
  /** Compliance labels (`pii`, `credit-bureau`): written into every audit entry of the tool's calls. */
  readonly tags?: ReadonlyArray<string> | undefined
  /**
   * What a call changes in the world, in words ("records an inquiry at the
   * credit bureau"): written into every audit entry of the tool's calls, and
   * asked for by a policy's contract review.
   */
  readonly sideEffects?: ReadonlyArray<string> | undefined
  /** The fixed text a model or user sees for each failure, by error tag. */
  readonly failureMessages?: Readonly<Record<string, string>> | undefined
  readonly limits?: Limits | undefined
}

/**
 * A graded tool.
 *
 * @since 0.1.0
 * @category models
 */
export interface Tool<Name extends string, G extends Grade_.Grade, I, O, E, R> extends Pipeable, Options {
  readonly [TypeId]: TypeId
  readonly name: Name
  readonly grade: G
  /** Decodes what a model or a form sends. */
  readonly input: Schema.Codec<I, unknown>
  /** Encodes what the tool returns; fields not declared here are dropped. */
  readonly output: Schema.Codec<O, unknown>
  /** Runs the tool. Write and send tools ask for their capability first. */
  readonly invoke: (input: I) => Effect<O, ToolError<E>, R | Grade_.Capability<G>>
  /** The facts a successful result records for the rest of an agent run, by name. */
  readonly facts?: Facts<any> | undefined
}

/**
 * Facts a tool's result records, by name: each function reads the typed
 * output. An agent run adds them to its invocation context after the call,
 * so a policy's conditions can depend on what earlier tools found.
 *
 * @since 0.1.0
 * @category models
 */
export type Facts<O> = Readonly<Record<string, (output: O) => Invocation.Fact>>

/**
 * A send tool: `prepare` builds the payload and has no way to send; only
 * `deliver`, given a `Confirmed` payload, sends.
 *
 * @since 0.1.0
 * @category models
 */
export interface SendTool<Name extends string, I, P, O, E, R> extends Tool<Name, "send", I, O, E, R> {
  /** Decodes a payload a human edited. */
  readonly payload: Schema.Codec<P, unknown>
  /** Builds the payload a human will be asked to confirm. Sends nothing. */
  readonly prepare: (input: I) => Effect<P, ToolError<E>, R>
  /**
   * Sends a confirmed payload. Refuses one already delivered, made for
   * another tool or by hand, and any call from a fiber that may not send (a
   * model's, or a read tool's own code).
   */
  readonly deliver: (confirmed: Confirmed<P, Name>) => Effect<O, ToolError<E>, R>
}

/**
 * Any tool, for constraints.
 *
 * @since 0.1.0
 * @category models
 */
export interface Any extends Tool<string, Grade_.Grade, any, any, any, any> {}

/**
 * A tool's name as a literal type, such as `"kb.search"`.
 *
 * @since 0.1.0
 * @category utility types
 */
export type Name<T> = T extends Tool<infer N, any, any, any, any, any> ? N : never

/**
 * A tool's grade as a type: `"read"`, `"write"` or `"send"`.
 *
 * @since 0.1.0
 * @category utility types
 */
export type Grade<T> = T extends Tool<any, infer G, any, any, any, any> ? G : never

/**
 * The decoded input a tool's `invoke` takes.
 *
 * @since 0.1.0
 * @category utility types
 */
export type Input<T> = T extends Tool<any, any, infer I, any, any, any> ? I : never

/**
 * What a tool's `invoke` succeeds with, before it is encoded.
 *
 * @since 0.1.0
 * @category utility types
 */
export type Output<T> = T extends Tool<any, any, any, infer O, any, any> ? O : never

/**
 * A tool's own failure type, which `invoke` reports beside graded's errors in
 * `ToolError<E>`.
 *
 * @since 0.1.0
 * @category utility types
 */
export type Error<T> = T extends Tool<any, any, any, any, infer E, any> ? E : never

/**
 * What a tool's own code needs, without the capability its grade adds.
 *
 * @since 0.1.0
 * @category utility types
 */
export type Context<T> = T extends Tool<any, any, any, any, any, infer R> ? R : never

/**
 * Everything `tool.invoke` requires.
 *
 * @since 0.1.0
 * @category utility types
 */
export type Requirements<T> = T extends Tool<any, infer G, any, any, any, infer R> ? R | Grade_.Capability<G> : never

/**
 * Whether a value is a tool (it carries `Tool.TypeId`), for code that gets
 * tools from untyped places.
 *
 * @since 0.1.0
 * @category guards
 */
export const isTool = (u: unknown): u is Any => typeof u === "object" && u !== null && TypeId in u

/**
 * Whether a tool sends: it then has `payload`, `prepare` and `deliver`.
 *
 * @since 0.1.0
 * @category guards
 */
export const isSend: (tool: Any) => tool is SendTool<string, any, any, any, any, any> = internal.isSend

// ---------------------------------------------------------------------------
// Grade honesty: what each part of a definition may not need.
// ---------------------------------------------------------------------------

type Join<A extends string, B extends string> = [A] extends [never] ? B : [B] extends [never] ? A : `${A} and ${B}`

/**
 * The names of the built-in capabilities found in `R`, joined with "and".
 *
 * @since 0.1.0
 * @category utility types
 */
export type CapabilityNames<R> = Join<
  Join<WriteCapability extends R ? "WriteCapability" : never, SendCapability extends R ? "SendCapability" : never>,
  HumanTrigger extends R ? "HumanTrigger" : never
>

/**
 * What a part of a definition may not require, by grade (the table is
 * `Grade.Forbidden`).
 *
 * @since 0.1.0
 * @category utility types
 */
export type Forbidden<G extends Grade_.Grade, Part extends string> = Grade_.Forbidden<G, Part>

/**
 * The compile error for a dishonest grade; `Grade.GradeViolation`, where it is
 * written.
 *
 * @since 0.1.0
 * @category errors
 */
export type GradeViolation<Name extends string, G extends Grade_.Grade, Part extends string, Caps extends string> =
  Grade_.GradeViolation<Name, G, Part, Caps>

/**
 * The same message at run time; `Grade.gradeViolation`, where it is written.
 *
 * @since 0.1.0
 * @category errors
 */
export const gradeViolation: typeof Grade_.gradeViolation = Grade_.gradeViolation

/**
 * The capabilities of `C` that `R` may need: each one found in `R`, and each
 * one `R` is too wide to rule out (`{}`, `unknown`, `any`, or any other
 * supertype of it). `never` when `R` certainly needs none of them.
 *
 * @example
 * import type { SendCapability, Tool, WriteCapability } from "@graded/core"
 *
 * type Found = Tool.Needed<WriteCapability | string, WriteCapability | SendCapability> // WriteCapability
 * type Wide = Tool.Needed<{}, WriteCapability | SendCapability> // WriteCapability | SendCapability
 *
 * @since 0.1.0
 * @category utility types
 */
// dprint-ignore: dprint would pull the comment below up after the first `?`
export type Needed<R, C> = C extends unknown ?
  // Found in R (C itself, or a subtype of it), or R is a supertype of C.
  [Extract<R, C>] extends [never] ? [C] extends [R] ? C : never : C
  : never

/**
 * The compile error for a part whose requirements are a type parameter (a
 * tool defined inside a generic function): it could stand for any capability,
 * so the grade cannot be checked.
 *
 * @since 0.1.0
 * @category errors
 */
export type GenericViolation<Name extends string, G extends Grade_.Grade, Part extends string> =
  `${Name} is a ${G} tool, but its ${Part} needs a type parameter that could hold ${CapabilityNames<
    Forbidden<G, Part>
  >}: name the services it needs instead`

/**
 * `F` when `Found` is empty, otherwise `Message`. While `Found` cannot be
 * computed (it depends on a type parameter), the compiler shows this type
 * with its first argument: the rule, as a sentence.
 *
 * @since 0.1.0
 * @category utility types
 */
// eslint-disable-next-line @typescript-eslint/no-unused-vars -- Rule is for people: the compiler shows it while Found is unresolved
export type Verdict<Rule extends string, Found, F, Message> = [Found] extends [never] ? F : Message

/**
 * `F` when `R` holds nothing a `G` tool's `Part` may need; otherwise the
 * message naming the tool and what it needs, so the error lands on that part.
 * A requirement too wide to rule a capability out (`{}`, `unknown`) counts as
 * needing it.
 *
 * @since 0.1.0
 * @category utility types
 */
export type Honest<Name extends string, G extends Grade_.Grade, Part extends string, R, F> = Verdict<
  GenericViolation<Name, G, Part>,
  Needed<R, Forbidden<G, Part>>,
  F,
  GradeViolation<Name, G, Part, CapabilityNames<Needed<R, Forbidden<G, Part>>>>
>

// ---------------------------------------------------------------------------
// Definitions and constructors
// ---------------------------------------------------------------------------

/**
 * The error tags of a tool's declared failures (its `E`): what
 * `failureMessages` may be keyed by.
 *
 * @since 0.2.0
 * @category utility types
 */
export type FailureTag<E> = E extends { readonly _tag: infer T extends string } ? T : never

/**
 * `failureMessages` as a definition may give it: a fixed text for each of the
 * tool's declared failures, by its tag. A key that names no failure the tool
 * declares (a typo) does not compile: it would never be shown.
 *
 * @since 0.2.0
 * @category models
 */
// NoInfer: the failures are the ones `run` declares, never read off these keys.
export type FailureMessages<E> = { readonly [K in FailureTag<NoInfer<E>>]?: string }

/**
 * What `Tool.read` takes: the options, input and output schemas, and a `run`
 * that does not compile if it needs a built-in capability.
 *
 * @since 0.1.0
 * @category models
 */
export interface ReadDefinition<Name extends string, I, IE, O, OE, E, R> extends Omit<Options, "failureMessages"> {
  readonly input: Schema.Codec<I, IE>
  readonly output: Schema.Codec<O, OE>
  readonly run: Honest<Name, "read", "run", R, (input: I) => Effect<O, E, R>>
  readonly facts?: Facts<O> | undefined
  readonly failureMessages?: FailureMessages<E> | undefined
}

/**
 * What a write's `run` is given beside its input: the key naming this
 * delivery, to pass to the outside system so that it can recognise a retry
 * (an `Idempotency-Key` header, a unique column). A send's `deliver` finds the
 * same key on its `Confirmed` payload.
 *
 * @since 0.1.0
 * @category models
 */
export interface Delivery {
  readonly idempotencyKey: string
}

/**
 * What `Tool.write` takes: the options, input and output schemas, and a `run`
 * that does not compile if it needs `SendCapability`. `run` runs only once a
 * human approved; its second argument carries the delivery's idempotency key.
 *
 * @since 0.1.0
 * @category models
 */
export interface WriteDefinition<Name extends string, I, IE, O, OE, E, R> extends Omit<Options, "failureMessages"> {
  readonly input: Schema.Codec<I, IE>
  readonly output: Schema.Codec<O, OE>
  readonly run: Honest<Name, "write", "run", R, (input: I, delivery: Delivery) => Effect<O, E, R>>
  readonly facts?: Facts<O> | undefined
  readonly failureMessages?: FailureMessages<E> | undefined
}

/**
 * What `Tool.send` takes: the options, the schemas, a `prepare` that may need
 * neither capability, and a `deliver` that sends a confirmed payload.
 *
 * @since 0.1.0
 * @category models
 */
export interface SendDefinition<Name extends string, I, IE, P, PE, O, OE, E1, R1, E2, R2>
  extends Omit<Options, "failureMessages">
{
  readonly input: Schema.Codec<I, IE>
  /** The schema of the prepared payload; an edit by the human is decoded with it. */
  readonly payload: Schema.Codec<P, PE>
  readonly output: Schema.Codec<O, OE>
  readonly prepare: Honest<Name, "send", "prepare", R1, (input: I) => Effect<P, E1, R1>>
  readonly deliver: (confirmed: Confirmed<P, Name>) => Effect<O, E2, R2>
  readonly facts?: Facts<O> | undefined
  readonly failureMessages?: FailureMessages<E1 | E2> | undefined
}

/**
 * Thrown where a tool is defined with a name the type system could not check
 * (a name typed as `string`, or a cast): the message names the tool.
 *
 * @since 0.1.0
 * @category errors
 */
export { InvalidName } from "./internal/tool.js"

/**
 * A tool that only reads: an autonomous model may call it.
 *
 * @example
 * import { Effect, Schema } from "effect"
 * import { Tool } from "@graded/core"
 *
 * const KbSearch = Tool.read("kb.search", {
 *   title: "Search the knowledge base",
 *   description: "Find articles that answer a customer's question.",
 *   input: Schema.Struct({ query: Schema.String }),
 *   output: Schema.Array(Schema.Struct({ title: Schema.String })),
 *   run: ({ query }) => Effect.succeed([{ title: `About ${query}` }])
 * })
 *
 * @since 0.1.0
 * @category constructors
 */
export const read = <const Name extends string, I, IE, O, OE, E = never, R = never>(
  name: ValidName<Name>,
  definition: ReadDefinition<Name, I, IE, O, OE, E, R>
): Tool<Name, "read", I, O, E, R> => internal.makeRead(name as Name, definition)

/**
 * A tool that changes local state. Its `invoke` requires `WriteCapability`.
 *
 * @example
 * import { Effect, Schema } from "effect"
 * import { Tool } from "@graded/core"
 *
 * const SubmitTicket = Tool.write("ticket.submit", {
 *   title: "Submit a ticket",
 *   description: "File a support ticket.",
 *   input: Schema.Struct({ subject: Schema.String }),
 *   output: Schema.Struct({ id: Schema.String }),
 *   run: () => Effect.succeed({ id: "T-1" })
 * })
 *
 * @since 0.1.0
 * @category constructors
 */
export const write = <const Name extends string, I, IE, O, OE, E = never, R = never>(
  name: ValidName<Name>,
  definition: WriteDefinition<Name, I, IE, O, OE, E, R>
): Tool<Name, "write", I, O, E, R> => internal.makeWrite(name as Name, definition)

/**
 * A tool whose effect people outside see at once and that cannot be undone.
 * Its `invoke` prepares the payload, asks `SendCapability` for a human's
 * confirmation, and only then delivers.
 *
 * @example
 * import { Effect, Schema } from "effect"
 * import { Tool } from "@graded/core"
 *
 * const SendReply = Tool.send("chat.sendMessage", {
 *   title: "Send a chat message",
 *   description: "Send a message to the customer.",
 *   input: Schema.Struct({ text: Schema.String }),
 *   payload: Schema.Struct({ to: Schema.String, text: Schema.String }),
 *   output: Schema.Struct({ delivered: Schema.Boolean }),
 *   prepare: ({ text }) => Effect.succeed({ to: "customer:42", text }),
 *   deliver: () => Effect.succeed({ delivered: true })
 * })
 *
 * @since 0.1.0
 * @category constructors
 */
export const send = <const Name extends string, I, IE, P, PE, O, OE, E1 = never, R1 = never, E2 = never, R2 = never>(
  name: ValidName<Name>,
  definition: SendDefinition<Name, I, IE, P, PE, O, OE, E1, R1, E2, R2>
): SendTool<Name, I, P, O, E1 | E2, R1 | R2> => internal.makeSend(name as Name, definition)

/**
 * Turns a write or send tool into a read tool whose only effect is to record
 * a proposal for a human; the same as `Proposal.tool`, where it is described.
 *
 * @since 0.1.0
 * @category constructors
 */
export const proposal: Proposal.ToolConstructor = Proposal.tool
