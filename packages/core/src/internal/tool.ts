import { Data, Effect, type Schema } from "effect"
import { pipeArguments } from "effect/Pipeable"
import * as Audit from "../Audit.js"
import { labelled, labelsOf } from "./audit.js"
import type { Confirmed, SendCapability, WriteCapability } from "../Capability.js"
import type {
  Any,
  Delivery,
  Facts,
  Options,
  ReadDefinition,
  SendDefinition,
  SendTool,
  Tool,
  WriteDefinition
} from "../Tool.js"
import { type ConfirmError, Refused } from "../ToolError.js"
import type { Grade, Part } from "../Grade.js"
import { checkName } from "../Wire.js"
import { authorityOf, consumeConfirmed, SendCapabilityTag, WriteCapabilityTag } from "./capability.js"
import { frozenSchema, sealShared } from "./seal.js"
import { asToolCode, type Ceiling, mayCause } from "./authority.js"
import { refuse } from "./refuse.js"
import { type Confirmer, type ConfirmOptions, keep, type Outcome, type SchemaCode, stateOf } from "./toolState.js"

export type { Confirmer, ConfirmOptions, Outcome }

export const TypeId: unique symbol = Symbol.for("@graded/core/Tool")

export class InvalidName extends Data.TaggedError("@graded/core/Tool/InvalidName")<{
  readonly name: string
  readonly message: string
}> {}

export const isSend = (tool: Any): tool is SendTool<string, any, any, any, any, any> => tool.grade === "send"

const Proto = {
  [TypeId]: TypeId,
  pipe() {
    return pipeArguments(this, arguments)
  }
}

// The tool keeps its schemas with the encoded side widened to `unknown`: the
// encoded type matters only where the definition is written, and keeping it
// would add two type parameters to every tool.
// Frozen with its AST (seal.ts): code that holds the tool cannot swap what
// it decodes, encodes or shows a human.
const erase = <A, I>(schema: Schema.Codec<A, I>): Schema.Codec<A, unknown> =>
  frozenSchema(schema) as Schema.Codec<A, unknown>

// `failureMessages` is typed by the tool's failures where it is written
// (Tool.FailureMessages); the tool keeps it as text by tag.
const options = (
  definition: Omit<Options, "failureMessages"> & {
    readonly facts?: Facts<any> | undefined
    readonly failureMessages?: { readonly [tag: string]: string | undefined } | undefined
  }
) => ({
  title: definition.title,
  description: definition.description,
  features: definition.features,
  pages: definition.pages,
  tags: definition.tags,
  sideEffects: definition.sideEffects,
  facts: definition.facts === undefined ? undefined : Object.freeze({ ...definition.facts }),
  openWorld: definition.openWorld,
  destructive: definition.destructive,
  untrusted: definition.untrusted,
  failureMessages: definition.failureMessages as Options["failureMessages"],
  limits: definition.limits
})

const checked = (name: string): string => {
  const problem = checkName(name)
  if (problem !== undefined) throw new InvalidName({ name, message: problem })
  return name
}

// A tool made here is frozen and kept with its record (toolState.ts).
const make = <T extends Any>(fields: Omit<T, typeof TypeId | "pipe">, confirmer?: Confirmer): T => {
  // Before any tool's code can run (a bundle may leave out the index's own).
  sealShared()
  const tool: T = Object.freeze(Object.assign(Object.create(Proto), fields))
  keep(tool, {
    labels: labelsOf(tool),
    inSchema: within(tool.name, tool.grade, "schema", "read"),
    confirmer
  })
  return tool
}

export const isMade = (tool: unknown): boolean => stateOf(tool) !== undefined

export const confirmerOf = (tool: Any): Confirmer | undefined => stateOf(tool)?.confirmer

const forged = (tool: string, capability: string) =>
  refuse(new Refused({ tool, gate: "capability", reason: `this ${capability} was not granted by graded` }))

const spent = (tool: string) =>
  refuse(
    new Refused({
      tool,
      gate: "confirmation",
      reason: "this confirmation was already delivered, belongs to another tool, or was not made by HumanConfirm"
    })
  )

const noBefore = () => Effect.void

// Where a tool's own code runs, the fiber may cause nothing above `ceiling`:
// a read tool that provides its own HumanConfirm, starts a plan or delivers a
// confirmation it kept is refused, whatever it provides.
const within = (tool: string, grade: Grade, part: Part, ceiling: Ceiling) =>
  asToolCode(Object.freeze({ tool, grade, part }), ceiling)

/**
 * Runs the effect of a tool's schema (an encode for the human's card, a
 * decode of an edit, an output encoded where the synchronous encoder could
 * not) as the tool's own code: a transformation's effect may cause nothing
 * above a read, and what it builds is tainted.
 */
export const inSchema = (tool: Any): SchemaCode =>
  stateOf(tool)?.inSchema ?? within(tool.name, tool.grade, "schema", "read")

export const makeRead = <Name extends string, I, IE, O, OE, E, R>(
  name: Name,
  definition: ReadDefinition<Name, I, IE, O, OE, E, R>,
  // Fields of a kind of read tool built on this one (a sub-agent's `subAgent`).
  extra: object = {}
): Tool<Name, "read", I, O, E, R> => {
  const run = definition.run as (input: I) => Effect.Effect<O, E, R>
  const guard = within(checked(name), "read", "run", "read")
  const tool = make<Tool<Name, "read", I, O, E, R>>({
    ...extra,
    ...options(definition),
    name,
    grade: "read",
    input: erase(definition.input),
    output: erase(definition.output),
    invoke: (input) => guard(Effect.suspend(() => run(input)))
  })
  return tool
}

export const makeWrite = <Name extends string, I, IE, O, OE, E, R>(
  name: Name,
  definition: WriteDefinition<Name, I, IE, O, OE, E, R>,
  extra: object = {}
): Tool<Name, "write", I, O, E, R> => {
  const run = definition.run as (input: I, delivery: Delivery) => Effect.Effect<O, E, R>
  const input = erase(definition.input)
  const guard = within(checked(name), "write", "run", "write")
  // Every entry of the confirmation and delivery carries the tool's labels.
  const stamp = labelled({ name, tags: definition.tags, sideEffects: definition.sideEffects })
  const confirmAndRun = (
    payload: I,
    { beforeEffect = noBefore, idempotencyKey }: ConfirmOptions = {}
  ): Effect.Effect<Outcome, unknown, R | WriteCapability> =>
    stamp(Effect.gen(function*() {
      const capability = yield* WriteCapabilityTag
      const authority = authorityOf(capability)
      if (authority === undefined) return yield* forged(name, "WriteCapability")
      const confirmed = yield* authority.confirm({ tool, grade: "write", payload, schema: input, idempotencyKey })
      // Whoever authorized it, the write itself is refused where none may happen.
      const refusal = yield* mayCause(name, "write")
      if (refusal !== undefined) return yield* refuse(refusal)
      yield* beforeEffect(confirmed)
      if (!consumeConfirmed(confirmed, tool)) return yield* spent(name)
      const { idempotencyKey: key } = confirmed
      const output = yield* guard(Effect.suspend(() => run(confirmed.payload as I, { idempotencyKey: key })))
      yield* Audit.record({ type: "delivered", tool: name, by: confirmed.by, key: confirmed.idempotencyKey })
      return { output, by: confirmed.by, edited: confirmed.edited }
    }))
  const tool: Tool<Name, "write", I, O, E, R> = make<Tool<Name, "write", I, O, E, R>>({
    ...extra,
    ...options(definition),
    name,
    grade: "write",
    input,
    output: erase(definition.output),
    invoke: (payload) =>
      Effect.map(
        confirmAndRun(payload) as Effect.Effect<Outcome, E | ConfirmError, R | WriteCapability>,
        (outcome) => outcome.output as O
      )
  }, confirmAndRun as Confirmer)
  return tool
}

export const makeSend = <Name extends string, I, IE, P, PE, O, OE, E1, R1, E2, R2>(
  name: Name,
  definition: SendDefinition<Name, I, IE, P, PE, O, OE, E1, R1, E2, R2>,
  extra: object = {}
): SendTool<Name, I, P, O, E1 | E2, R1 | R2> => {
  const prepare = definition.prepare as (input: I) => Effect.Effect<P, E1, R1>
  const payloadSchema = erase(definition.payload)
  // prepare builds the payload and may cause nothing: it runs as a read.
  const preparing = within(checked(name), "send", "prepare", "read")
  // deliver sends, once a human confirmed; what it builds (a HumanConfirm, a
  // trigger) is tainted, and a finalizer it leaves runs before it returns.
  const delivering = within(checked(name), "send", "deliver", "send")
  const stamp = labelled({ name, tags: definition.tags, sideEffects: definition.sideEffects })
  const deliver = (confirmed: Confirmed<P, Name>): Effect.Effect<O, E2 | Refused, R2> =>
    Effect.flatMap(mayCause(name, "send"), (refusal): Effect.Effect<O, E2 | Refused, R2> => {
      if (refusal !== undefined) return refuse(refusal)
      if (!consumeConfirmed(confirmed, tool)) return spent(name)
      return Effect.tap(
        delivering(Effect.suspend(() => definition.deliver(confirmed))),
        () => Audit.record({ type: "delivered", tool: name, by: confirmed.by, key: confirmed.idempotencyKey })
      )
    })
  const confirmAndDeliver = (
    payload: P,
    { beforeEffect = noBefore, idempotencyKey }: ConfirmOptions = {}
  ): Effect.Effect<Outcome, unknown, R2 | SendCapability> =>
    stamp(Effect.gen(function*() {
      const capability = yield* SendCapabilityTag
      const authority = authorityOf(capability)
      if (authority === undefined) return yield* forged(name, "SendCapability")
      const confirmed = yield* authority.confirm({
        tool,
        grade: "send",
        payload,
        schema: payloadSchema,
        idempotencyKey
      })
      yield* beforeEffect(confirmed)
      const output = yield* deliver(confirmed as Confirmed<P, Name>)
      return { output, by: confirmed.by, edited: confirmed.edited }
    }))
  const tool: SendTool<Name, I, P, O, E1 | E2, R1 | R2> = make<SendTool<Name, I, P, O, E1 | E2, R1 | R2>>({
    ...extra,
    ...options(definition),
    name,
    grade: "send",
    input: erase(definition.input),
    payload: payloadSchema,
    output: erase(definition.output),
    prepare: (input) => preparing(Effect.suspend(() => prepare(input))),
    deliver,
    invoke: (input) =>
      Effect.flatMap(
        preparing(Effect.suspend(() => prepare(input))),
        (payload) =>
          Effect.map(
            confirmAndDeliver(payload) as Effect.Effect<Outcome, E2 | ConfirmError, R2 | SendCapability>,
            (outcome) => outcome.output as O
          )
      )
  }, confirmAndDeliver as Confirmer)
  return tool
}
