// The fallback's rules that hold whatever keeps the data: the configuration
// check, the guards in front of every review decision (a human from the
// invocation context, never a parameter; valid drafts only; audited), the
// memory storage, and `admit`, which the policy gate calls for a fallback
// tool's call.
// Who may import this: Fallback.ts only.
import { Clock, Effect, Result, Schema } from "effect"
import { Audit, Invocation } from "@graded/core"
import type {
  Admission,
  Backend,
  Case,
  CaseStatus,
  Config,
  ContextSummary,
  Decision,
  Draft,
  DraftStatus,
  Store as StoreTag
} from "../Fallback.js"
import type * as Guideline from "../Guideline.js"
import { fromData, toData } from "./guideline.js"

export class InvalidConfig extends TypeError {
  override readonly name = "InvalidConfig"
  constructor(readonly field: "tools" | "perTrace" | "perTenantPerDay" | "answer" | "config", readonly issue: string) {
    super(`Fallback.config: ${field} ${issue}`)
  }
}

export class NotFound extends Schema.TaggedError<NotFound>()("@graded/policy/Fallback/NotFound", {
  id: Schema.String
}) {
  override get message(): string {
    return `There is no fallback review case or guideline draft ${this.id}`
  }
}

export class AlreadyDecided extends Schema.TaggedError<AlreadyDecided>()("@graded/policy/Fallback/AlreadyDecided", {
  id: Schema.String,
  status: Schema.String,
  by: Schema.String,
  at: Schema.String
}) {
  override get message(): string {
    return `${this.id} was already decided (${this.status} by ${this.by} at ${this.at}); the first decision stands`
  }
}

export class Refused extends Schema.TaggedError<Refused>()("@graded/policy/Fallback/Refused", {
  id: Schema.String,
  why: Schema.Literals(["autonomous", "tool-code", "no-actor"])
}) {
  override get message(): string {
    return this.why === "autonomous"
      ? `Deciding ${this.id} was refused: a model's work cannot approve or reject fallback cases or guideline drafts; a human decides`
      : this.why === "tool-code"
      ? `Deciding ${this.id} was refused: a tool's own code cannot decide for the human it runs for`
      : `Deciding ${this.id} was refused: the invocation context names no actor, and a decision needs the human who makes it`
  }
}

export class InvalidDecision extends Schema.TaggedError<InvalidDecision>()("@graded/policy/Fallback/InvalidDecision", {
  id: Schema.String,
  issue: Schema.String
}) {
  override get message(): string {
    return `Cannot decide ${this.id}: ${this.issue}`
  }
}

const positiveInteger = (value: unknown) => typeof value === "number" && Number.isSafeInteger(value) && value > 0

export const config = (config: Config): Config => {
  if (typeof config !== "object" || config === null) throw new InvalidConfig("config", "is missing")
  const { answer, perTenantPerDay, perTrace, tools } = config
  if (
    !Array.isArray(tools) || tools.length === 0 ||
    tools.some((tool) => typeof tool !== "string" || tool.trim().length === 0)
  ) {
    throw new InvalidConfig("tools", "must name at least one read tool, each by a non-empty name")
  }
  if (!positiveInteger(perTrace)) throw new InvalidConfig("perTrace", "must be a positive whole number")
  if (!positiveInteger(perTenantPerDay)) throw new InvalidConfig("perTenantPerDay", "must be a positive whole number")
  if (typeof answer !== "string" || answer.trim().length === 0) {
    throw new InvalidConfig("answer", "must be the fixed text the model gets past the quota, not empty")
  }
  return Object.freeze({ tools: Object.freeze([...new Set(tools)]), perTrace, perTenantPerDay, answer })
}

export const iso = (millis: number) => new Date(millis).toISOString()

const now = Effect.map(Clock.currentTimeMillis, iso)

// The human deciding: the actor of the current context, refused for a
// model's fiber (`Invocation.current` reads graded's own mark, which code in
// the fiber cannot lift) or where nobody is named.
const decider = (id: string, tool: Effect.Effect<string>): Effect.Effect<string, Refused> =>
  Effect.flatMap(Effect.zip(Invocation.current, Invocation.decisionRefusal), ([context, refusal]) => {
    const why = context.autonomous
      ? "autonomous" as const
      : refusal !== undefined
      ? "tool-code" as const
      : context.actor === undefined || context.actor.trim().length === 0
      ? "no-actor" as const
      : undefined
    if (why === undefined) return Effect.succeed(context.actor!)
    const refused = new Refused({ id, why })
    return Effect.andThen(
      Effect.flatMap(
        tool,
        (name) => Audit.record({ type: "refused", tool: name, gate: "fallback-review", reason: refused.message })
      ),
      Effect.fail(refused)
    )
  })

const needsReason = (id: string, reason: unknown): Effect.Effect<string, InvalidDecision> =>
  typeof reason === "string" && reason.trim().length > 0
    ? Effect.succeed(reason)
    : Effect.fail(new InvalidDecision({ id, issue: "a rejection needs a reason" }))

const decided = (
  tool: string,
  by: string,
  decision: "approved" | "rejected",
  reason: string
) => Audit.record({ type: "decided", tool, by, decision, edited: false, reason })

export const makeStore = (backend: Backend): StoreTag.Service => {
  const caseTool = (id: string) =>
    Effect.map(Effect.result(backend.case(id)), (found) => Result.isSuccess(found) ? found.success.tool : id)
  const draftTool = (id: string) =>
    Effect.map(Effect.result(backend.draft(id)), (found) => Result.isSuccess(found) ? found.success.tool : id)
  return {
    take: (request, limits) => Effect.flatMap(now, (at) => backend.take(request, limits, at)),
    cases: backend.cases,
    case: backend.case,
    drafts: backend.drafts,
    draft: backend.draft,

    approve: (id, decision) =>
      Effect.gen(function*() {
        const by = yield* decider(id, caseTool(id))
        const guideline = fromData((decision as { guideline?: unknown } | undefined)?.guideline)
        if (Result.isFailure(guideline)) {
          return yield* new InvalidDecision({ id, issue: `the guideline draft is not valid: ${guideline.failure}` })
        }
        const result = yield* backend.draftCase(id, toStored(guideline.success), { by, at: yield* now })
        yield* decided(
          result.case.tool,
          by,
          "approved",
          `fallback case ${id} drafted as guideline ${guideline.success.id} (${result.draft.id}), not in force until approved`
        )
        return result
      }),

    reject: (id, decision) =>
      Effect.gen(function*() {
        const by = yield* decider(id, caseTool(id))
        const reason = yield* needsReason(id, decision?.reason)
        const rejected = yield* backend.rejectCase(id, { by, at: yield* now, reason })
        yield* decided(rejected.tool, by, "rejected", `fallback case ${id}: ${reason}`)
        return rejected
      }),

    approveDraft: (id) =>
      Effect.gen(function*() {
        const by = yield* decider(id, draftTool(id))
        const draft = yield* backend.draft(id)
        // Read again as it is stored: what is approved is what will load.
        const guideline = yield* guidelineOf(draft)
        const approved = yield* backend.decideDraft(id, "approved", { by, at: yield* now })
        yield* decided(
          approved.tool,
          by,
          "approved",
          `guideline draft ${id} (${guideline.id}) approved: it applies from the next Policy.make that loads it`
        )
        return guideline
      }),

    rejectDraft: (id, decision) =>
      Effect.gen(function*() {
        const by = yield* decider(id, draftTool(id))
        const reason = yield* needsReason(id, decision?.reason)
        const rejected = yield* backend.decideDraft(id, "rejected", { by, at: yield* now, reason })
        yield* decided(rejected.tool, by, "rejected", `guideline draft ${id}: ${reason}`)
        return rejected
      })
  }
}

// The draft's data as stored: plain JSON, so memory and SQL hold the same.
const toStored = (guideline: Guideline.Any): unknown => JSON.parse(JSON.stringify(toData(guideline)))

const guidelineOf = (draft: Draft): Effect.Effect<Guideline.Any, InvalidDecision> => {
  const guideline = fromData(draft.guideline)
  return Result.isSuccess(guideline)
    ? Effect.succeed(guideline.success)
    : Effect.fail(
      new InvalidDecision({ id: draft.id, issue: `the stored guideline no longer reads: ${guideline.failure}` })
    )
}

export const approvedGuidelines = (
  store: StoreTag.Service
): Effect.Effect<ReadonlyArray<Guideline.Any>, InvalidDecision> =>
  Effect.flatMap(store.drafts({ status: "approved" }), Effect.forEach(guidelineOf))

const none = "(none)"

const summary = (context: Invocation.Context): ContextSummary => ({
  autonomous: context.autonomous,
  ...(context.actor !== undefined ? { actor: context.actor } : {}),
  ...(context.role !== undefined ? { role: context.role } : {}),
  ...(context.page !== undefined ? { page: context.page } : {}),
  ...(context.features !== undefined ? { features: [...context.features] } : {})
})

// The tenant, where the context carries one: core's Context has no `tenant`
// field yet; the policy's context adds it.
const tenantOf = (context: Invocation.Context): string => {
  const tenant = (context as { readonly tenant?: unknown }).tenant
  return typeof tenant === "string" && tenant.length > 0 ? tenant : none
}

export const admit = (
  Store: typeof StoreTag,
  config: Config,
  tool: string,
  input: unknown
): Effect.Effect<Admission, never, StoreTag> =>
  Effect.gen(function*() {
    if (!config.tools.includes(tool)) {
      return yield* Effect.die(new Error(`Fallback.admit: ${tool} is not one of the fallback's tools`))
    }
    const store = yield* Store
    const context = yield* Invocation.current
    const millis = yield* Clock.currentTimeMillis
    const traceId = context.traceId !== undefined && context.traceId.length > 0 ? context.traceId : none
    const tenant = tenantOf(context)
    const taken = yield* store.take(
      { traceId, tenant, day: iso(millis).slice(0, 10), tool, input, context: summary(context) },
      { perTrace: config.perTrace, perTenantPerDay: config.perTenantPerDay }
    )
    if (taken.granted) return { granted: true, case: taken.case }
    const which = taken.usedTrace >= config.perTrace
      ? `this trace's ${config.perTrace}`
      : `tenant ${tenant}'s ${config.perTenantPerDay} for today`
    return {
      granted: false,
      case: taken.case,
      answer: config.answer,
      reason:
        `the fallback quota (${which}) is used up: the model got the fixed answer; queued for review as ${taken.case}`
    }
  })

// In memory: each operation checks and changes in one synchronous step, which
// the runtime never interleaves, so two fibers racing for the last slot or
// deciding one case at once see one winner.
export const memoryBackend = (): Backend => {
  const counts = new Map<string, number>()
  const cases: Array<Case> = []
  const drafts: Array<Draft> = []
  const caseIndex = (id: string) => /^c-([1-9][0-9]{0,14})$/.exec(id)?.[1]
  const draftIndex = (id: string) => /^d-([1-9][0-9]{0,14})$/.exec(id)?.[1]
  const findCase = (id: string) => {
    const n = caseIndex(id)
    return n === undefined ? undefined : cases[Number(n) - 1]
  }
  const findDraft = (id: string) => {
    const n = draftIndex(id)
    return n === undefined ? undefined : drafts[Number(n) - 1]
  }
  const already = (id: string, status: string, decision: Decision | undefined) =>
    new AlreadyDecided({ id, status, by: decision?.by ?? "(unknown)", at: decision?.at ?? "(unknown)" })
  const byStatus = <A extends { readonly status: string }>(all: ReadonlyArray<A>, status: string | undefined) =>
    status === undefined ? [...all] : all.filter((item) => item.status === status)
  return {
    take: (request, limits, at) =>
      Effect.sync(() => {
        const traceKey = JSON.stringify(["trace", request.traceId])
        const tenantKey = JSON.stringify(["tenant", request.tenant, request.day])
        const usedTrace = counts.get(traceKey) ?? 0
        const usedTenantDay = counts.get(tenantKey) ?? 0
        const granted = usedTrace < limits.perTrace && usedTenantDay < limits.perTenantPerDay
        if (granted) {
          counts.set(traceKey, usedTrace + 1)
          counts.set(tenantKey, usedTenantDay + 1)
        }
        const id = `c-${cases.length + 1}`
        cases.push({
          id,
          tool: request.tool,
          input: request.input === undefined ? undefined : JSON.parse(JSON.stringify(request.input)),
          context: request.context,
          traceId: request.traceId,
          tenant: request.tenant,
          day: request.day,
          at,
          overQuota: !granted,
          status: "pending"
        })
        return {
          granted,
          case: id,
          usedTrace: granted ? usedTrace + 1 : usedTrace,
          usedTenantDay: granted ? usedTenantDay + 1 : usedTenantDay
        }
      }),
    cases: (filter) => Effect.sync(() => byStatus<Case>(cases, filter?.status as CaseStatus | undefined)),
    case: (id) =>
      Effect.suspend(() => {
        const found = findCase(id)
        return found === undefined ? Effect.fail(new NotFound({ id })) : Effect.succeed(found)
      }),
    draftCase: (id, guideline, decision) =>
      Effect.suspend((): Effect.Effect<{ case: Case; draft: Draft }, NotFound | AlreadyDecided> => {
        const found = findCase(id)
        if (found === undefined) return Effect.fail(new NotFound({ id }))
        if (found.status !== "pending") return Effect.fail(already(id, found.status, found.decision))
        const draft: Draft = {
          id: `d-${drafts.length + 1}`,
          case: id,
          tool: found.tool,
          guideline,
          status: "draft",
          drafted: decision
        }
        drafts.push(draft)
        const updated: Case = { ...found, status: "drafted", decision, draft: draft.id }
        cases[Number(caseIndex(id)) - 1] = updated
        return Effect.succeed({ case: updated, draft })
      }),
    rejectCase: (id, decision) =>
      Effect.suspend((): Effect.Effect<Case, NotFound | AlreadyDecided> => {
        const found = findCase(id)
        if (found === undefined) return Effect.fail(new NotFound({ id }))
        if (found.status !== "pending") return Effect.fail(already(id, found.status, found.decision))
        const updated: Case = { ...found, status: "rejected", decision }
        cases[Number(caseIndex(id)) - 1] = updated
        return Effect.succeed(updated)
      }),
    drafts: (filter) => Effect.sync(() => byStatus<Draft>(drafts, filter?.status as DraftStatus | undefined)),
    draft: (id) =>
      Effect.suspend(() => {
        const found = findDraft(id)
        return found === undefined ? Effect.fail(new NotFound({ id })) : Effect.succeed(found)
      }),
    decideDraft: (id, status, decision) =>
      Effect.suspend((): Effect.Effect<Draft, NotFound | AlreadyDecided> => {
        const found = findDraft(id)
        if (found === undefined) return Effect.fail(new NotFound({ id }))
        if (found.status !== "draft") return Effect.fail(already(id, found.status, found.decision))
        const updated: Draft = { ...found, status, decision }
        drafts[Number(draftIndex(id)) - 1] = updated
        return Effect.succeed(updated)
      })
  }
}

// Sealed where they are made (Invocation.seal): each is shared by every
// fiber, and a tool's code that finds one must not rewrite it in place.
Invocation.seal(now)
