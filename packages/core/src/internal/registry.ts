import { Cause, Effect, Either, Exit, Option, Schema } from "effect"
import * as Audit from "../Audit.js"
import { type Request, SendCapability, WriteCapability } from "../Capability.js"
import * as Invocation from "../Invocation.js"
import type { Code, Listing, Options, ToolResult } from "../Registry.js"
import type { Any as AnyTool, SendTool } from "../Tool.js"
import type { Any as AnyToolkit } from "../Toolkit.js"
import { InvalidEdit, InvalidInput, InvalidOutput, Refused, Rejected } from "../ToolError.js"
import * as Trim from "../Trim.js"
import { toWire } from "../Wire.js"
import { grant, OnlyGradedLayersGrantThis } from "./capability.js"
import { compile } from "./functionSchema.js"
import { issueText, strict } from "./tool.js"

export { strictViolations } from "./functionSchema.js"

interface Verdict {
  readonly code: Code
  readonly gate: string
  readonly reason: string
}

// Services that refuse every write and send: what a fiber running for a model
// gets, whatever an outer layer provided.
const refuse = <P>(request: Request<P>) =>
  Effect.fail(
    new Refused({ tool: request.tool, gate: "autonomous", reason: "a model chose this call; it needs a human" })
  )
export const refusingWrite = grant({ [OnlyGradedLayersGrantThis]: "WriteCapability" as const, authorize: refuse })
export const refusingSend = grant({ [OnlyGradedLayersGrantThis]: "SendCapability" as const, confirm: refuse })

export const withoutCapabilities = <A, E, R>(self: Effect.Effect<A, E, R>) =>
  self.pipe(
    Effect.provideService(WriteCapability, refusingWrite),
    Effect.provideService(SendCapability, refusingSend)
  )

export const capabilityFor = (grade: string) => grade === "write" ? "WriteCapability" : "SendCapability"

const isSend = (tool: AnyTool): tool is SendTool<string, any, any, any, any, any> => tool.grade === "send"

// What a model or user sees of a failure: graded's own messages, or the
// tool's fixed text for its error tag. Raw exception text never reaches them.
const failureOf = (tool: AnyTool, error: unknown): { code: Code; message: string; gate?: string } => {
  if (error instanceof Refused) return { code: "refused", message: error.message, gate: error.gate }
  if (error instanceof Rejected || error instanceof InvalidEdit) return { code: "rejected", message: error.message }
  if (error instanceof InvalidInput) return { code: "invalid-input", message: error.message }
  if (error instanceof InvalidOutput) return { code: "failed", message: `${tool.name} produced a result it may not return.` }
  const tag = typeof error === "object" && error !== null && "_tag" in error ? String(error._tag) : undefined
  return { code: "failed", message: (tag !== undefined ? tool.failureMessages?.[tag] : undefined) ?? `${tool.name} failed.` }
}

export interface Dispatched {
  readonly result: ToolResult
  /** The decoded input and typed output, when the tool ran and succeeded. */
  readonly success?: { readonly input: unknown; readonly output: unknown } | undefined
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
        return { code: "feature", gate: "feature", reason: `${tool.name} needs the feature ${missing.join(", ")}, which is not licensed here` }
      }
    }
    // Only a page the app recognises can block; an unknown page passes.
    if (
      tool.pages !== undefined && tool.pages.length > 0 && context.page !== undefined && knownPages.has(context.page) &&
      !tool.pages.includes(context.page)
    ) {
      return { code: "page", gate: "page", reason: `${tool.name} is for the ${tool.pages.join(", ")} page(s), not ${context.page}` }
    }
    return undefined
  }

  const offense = (tool: AnyTool, context: Invocation.Context): Verdict | undefined =>
    gates(tool, context) ??
      (context.autonomous && tool.grade !== "read"
        ? {
          code: "requires-confirm",
          gate: "autonomous",
          reason: `${tool.name} (${tool.grade}) needs ${capabilityFor(tool.grade)}`
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
        ...(verdict !== undefined ? { gate: verdict.gate, reason: verdict.reason } : {})
      }
    })
  }

  const functionSchemas = (partial: Partial<Invocation.Context> = {}) =>
    list(partial).filter((listing) => listing.offered).map((listing) => compile(toolkit.get(listing.name)!).definition)

  const decode = (tool: AnyTool, input: unknown) =>
    Schema.decodeUnknownEither(tool.input, strict)(compile(tool).normalize(input)).pipe(
      Either.mapLeft((error) => `Invalid input for ${tool.name}: ${issueText(error)}`)
    )

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
      if (Either.isLeft(decoded)) return yield* refusal(tool.name, verdict, { requiresConfirm: true })
      const payload = isSend(tool)
        ? yield* withoutCapabilities(tool.prepare(decoded.right)).pipe(
          Effect.flatMap(Schema.encode(tool.payload)),
          Effect.option
        )
        : yield* Effect.option(Schema.encode(tool.input)(decoded.right))
      return yield* refusal(tool.name, verdict, {
        requiresConfirm: true,
        ...(Option.isSome(payload) ? { confirmPayload: payload.value } : {})
      })
    })

  const run = (tool: AnyTool, input: unknown) =>
    Effect.gen(function*() {
      const decoded = decode(tool, input)
      if (Either.isLeft(decoded)) {
        return yield* refusal(tool.name, { code: "invalid-input", gate: "input", reason: decoded.left })
      }
      yield* Audit.record({ type: "called", tool: tool.name, input })
      const exit = yield* Effect.exit(Effect.flatMap(
        tool.invoke(decoded.right),
        (output) =>
          Schema.encode(tool.output)(output).pipe(
            Effect.mapError((error) => new InvalidOutput({ tool: tool.name, issue: issueText(error) })),
            Effect.map((encoded) => ({ output, encoded }))
          )
      ))
      if (Exit.isSuccess(exit)) {
        const trimmed = Trim.fit(exit.value.encoded ?? null, {
          maxItems: tool.limits?.maxItems,
          maxChars: tool.limits?.maxChars,
          render: (data, truncated) => JSON.stringify(success(data, truncated))
        })
        const result = success(trimmed.value, trimmed.truncated)
        yield* Audit.record({ type: "completed", tool: tool.name, chars: JSON.stringify(result).length })
        return { result, success: { input: decoded.right, output: exit.value.output } }
      }
      const failure = Cause.failureOption(exit.cause)
      if (Option.isSome(failure)) {
        const { code, gate, message } = failureOf(tool, failure.value)
        if (failure.value instanceof Refused) {
          yield* Audit.record({ type: "refused", tool: tool.name, gate: failure.value.gate, reason: failure.value.reason })
        } else {
          yield* Audit.record({ type: "failed", tool: tool.name, error: message })
        }
        return { result: { ok: false, code, error: message, ...(gate !== undefined ? { gate } : {}) } }
      }
      return yield* defect(tool.name, exit.cause)
    })

  const dispatch = (name: string, input: unknown): Effect.Effect<Dispatched, never, any> =>
    Effect.gen(function*() {
      const tool = toolkit.get(name)
      if (tool === undefined) {
        return yield* refusal(name, { code: "unknown-tool", gate: "unknown", reason: `there is no tool named ${name}` })
      }
      const context = yield* Invocation.current
      const verdict = gates(tool, context)
      if (verdict !== undefined) return yield* refusal(tool.name, verdict)
      if (context.autonomous && tool.grade !== "read") return yield* requiresConfirm(tool, input)
      return yield* run(tool, input)
    }).pipe(
      // Last line: whatever escaped above (a throwing getter in the input, a
      // result that cannot be serialized) becomes a fixed message.
      Effect.catchAllCause((cause) => defect(name, cause))
    )

  const invoke = (name: string, input: unknown, partial: Partial<Invocation.Context> = {}) =>
    Effect.map(Invocation.within(partial)(dispatch(name, input)), (dispatched) => dispatched.result)

  return { toolkit, list, invoke, functionSchemas, dispatch }
}

const success = (data: unknown, truncated: string | undefined): ToolResult =>
  truncated === undefined ? { ok: true, data } : { ok: true, data, truncated }

const defect = (tool: string, cause: Cause.Cause<unknown>): Effect.Effect<Dispatched> => {
  const message = `${tool} failed unexpectedly.`
  return Effect.as(
    Audit.record({ type: "failed", tool, error: message, cause: Cause.pretty(cause) }).pipe(Effect.ignore),
    { result: { ok: false, code: "failed", error: message } }
  )
}

export type Internal = ReturnType<typeof make>
