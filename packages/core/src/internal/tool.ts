import { Data, Effect, JSONSchema, ParseResult, Schema } from "effect"
import { pipeArguments } from "effect/Pipeable"
import type { Confirmed, Request } from "../Capability.js"
import * as Audit from "../Audit.js"
import { SendCapability, WriteCapability } from "../Capability.js"
import type { Grade } from "../Grade.js"
import type { Any, Options, ReadDefinition, SendDefinition, SendTool, Tool, WriteDefinition } from "../Tool.js"
import { InvalidInput, InvalidOutput, Refused } from "../ToolError.js"
import { checkName } from "../Wire.js"
import { consumeConfirmed, isGranted } from "./capability.js"

export const TypeId: unique symbol = Symbol.for("@graded/core/Tool")

export class InvalidName extends Data.TaggedError("@graded/core/Tool/InvalidName")<{
  readonly name: string
  readonly message: string
}> {}

export const advice = (grade: Grade, part: string): string =>
  grade === "read" ? "grade it Tool.write or Tool.send, or remove that call"
  : grade === "write" ? "grade it Tool.send, or remove that call"
  : part === "prepare" ? "prepare only builds the payload; do the effect in deliver"
  : "remove that call"

const Proto = {
  [TypeId]: TypeId,
  pipe() {
    return pipeArguments(this, arguments)
  }
}

// Excess properties are an error everywhere graded decodes: a model that adds
// a field it was not asked for is told so rather than silently ignored.
export const strict = { onExcessProperty: "error", errors: "all" } as const

// The tool keeps its schemas with the encoded side widened to `unknown`: the
// encoded type matters only where the definition is written, and keeping it
// would add two type parameters to every tool.
const erase = <A, I>(schema: Schema.Schema<A, I>): Schema.Schema<A, unknown> =>
  schema as unknown as Schema.Schema<A, unknown>

const options = (definition: Options): Options => ({
  title: definition.title,
  description: definition.description,
  features: definition.features,
  pages: definition.pages,
  tags: definition.tags,
  failureMessages: definition.failureMessages,
  limits: definition.limits
})

const checked = (name: string): string => {
  const problem = checkName(name)
  if (problem !== undefined) throw new InvalidName({ name, message: problem })
  return name
}

const make = <T extends Any>(fields: Omit<T, typeof TypeId | "pipe">): T =>
  Object.assign(Object.create(Proto), fields)

export const issueText = (error: ParseResult.ParseError): string => ParseResult.TreeFormatter.formatErrorSync(error)

// What the human sees: the payload encoded with its schema, plain JSON.
const shown = <P>(tool: string, schema: Schema.Schema<P, unknown>, payload: P) =>
  Schema.encode(schema)(payload).pipe(
    Effect.mapError((error) => new InvalidOutput({ tool, issue: issueText(error) }))
  )

const revalidate = <P>(tool: string, schema: Schema.Schema<P, unknown>) => (edited: unknown) =>
  Schema.decodeUnknown(schema, strict)(edited)

// The payload's JSON Schema, for UIs that build an edit form; made once.
const jsonSchemas = new WeakMap<object, unknown>()
export const jsonSchemaOf = (schema: Schema.Schema<any, any>): unknown => {
  if (!jsonSchemas.has(schema)) {
    let made: unknown
    try {
      made = JSONSchema.make(schema)
    } catch {
      made = undefined
    }
    jsonSchemas.set(schema, made)
  }
  return jsonSchemas.get(schema)
}

const forged = (tool: string, capability: string) =>
  new Refused({ tool, gate: "capability", reason: `this ${capability} was not granted by graded` })

const spent = (tool: string) =>
  new Refused({
    tool,
    gate: "confirmation",
    reason: "this confirmation was already delivered, belongs to another tool, or was not made by HumanConfirm"
  })

export const makeRead = <Name extends string, I, IE, O, OE, E, R>(
  name: Name,
  definition: ReadDefinition<Name, I, IE, O, OE, E, R>
): Tool<Name, "read", I, O, E, R> => {
  const run = definition.run as (input: I) => Effect.Effect<O, E, R>
  return make<Tool<Name, "read", I, O, E, R>>({
    ...options(definition),
    name: checked(name) as Name,
    grade: "read",
    input: erase(definition.input),
    output: erase(definition.output),
    invoke: (input) => Effect.suspend(() => run(input))
  })
}

export const makeWrite = <Name extends string, I, IE, O, OE, E, R>(
  name: Name,
  definition: WriteDefinition<Name, I, IE, O, OE, E, R>
): Tool<Name, "write", I, O, E, R> => {
  const run = definition.run as (input: I) => Effect.Effect<O, E, R>
  const input = erase(definition.input)
  checked(name)
  return make<Tool<Name, "write", I, O, E, R>>({
    ...options(definition),
    name,
    grade: "write",
    input,
    output: erase(definition.output),
    invoke: (payload) =>
      Effect.gen(function*() {
        const capability = yield* WriteCapability
        if (!isGranted(capability)) return yield* forged(name, "WriteCapability")
        const request: Request<I> = {
          tool: name,
          grade: "write",
          title: definition.title,
          description: definition.description,
          payload,
          shown: yield* shown(name, input, payload),
          revalidate: revalidate(name, input),
          schema: jsonSchemaOf(input)
        }
        const confirmed = yield* capability.authorize(request)
        if (confirmed.tool !== name || !consumeConfirmed(confirmed)) return yield* spent(name)
        const output = yield* Effect.suspend(() => run(confirmed.payload))
        yield* Audit.record({ type: "delivered", tool: name, by: confirmed.by })
        return output
      })
  })
}

export const makeSend = <Name extends string, I, IE, P, PE, O, OE, E1, R1, E2, R2>(
  name: Name,
  definition: SendDefinition<Name, I, IE, P, PE, O, OE, E1, R1, E2, R2>
): SendTool<Name, I, P, O, E1 | E2, R1 | R2> => {
  const prepare = definition.prepare as (input: I) => Effect.Effect<P, E1, R1>
  const payloadSchema = erase(definition.payload)
  checked(name)
  const deliver = (confirmed: Confirmed<P>): Effect.Effect<O, E2 | Refused, R2> =>
    Effect.suspend((): Effect.Effect<O, E2 | Refused, R2> =>
      confirmed.tool === name && consumeConfirmed(confirmed)
        ? Effect.tap(
          definition.deliver(confirmed),
          () => Audit.record({ type: "delivered", tool: name, by: confirmed.by })
        )
        : Effect.fail(spent(name))
    )
  return make<SendTool<Name, I, P, O, E1 | E2, R1 | R2>>({
    ...options(definition),
    name,
    grade: "send",
    input: erase(definition.input),
    payload: payloadSchema,
    output: erase(definition.output),
    prepare: (input) => Effect.suspend(() => prepare(input)),
    deliver,
    invoke: (input) =>
      Effect.gen(function*() {
        const capability = yield* SendCapability
        if (!isGranted(capability)) return yield* forged(name, "SendCapability")
        const payload = yield* Effect.suspend(() => prepare(input))
        const confirmed = yield* capability.confirm({
          tool: name,
          grade: "send",
          title: definition.title,
          description: definition.description,
          payload,
          shown: yield* shown(name, payloadSchema, payload),
          revalidate: revalidate(name, payloadSchema),
          schema: jsonSchemaOf(payloadSchema)
        })
        return yield* deliver(confirmed)
      })
  })
}

export const invalidInput = (tool: string, error: ParseResult.ParseError) =>
  new InvalidInput({ tool, issue: issueText(error) })
