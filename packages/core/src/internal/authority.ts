// Authority: who may cause what, here and now. The one home of the mark that
// says what the current fiber may cause (whether a model chose the work, and
// the highest grade the code running now may cause), and the only module that
// reads it. Every gate that lets a write or a send happen asks it.
//
// For contributors (docs/security.md, "Adding an API"): an API that
// - runs code it did not write (a tool's run, prepare or deliver, a schema's
//   effect) runs it through `asToolCode`: isolated in a fiber of its own;
// - calls a service the app provides (a store, a model, a guard, a sink)
//   reads it through serviceCode.ts's `marked` (or runs its effect through
//   `asServiceCode`): its code may cause nothing above a read;
// - lets a write or a send happen asks `mayCause(tool, grade)` right before;
// - moves a human's queue or records a human's decision asks `mayDecide`;
// - makes something that authorizes later (a HumanConfirm, a trigger) reads
//   `taintHere` where it is made and keeps the answer with it;
// - hands out a shared value seals it (seal.ts `sealed`).
// test/contributing.test.ts fails for each of these left out.
//
// The mark is kept where code running in a fiber cannot reach it: a record
// keyed by the fiber itself (code can change its fiber's context, not which
// fiber it runs in), filled in when the fiber is made. Effect 4 makes every
// fiber (a fork, a detached fork, a fiber in a scope, a batch's fiber, a root
// fiber that `Effect.runFork` starts) while the fiber that asks for it is
// evaluating, so each new fiber starts with at least the mark of the fiber
// that made it (`born` below). A fiber's context is not read for the mark: a
// context is a value code can replace whole (`Effect.provideContext`).
// Who may import this: graded's own modules only.
import {
  Context as EffectContext,
  Effect,
  ErrorReporter,
  Fiber,
  Layer,
  References,
  Scheduler,
  Scope,
  Tracer
} from "effect"
import { readOnlyContext, readOnlySet, sealed } from "./seal.js"
import { capabilityName, type Confirmable, type Grade, gradeViolation, type Part, rank, within } from "../Grade.js"
import type { Context } from "../Invocation.js"
import { autonomousReason, gradeReason, Refused } from "../ToolError.js"

type AnyFiber = Fiber.Fiber<unknown, unknown>

export const initial: Context = Object.freeze({ autonomous: false })

// Shared with Audit, which reads it straight from the fiber on its hot path.
// Descriptive only (page, actor, trace): no gate trusts its `autonomous`
// without the mark below.
export const currentRef: EffectContext.Reference<Context> = sealed(
  EffectContext.Reference<Context>("@graded/core/Invocation/current", { defaultValue: () => initial })
)

export type Ceiling = Grade

/**
 * The tool whose own code is running, and which part of it: for messages.
 * Part "code" is code graded calls that is no tool's (a store, a model, a
 * guard, a plan's input schema): `tool` then says whose, as a phrase.
 */
export interface Within {
  readonly tool: string
  readonly grade: Grade
  readonly part: Part | "code"
}

export interface Mark {
  readonly autonomous: boolean
  readonly ceiling: Ceiling
  readonly within: Within | undefined
}

// Marks graded made: a value found in a context counts only if it is one.
const made = new WeakSet<Mark>()

const makeMark = (autonomous: boolean, ceiling: Ceiling, within: Within | undefined): Mark => {
  const mark = Object.freeze({ autonomous, ceiling, within })
  made.add(mark)
  return mark
}

export const free: Mark = makeMark(false, "send", undefined)

const strictest = (a: Mark, b: Mark | undefined): Mark => {
  if (b === undefined || b === a) return a
  const autonomous = a.autonomous || b.autonomous
  // At the same ceiling, the one inside a tool's code: what is built there is tainted.
  const lower = rank[b.ceiling] < rank[a.ceiling] ? b
    : rank[a.ceiling] < rank[b.ceiling] || a.within !== undefined ? a
    : b
  if (autonomous === lower.autonomous) return lower
  return makeMark(autonomous, lower.ceiling, lower.within)
}

// The record code cannot reach: for each fiber graded restricted (or that a
// restricted fiber made), its restrictions, innermost last.
const held = new WeakMap<object, Array<Mark>>()

const markOf = (fiber: AnyFiber): Mark => held.get(fiber)?.at(-1) ?? free

// The mark an isolated fiber's context carries too: a context its code
// captures (`Effect.context`, its fiber's `context`) and starts a fiber from
// later, from outside any fiber, still starts it marked. Never read to lift
// a mark: a fiber starts with the strictest of its maker's and this.
const contextMark = EffectContext.Reference<unknown>("@graded/core/authority/mark", { defaultValue: () => undefined })

// Effect 4's fibers are one class. Wrapped once, before any tool's code can
// run, and its prototype frozen after, so no one can unwrap it:
// - `evaluate`, which every start and resumption of a fiber goes through
//   (its run loop, and the callbacks that see its exit): graded's own stack
//   of the fibers evaluating now, the innermost last. Effect keeps the
//   current fiber in a global too (`Fiber.getCurrent`), which any code can
//   empty or point elsewhere; this stack no code but graded's can reach.
// - `setContext`, which the constructor calls first: the new fiber starts
//   with the mark of the fiber evaluating while it is made. And on every
//   change of a marked fiber's context: the runtime hooks it reads (below).
interface FiberPrototype {
  evaluate(this: AnyFiber, effect: unknown): void
  setContext(this: AnyFiber, context: EffectContext.Context<never>): void
}
const fiberPrototype: FiberPrototype = Object.getPrototypeOf(Effect.runFork(Effect.void))

// What a fiber's run loop reads from its context on every step: its
// scheduler (asked whether to yield, handed the fiber, whose stack holds the
// effects it is running) and its tracer's `context` hook (handed every effect
// object the fiber runs). Either one hands graded's and Effect's own effect
// objects to whoever provided it, to rewrite in place for a human's fiber to
// run later. So in a marked fiber (a model's, a tool's own code) the loop
// uses only a scheduler and a hook that an unmarked fiber, the app's, used
// first; one the tool's code provides itself is replaced by Effect's default
// scheduler and no hook (its spans still go to its tracer).
interface FiberCache {
  readonly scheduler: object
  readonly tracer: object | undefined
  readonly tracerContext: unknown
}
interface FiberFields {
  cache: FiberCache
  _dispatcher: unknown
}
const appHooks = new WeakSet<object>()
const defaultScheduler: object = EffectContext.get(EffectContext.empty(), Scheduler.Scheduler)
appHooks.add(defaultScheduler)
const trust = (cache: FiberCache): void => {
  appHooks.add(cache.scheduler)
  if (cache.tracerContext !== undefined && cache.tracer !== undefined) appHooks.add(cache.tracer)
}
const foreign = (cache: FiberCache): boolean =>
  !appHooks.has(cache.scheduler) ||
  (cache.tracerContext !== undefined && (cache.tracer === undefined || !appHooks.has(cache.tracer)))
// One copy per cache: the fibers of one context share it, as Effect's do.
const withAppHooks = new WeakMap<FiberCache, FiberCache>()
const confine = (fiber: FiberFields): void => {
  const cache = fiber.cache
  let confined = withAppHooks.get(cache)
  if (confined === undefined) {
    confined = Object.freeze({
      ...cache,
      scheduler: appHooks.has(cache.scheduler) ? cache.scheduler : defaultScheduler,
      tracerContext: cache.tracer !== undefined && appHooks.has(cache.tracer) ? cache.tracerContext : undefined
    })
    withAppHooks.set(cache, confined)
  }
  if (confined.scheduler !== cache.scheduler) fiber._dispatcher = undefined
  fiber.cache = confined
}
const { evaluate, setContext } = fiberPrototype
const evaluating: Array<AnyFiber> = []
const born = (fiber: AnyFiber, context: EffectContext.Context<never>): void => {
  const maker = evaluating.at(-1)
  const carried = EffectContext.getOrUndefined(context, contextMark)
  const mark = strictest(
    maker === undefined ? free : markOf(maker),
    typeof carried === "object" && carried !== null && made.has(carried as Mark) ? carried as Mark : undefined
  )
  if (mark !== free) held.set(fiber, [mark])
}
fiberPrototype.evaluate = function(this: AnyFiber, effect: unknown): void {
  evaluating.push(this)
  try {
    evaluate.call(this, effect)
  } finally {
    evaluating.pop()
  }
}
fiberPrototype.setContext = function(this: AnyFiber, context: EffectContext.Context<never>): void {
  const fields = this as unknown as FiberFields
  const before = fields.cache
  // The constructor's call: the fiber has no context yet.
  if ((this as { readonly context?: unknown }).context === undefined) born(this, context)
  setContext.call(this, context)
  const cache = fields.cache
  if (cache === before) return
  if (markOf(this) === free) trust(cache)
  else if (foreign(cache)) confine(fields)
}
Object.freeze(fiberPrototype)

// The same reading: the record is all there is, and it is cheap.
export const quickMark = (fiber: AnyFiber): Mark => markOf(fiber)

/** The tool whose own code the current fiber runs, if any. */
export const toolCodeHere: Effect.Effect<Within | undefined> = sealed(
  Effect.withFiber((fiber) => Effect.succeed(markOf(fiber).within))
)

/** Whether the fiber runs a tool's own code (a run, a prepare): graded marks it. */
export const inToolCode = (fiber: AnyFiber): boolean => markOf(fiber).within !== undefined

export const isAutonomous = (fiber: AnyFiber): boolean =>
  fiber.getRef(currentRef).autonomous || markOf(fiber).autonomous

/** For stamping audit entries on every call: the cheap reading. */
export const looksAutonomous = (fiber: AnyFiber, context: Context = fiber.getRef(currentRef)): boolean =>
  context.autonomous || markOf(fiber).autonomous

// Marks are made once for each combination: restricting is on the hot path
// of every read tool call.
// `within` is made once per tool, so it keys the cache by identity; then by
// the flag and the ceiling's rank.
const marks = new Map<Within | undefined, Array<Mark | undefined>>()
const markFor = (autonomous: boolean, ceiling: Ceiling, within: Within | undefined): Mark => {
  let byTool = marks.get(within)
  if (byTool === undefined) marks.set(within, byTool = [])
  const key = (autonomous ? 3 : 0) + rank[ceiling]
  let mark = byTool[key]
  if (mark === undefined) byTool[key] = mark = makeMark(autonomous, ceiling, within)
  return mark
}

/**
 * Runs `self` with the current fiber's mark restricted further: autonomous,
 * or a lower ceiling. Restrictions only add up; nothing here lifts one. With
 * `within`, `self` is a tool's own code (or a service's): it runs isolated,
 * in a fiber of its own (`isolated` below).
 */
export const restrict =
  (patch: { readonly autonomous?: true; readonly ceiling?: Ceiling; readonly within?: Within }) =>
  <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.withFiber<A, E, R>((fiber) => {
      const before = markOf(fiber)
      const lower = patch.ceiling !== undefined && rank[patch.ceiling] < rank[before.ceiling]
      // Tool code where none ran yet is marked even at the same ceiling (a
      // send's deliver in a human's fiber): what it builds is then tainted.
      const entering = patch.within !== undefined && before.within === undefined
      const wanted = markFor(
        before.autonomous || patch.autonomous === true,
        lower ? patch.ceiling! : before.ceiling,
        lower || entering ? patch.within : before.within
      )
      if (patch.within !== undefined) return isolated(fiber, strictest(wanted, before), self)
      // An autonomous fiber may cause no write or send already: a lower
      // ceiling would change nothing it is allowed.
      if (before.autonomous || (patch.autonomous !== true && !lower)) return self
      let stack = held.get(fiber)
      if (stack === undefined) held.set(fiber, stack = [])
      const entries = stack
      // Fibers made meanwhile start with it (`born`).
      return Effect.acquireUseRelease(
        Effect.sync(() => entries.push(wanted)),
        () => self,
        () => Effect.sync(() => entries.pop())
      )
    })

type Restricted = <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>

/**
 * Runs `self` as a tool's own code (its `within.part`: a run, a prepare, a
 * deliver, a schema's effect), which may cause nothing above `ceiling`:
 * isolated in a fiber of its own, and what it builds is tainted.
 */
export const asToolCode = (within: Within, ceiling: Ceiling): Restricted => restrict({ ceiling, within })

// One restriction per name: the mark is made once per `within`.
const serviceRestrictions = new Map<string, Restricted>()

/**
 * Runs `self` as code graded calls that is no tool's (a store's method, a
 * model, a guard, an audit sink, a plan's input schema): `whose` says whose,
 * as a phrase ("the ProposalStore's code"). Isolated as tool code is, and it
 * may cause nothing above a read.
 */
export const asServiceCode = (whose: string): Restricted => {
  let restricted = serviceRestrictions.get(whose)
  if (restricted === undefined) {
    restricted = asToolCode(Object.freeze({ tool: whose, grade: "read", part: "code" }), "read")
    serviceRestrictions.set(whose, restricted)
  }
  return restricted
}

// The references Effect's runtime reads to decide how and when a fiber's
// code runs: left out of an isolated fiber's services, so that it runs with
// Effect's defaults (the default scheduler, its yield), not with ones the
// caller's context holds, which a tool's code could have put there for the
// code that runs after it.
const knobs: ReadonlyArray<string> = [
  Scheduler.Scheduler.key,
  Scheduler.MaxOpsBeforeYield.key,
  Scheduler.PreventSchedulerYield.key,
  Scope.Scope.key,
  // The memo map Effect 4's `Effect.provide` shares between calls: the
  // caller's next provide reads it, so the code builds its layers in one of
  // its own.
  Layer.CurrentMemoMap.key
]

// Values Effect keeps in a context that stay the caller's after the call:
// the code gets a copy it cannot write to, or a stand-in. Its spans still
// have the caller's span as their parent, by id.
const copies: ReadonlyArray<readonly [string, (value: unknown) => unknown]> = [
  [Tracer.ParentSpanKey, (span) => {
    const { spanId, traceId, sampled } = span as Tracer.AnySpan
    return Tracer.externalSpan({ spanId, traceId, sampled })
  }],
  [References.CurrentLogAnnotations.key, (annotations) => Object.freeze({ ...annotations as object })],
  [References.CurrentLogSpans.key, (spans) => Object.freeze([...spans as ReadonlyArray<unknown>])],
  [References.TracerSpanAnnotations.key, (annotations) => Object.freeze({ ...annotations as object })],
  [References.TracerSpanLinks.key, (links) => Object.freeze([...links as ReadonlyArray<unknown>])],
  [References.CurrentLoggers.key, (loggers) => readOnlySet(loggers as Iterable<unknown>)],
  [ErrorReporter.CurrentErrorReporters.key, (reporters) => readOnlySet(reporters as Iterable<unknown>)]
]

/**
 * `code`, a tool's own code (or a service's), run in a fiber graded makes for
 * it, marked `mark`, and waited for: the caller takes back its exit and
 * nothing else. The fiber starts from a read-only copy of the caller's
 * services, without its Scope (the code gets a scope of its own, closed when
 * it ends) and without the runtime's knobs above. So what the code sets in
 * its fiber (a reference, a service, its whole context) ends with it, the
 * caller's context is never the code's to change, and the mark is held for
 * that fiber and every fiber it makes.
 */
const isolated = <A, E, R>(caller: AnyFiber, mark: Mark, code: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> => {
  const services = new Map(caller.context.mapUnsafe)
  const scoped = services.has(Scope.Scope.key)
  for (const key of knobs) services.delete(key)
  for (const [key, copy] of copies) {
    if (services.has(key)) services.set(key, copy(services.get(key)))
  }
  services.set(contextMark.key, mark)
  const body = scoped ? Effect.scoped(code) : code
  const child = Effect.runForkWith(readOnlyContext(services))(Effect.withFiber<A, E, never>((self) => {
    held.set(self, [mark])
    return body as Effect.Effect<A, E, never>
  }))
  // Done within this step (most tools' code is): its exit as it is.
  const done = child.pollUnsafe()
  if (done !== undefined) return done
  return Effect.flatten(Effect.onInterrupt(Fiber.await(child), () => Fiber.interrupt(child)))
}

/**
 * Why the current fiber may not cause a `grade` effect of `tool`, or
 * undefined when it may. `needs` names what the effect takes, for the
 * message (the grade's capability unless said).
 */
export const refusal = (
  mark: Mark,
  tool: string,
  grade: Confirmable,
  needs: string = capabilityName(grade)
): Refused | undefined => {
  if (mark.autonomous) {
    return new Refused({ tool, gate: "autonomous", reason: autonomousReason })
  }
  if (!within(grade, mark.ceiling)) {
    const reason = mark.within === undefined
      ? gradeReason(mark.ceiling, grade)
      : mark.within.part === "code"
      ? `${mark.within.tool} may cause nothing above a read, and it asked for ${needs}`
      : gradeViolation(mark.within.tool, mark.within.grade, mark.within.part, needs)
    return new Refused({ tool, gate: "grade", reason })
  }
  return undefined
}

/** Where a service was made that may never authorize anything, and the gate that says so. */
export interface Tainted {
  readonly gate: "autonomous" | "grade"
  /** Where it was made, as a phrase: "inside a model's run". */
  readonly where: string
}

/**
 * Whether a service made in the current fiber (a HumanConfirm layer, a
 * HumanTrigger) is tainted: made in a model's run or inside a tool's own
 * code. A service is a value, and a context is a shared, mutable map: code
 * can carry a service it made out of its fiber, into its caller's context,
 * where the caller's later work would find it. So where it was made is read
 * where it is made, and kept with it.
 */
export const taintHere: Effect.Effect<Tainted | undefined> = sealed(
  Effect.withFiber((fiber) => Effect.succeed(taintOf(markOf(fiber))))
)

const taintOf = (mark: Mark): Tainted | undefined => {
  if (mark.autonomous) return { gate: "autonomous", where: "inside a model's run" }
  if (mark.within !== undefined) {
    const { grade, part, tool } = mark.within
    return {
      gate: "grade",
      where: part === "code" ? `inside ${tool}` : `inside ${tool}'s own ${part} (a ${grade} tool)`
    }
  }
  if (mark.ceiling !== "send") return { gate: "grade", where: `where nothing above a ${mark.ceiling} may happen` }
  return undefined
}

/** The refusal for the current fiber, read in one step. */
/**
 * Why a proposal may not be decided in this fiber (moved by a store's
 * deciding method), or undefined: a model's work, or any tool's own code, a
 * send's `deliver` included. Stricter than `mayCause`: deciding is a
 * human's act, never a tool's; graded's own functions (`Proposal.approve`)
 * check who decides before they call the store.
 */
export const mayDecide = (what: string): Effect.Effect<Refused | undefined> =>
  Effect.withFiber((fiber) => {
    const mark = markOf(fiber)
    if (mark.autonomous || fiber.getRef(currentRef).autonomous) {
      return Effect.succeed(new Refused({ tool: what, gate: "autonomous", reason: autonomousReason }))
    }
    // Graded's own calls to the store run as the store's code (serviceCode.ts):
    // the store is trusted with its own records, as any service the app provides.
    if (mark.within === undefined || mark.within.part === "code") return Effect.succeed(undefined)
    return Effect.succeed(
      new Refused({
        tool: what,
        gate: "grade",
        reason: `${mark.within.tool}'s own ${mark.within.part} may not decide a proposal: only a human's code does`
      })
    )
  })

export const mayCause = (tool: string, grade: Confirmable, needs?: string): Effect.Effect<Refused | undefined> =>
  Effect.withFiber((fiber) => Effect.succeed(refusal(markOf(fiber), tool, grade, needs)))
