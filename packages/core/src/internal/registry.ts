import { Cause, type Context, Effect, type Fiber, Option, Result, SchemaIssue, SchemaParser } from "effect"
import * as Audit from "../Audit.js"
import * as Invocation from "../Invocation.js"
import { labelled, labelsOf, labelsRef, recorder, type Sink, wasAudited } from "./audit.js"
import { admitAll, Guards, guardsHere, screenAll } from "./guard.js"
import type { Screening } from "../Guard.js"
import type { Message } from "../LanguageModel.js"
import { currentRef, isAutonomous } from "./authority.js"
import type { Code, Listing, Options, ToolResult } from "../Registry.js"
import type { Any as AnyTool } from "../Tool.js"
import type { Any as AnyToolkit } from "../Toolkit.js"
import {
  InvalidEdit,
  InvalidInput,
  invalidInputMessage,
  InvalidOutput,
  openWorldReason,
  parseOptions,
  Refused,
  Rejected,
  unexpectedFailure
} from "../ToolError.js"
import * as Printable from "../Printable.js"
import * as Trim from "../Trim.js"
import { toWire } from "../Wire.js"
import { withoutCapabilities } from "./capability.js"
import { compile } from "./functionSchema.js"
import { jsonIssue, plainCopy } from "./jsonData.js"
import { excessKeyCheck } from "./keyCheck.js"
import { keptService } from "./kept.js"
import { inSchema, isSend } from "./tool.js"
import { builtOnce, type Codecs, needsEffect } from "./toolState.js"
import { capabilityName, isConfirmable, needs } from "../Grade.js"

export { strictViolations } from "./functionSchema.js"

interface Verdict {
  readonly code: Code
  readonly gate: string
  readonly reason: string
}

// What a model or user sees of a failure: graded's own messages, or the
// tool's fixed text for its error tag. Raw exception text never reaches them.
export const failureOf = (tool: AnyTool, error: unknown): { code: Code; message: string; gate?: string } => {
  if (error instanceof Refused) return { code: "refused", message: error.message, gate: error.gate }
  if (error instanceof Rejected || error instanceof InvalidEdit) return { code: "rejected", message: error.message }
  if (error instanceof InvalidInput) return { code: "invalid-input", message: error.message }
  if (error instanceof InvalidOutput) {
    return { code: "failed", message: `${tool.name} produced a result it may not return.` }
  }
  const tag = typeof error === "object" && error !== null && "_tag" in error ? String(error._tag) : undefined
  return {
    code: "failed",
    message: (tag !== undefined ? tool.failureMessages?.[tag] : undefined) ?? `${tool.name} failed.`
  }
}

/** The listing with every gate in force, and the rules a guard matched. */
export interface Screened {
  readonly listing: ReadonlyArray<Listing>
  readonly guidelines: Screening["guidelines"]
}

export interface Dispatched {
  readonly result: ToolResult
  /** The decoded input and typed output, when the tool ran and succeeded. */
  readonly success?: { readonly input: unknown; readonly output: unknown } | undefined
  /** The result as JSON, when it was serialized already (a success). */
  readonly text?: string | undefined
}

const refusal = (tool: string, verdict: Verdict, extra: Partial<ToolResult> = {}): Effect.Effect<Dispatched> =>
  Effect.as(
    Audit.record({ type: "refused", tool, gate: verdict.gate, reason: verdict.reason }),
    { result: { ok: false, code: verdict.code, gate: verdict.gate, error: verdict.reason, ...extra } }
  )

export const make = (toolkit: AnyToolkit, options: Options) => {
  const knownPages = new Set(options.pages ?? toolkit.tools.flatMap((tool) => tool.pages ?? []))

  const gates = (tool: AnyTool, context: Invocation.Context): Verdict | undefined => {
    if (tool.features !== undefined && tool.features.length > 0) {
      const licensed = context.features ?? options.features ?? []
      const missing = tool.features.filter((feature) => !licensed.includes(feature))
      if (missing.length > 0) {
        return {
          code: "feature",
          gate: "feature",
          reason: `${tool.name} needs the feature ${missing.join(", ")}, which is not licensed here`
        }
      }
    }
    // Only a page the app recognises can block; an unknown page passes.
    if (
      tool.pages !== undefined && tool.pages.length > 0 && context.page !== undefined && knownPages.has(context.page) &&
      !tool.pages.includes(context.page)
    ) {
      return {
        code: "page",
        gate: "page",
        reason: `${tool.name} is for the ${tool.pages.join(", ")} page(s), not ${context.page}`
      }
    }
    // Untrusted content may tell the model to put private data into an
    // open-world tool's arguments: once it has entered a model's run, those
    // tools are closed. This stops that channel, not a wrong answer.
    if (
      tool.openWorld === true && context.autonomous && context.untrusted !== undefined &&
      context.untrusted.length > 0 &&
      options.openWorldAfterUntrusted !== "allow"
    ) {
      return {
        code: "refused",
        gate: "open-world",
        reason: openWorldReason(tool.name, context.untrusted)
      }
    }
    return undefined
  }

  const offense = (tool: AnyTool, context: Invocation.Context): Verdict | undefined =>
    gates(tool, context) ??
      (context.autonomous && isConfirmable(tool.grade)
        ? {
          code: "requires-confirm",
          gate: "autonomous",
          reason: needs(tool.name, tool.grade, capabilityName(tool.grade))
        }
        : undefined)

  const list = (partial: Partial<Invocation.Context> = {}): ReadonlyArray<Listing> => {
    const context = Invocation.merge(Invocation.initial, partial)
    return toolkit.tools.map((tool) => {
      const verdict = offense(tool, context)
      return {
        name: tool.name,
        wire: toWire(tool.name),
        grade: tool.grade,
        title: tool.title,
        description: tool.description,
        offered: verdict === undefined,
        openWorld: tool.openWorld === true,
        ...(verdict !== undefined ? { gate: verdict.gate, reason: verdict.reason } : {})
      }
    })
  }

  const leftOut = new WeakMap<object, Listing>()

  // The listing with every gate in force: the registry's own, then the
  // guards (a policy) over the tools those passed.
  const screened = (
    context: Invocation.Context,
    conversation?: ReadonlyArray<Message>
  ): Effect.Effect<Screened> =>
    Effect.flatMap(guardsHere, (guards): Effect.Effect<Screened> => {
      const listing = list(context)
      if (guards.length === 0) return Effect.succeed({ listing, guidelines: undefined })
      // The listing is in the toolkit's order.
      const passed = toolkit.tools.filter((_, index) => listing[index]!.offered)
      return Effect.map(screenAll(guards, passed, context, conversation), (screening) => ({
        listing: listing.map((entry): Listing => {
          const verdict = entry.offered ? screening.left.get(entry.name) : undefined
          if (verdict === undefined) return entry
          // A guard that keeps its verdicts (a policy does, per context) gets
          // the same entries back: most of a large toolkit is left out each turn.
          const kept = leftOut.get(verdict)
          if (kept !== undefined && kept.name === entry.name) return kept
          // Written out: on Node 20 a spread followed by more properties costs
          // about a microsecond a property.
          const made: Listing = {
            name: entry.name,
            wire: entry.wire,
            grade: entry.grade,
            title: entry.title,
            description: entry.description,
            offered: false,
            openWorld: entry.openWorld,
            gate: verdict.gate,
            reason: verdict.reason
          }
          leftOut.set(verdict, made)
          return made
        }),
        guidelines: screening.guidelines
      }))
    })

  const candidates = (partial: Partial<Invocation.Context> = {}) =>
    Effect.flatMap(
      Invocation.current,
      (outer) => Effect.map(screened(Invocation.merge(outer, partial)), ({ listing }) => listing)
    )

  const functionSchemas = (partial: Partial<Invocation.Context> = {}) => {
    const context = Invocation.merge(Invocation.initial, partial)
    const definitions = []
    for (const tool of toolkit.tools) {
      if (offense(tool, context) === undefined) definitions.push(compile(tool).definition)
    }
    return definitions
  }

  // What JSON cannot carry (a `__proto__` key, nesting too deep, a number
  // such as Infinity) is refused first; then nulls are dropped from optional
  // fields, and the key check and Effect's decoder run.
  const decode = (tool: AnyTool, input: unknown) => {
    const issue = jsonIssue(input)
    if (issue !== undefined) return Result.fail(invalidInputMessage(tool.name, issue))
    const decoded = codecs(tool).decode(compile(tool).normalize(input))
    // A success as it is: `Result.mapError` would make a new one.
    return Result.isSuccess(decoded)
      ? decoded as unknown as Result.Result<unknown, string>
      : Result.fail(InvalidInput.fromParseError(tool.name, decoded.failure).message)
  }

  // A write or send a model chose: nothing runs or is sent. For a send, the
  // prepared payload goes back so a human can be shown it.
  const requiresConfirm = (tool: AnyTool, input: unknown) =>
    Effect.gen(function*() {
      const verdict: Verdict = {
        code: "requires-confirm",
        gate: "autonomous",
        reason: `${tool.name} is a ${tool.grade} tool: a model may not run it on its own; a human must confirm it`
      }
      const decoded = decode(tool, input)
      if (Result.isFailure(decoded)) return yield* refusal(tool.name, verdict, { requiresConfirm: true })
      const payload = isSend(tool)
        ? yield* withoutCapabilities(tool.prepare(decoded.success)).pipe(
          Effect.flatMap(SchemaParser.encodeUnknownEffect(tool.payload)),
          Effect.option
        )
        : yield* Effect.option(SchemaParser.encodeUnknownEffect(tool.input)(decoded.success))
      return yield* refusal(tool.name, verdict, {
        requiresConfirm: true,
        ...(Option.isSome(payload) ? { confirmPayload: payload.value } : {})
      })
    })

  // The one call path after the gates: decode, "called", the tool's code
  // (isolated in a fiber of its own, tool.ts), encode, fit, "completed". Plain
  // effects rather than a generator (every step of a generator costs a
  // little), the audit sink bound once for the call, and the output encoded
  // without an effect when its schema is synchronous.
  const run = (
    tool: AnyTool,
    input: unknown,
    fiber: Fiber.Fiber<unknown, unknown>
  ): Effect.Effect<Dispatched, never, any> => {
    const decoded = decode(tool, input)
    if (Result.isFailure(decoded)) {
      return refusal(tool.name, { code: "invalid-input", gate: "input", reason: decoded.failure })
    }
    const record = recorder(servicesOf(fiber).sink, fiber, labelsFor(tool, fiber))
    const invoked = afterRun(tool, decoded.success, record, tool.invoke(decoded.success))
    return record === undefined
      ? invoked
      : Effect.andThen(
        record(
          tool.openWorld === true ? { type: "called", tool: tool.name, grade: tool.grade, input, openWorld: true }
            : { type: "called", tool: tool.name, grade: tool.grade, input }
        ),
        invoked
      )
  }

  type Record = ((event: Audit.Event) => Effect.Effect<void>) | undefined

  // The labels the call's entries carry: the tool's, which `labelled` sets
  // around the call, read here because the recorder is bound before it runs.
  const labelsFor = (tool: AnyTool, fiber: Fiber.Fiber<unknown, unknown>) => labelsOf(tool) ?? fiber.getRef(labelsRef)

  // What follows a tool's run: its output encoded, fitted and recorded, or its failure.
  const afterRun = (
    tool: AnyTool,
    value: unknown,
    record: Record,
    invoked: Effect.Effect<unknown, unknown, unknown>
  ): Effect.Effect<Dispatched, never, any> =>
    Effect.matchCauseEffect(invoked, {
      onFailure: (cause) => failed(tool, cause),
      onSuccess: (output) => outputOf(tool, value, record, output)
    })

  const outputOf = (tool: AnyTool, value: unknown, record: Record, output: unknown): Effect.Effect<Dispatched> => {
    const { encodeOutput, encodeOutputSync } = codecs(tool)
    const encoded = encodeOutputSync(output)
    if (encoded !== needsEffect && Result.isSuccess(encoded)) {
      return completed(tool, value, record, output, encoded.success)
    }
    const invalidOutput = (issue: SchemaIssue.Issue) => InvalidOutput.fromParseError(tool.name, issue)
    if (encoded !== needsEffect) return failed(tool, Cause.fail(invalidOutput(encoded.failure)))
    // An output schema that needs an effect to encode.
    return Effect.matchCauseEffect(Effect.mapError(encodeOutput(output), invalidOutput), {
      onFailure: (cause) => failed(tool, cause),
      onSuccess: (encoded) => completed(tool, value, record, output, encoded)
    })
  }

  const completed = (
    tool: AnyTool,
    value: unknown,
    record: Record,
    output: unknown,
    encoded: unknown
  ): Effect.Effect<Dispatched> => {
    const dispatched = fitted(tool, encoded ?? null, { input: value, output })
    return record === undefined
      ? Effect.succeed(dispatched)
      : Effect.as(record({ type: "completed", tool: tool.name, chars: dispatched.text.length }), dispatched)
  }

  const failed = (tool: AnyTool, cause: Cause.Cause<unknown>): Effect.Effect<Dispatched> => {
    const failure = Cause.findErrorOption(cause)
    if (Option.isNone(failure)) return defect(tool.name, cause)
    const { code, gate, message } = failureOf(tool, failure.value)
    const result: ToolResult = gate !== undefined ? { ok: false, code, error: message, gate }
      : { ok: false, code, error: message }
    return Effect.as(
      failure.value instanceof Refused
        ? wasAudited(failure.value) ? Effect.void
          : Audit.record({ type: "refused", tool: tool.name, gate: failure.value.gate, reason: failure.value.reason })
        : Audit.record({ type: "failed", tool: tool.name, error: message }),
      { result }
    )
  }

  // The guards and the audit sink of the context a call runs in, as graded
  // first read them from it (kept.ts); the last context's are at hand.
  let seen:
    | { readonly context: object; readonly guards: Context.Service.Shape<typeof Guards>; readonly sink: Sink }
    | undefined
  const servicesOf = (fiber: Fiber.Fiber<unknown, unknown>) => {
    const context = fiber.context
    if (seen === undefined || seen.context !== context) {
      seen = { context, guards: keptService(context, Guards), sink: keptService(context, Audit.Audit) }
    }
    return seen
  }

  // Reads the invocation context straight from the fiber: one step, not three.
  const dispatchIn = (
    fiber: Fiber.Fiber<unknown, unknown>,
    name: string,
    given: unknown
  ): Effect.Effect<Dispatched, never, any> => {
    const tool = toolkit.get(name)
    if (tool === undefined) {
      // Stored escaped and cut: the name came from the caller.
      const shown = Printable.name(name)
      return refusal(shown, { code: "unknown-tool", gate: "unknown", reason: `there is no tool named ${shown}` })
    }
    // Read once: the guards, the audit and the decoder see one value.
    let input: unknown
    try {
      input = plainCopy(given)
    } catch {
      const reason = invalidInputMessage(tool.name, "the value: it cannot be read (reading it threw)")
      return labelled(tool)(refusal(tool.name, { code: "invalid-input", gate: "input", reason }))
    }
    const context = fiber.getRef(currentRef)
    const verdict = gates(tool, context)
    if (verdict !== undefined) return labelled(tool)(refusal(tool.name, verdict))
    const guards = servicesOf(fiber).guards
    if (guards.length === 0) return labelled(tool)(admitted(tool, input, fiber))
    // A guard (a policy) after the registry's own gates: it may refuse,
    // never lift a refusal.
    const seen = isAutonomous(fiber) && !context.autonomous ? { ...context, autonomous: true } : context
    return labelled(tool)(Effect.flatMap(admitAll(guards, tool, input, seen), (refused) =>
      refused === undefined
        ? admitted(tool, input, fiber)
        : refusal(tool.name, { code: "refused", gate: refused.gate, reason: refused.reason })))
  }

  const admitted = (
    tool: AnyTool,
    input: unknown,
    fiber: Fiber.Fiber<unknown, unknown>
  ) => isConfirmable(tool.grade) && isAutonomous(fiber) ? requiresConfirm(tool, input) : run(tool, input, fiber)

  // Whatever escapes the stages (a throwing getter in the input, a result
  // that cannot be serialized) becomes a fixed message.
  const dispatch = (name: string, input: unknown): Effect.Effect<Dispatched, never, any> =>
    Effect.catchCause(
      Effect.withFiber((fiber) => dispatchIn(fiber, name, input)),
      (cause) => defect(Printable.name(name), cause)
    )

  const invoke = (
    name: string,
    input: unknown,
    partial: Partial<Invocation.Context> = {}
  ): Effect.Effect<ToolResult, never, any> => {
    const dispatched = Object.keys(partial).length > 0 ? Invocation.within(partial)(dispatch(name, input))
      : dispatch(name, input)
    return Effect.map(dispatched, (done) => done.result)
  }

  return { toolkit, list, candidates, screened, invoke, functionSchemas, dispatch }
}

const succeeded = (data: unknown, truncated: string | undefined): ToolResult =>
  truncated === undefined ? { ok: true, data } : { ok: true, data, truncated }

// A tool's decoder and encoders, made the first time it is called.
const codecs = (tool: AnyTool): Codecs =>
  builtOnce(tool, "codecs", () => {
    // Stopping at the first error is faster; only a failed input is decoded
    // again to name every error (the outcome is the same either way).
    const first = SchemaParser.decodeUnknownResult(tool.input, { onExcessProperty: "error" })
    const all = SchemaParser.decodeUnknownResult(tool.input, parseOptions)
    // Excess keys found from a set of allowed keys per struct, then the
    // default decode, which ignores them; an input with an excess key, or one
    // the default decode refuses, is decoded strictly for the error. Shapes
    // the key check does not cover are decoded strictly, as before.
    const keysAllowed = excessKeyCheck(tool.input.ast)
    const loose = keysAllowed === undefined ? undefined : SchemaParser.decodeUnknownResult(tool.input)
    const encodeOutput = SchemaParser.encodeUnknownEffect(tool.output)
    const schemaCode = inSchema(tool)
    return {
      decode: loose === undefined
        ? (input) => {
          const decoded = first(input)
          return Result.isSuccess(decoded) ? decoded : all(input)
        }
        : (input) => {
          if (!keysAllowed!(input)) return all(input)
          const decoded = loose(input)
          return Result.isSuccess(decoded) ? decoded : all(input)
        },
      // The effect of an output schema runs as the tool's code: it may cause nothing.
      encodeOutput: (output) => schemaCode(encodeOutput(output)),
      encodeOutputSync: encodeSync(tool.output)
    }
  })

// Effect 4's synchronous encode throws where the schema needs an effect (an
// asynchronous transformation, however deep): then the effect runs instead.
const encodeSync = (schema: AnyTool["output"]) => {
  const encode = SchemaParser.encodeUnknownResult(schema as never)
  return (output: unknown): Result.Result<unknown, SchemaIssue.Issue> | typeof needsEffect => {
    try {
      return encode(output)
    } catch {
      return needsEffect
    }
  }
}

// A success as the model will see it, within the tool's limits, and its text
// (whose length audit keeps). Most results fit as they are: serialize once and
// keep them; only a result that is too long, or may have lists to cut, is trimmed.
const fitted = (tool: AnyTool, encoded: unknown, success: Dispatched["success"]): Dispatched & { text: string } => {
  const maxChars = tool.limits?.maxChars ?? Trim.defaultMaxChars
  if (tool.limits?.maxItems === undefined) {
    const result = succeeded(encoded, undefined)
    const text = successText(encoded) ?? JSON.stringify(result)
    if (text.length <= maxChars) return { result, success, text }
  }
  const trimmed = Trim.fit(encoded, {
    maxItems: tool.limits?.maxItems,
    maxChars,
    render: (data, truncated) => JSON.stringify(succeeded(data, truncated))
  })
  const result = succeeded(trimmed.value, trimmed.truncated)
  return { result, success, text: JSON.stringify(result) }
}

// `JSON.stringify({ ok: true, data })` written around the data's own JSON,
// which costs a third as much; undefined where the two could differ (a
// `toJSON` is told its key, and data with no JSON is left out).
const successText = (data: unknown): string | undefined => {
  if (typeof data === "object" && data !== null && "toJSON" in data) return undefined
  const json = JSON.stringify(data)
  return json === undefined ? undefined : `{"ok":true,"data":${json}}`
}

const defect = (tool: string, cause: Cause.Cause<unknown>): Effect.Effect<Dispatched> => {
  const message = unexpectedFailure(tool)
  return Effect.as(
    Audit.record({ type: "failed", tool, error: message, cause: Cause.pretty(cause) }).pipe(Effect.ignore),
    { result: { ok: false, code: "failed", error: message } }
  )
}
