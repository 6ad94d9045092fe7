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
// The mark is kept twice, so that code running in a fiber cannot lift it:
// - a fiber-local value, inherited by every fiber forked from this one (the
//   fork also reads the record below, so resetting the value first does not
//   help), read with the values its ancestors set (so a forked fiber setting
//   it back does not help either); a value graded did not make counts as the
//   strictest mark;
// - for every fiber graded restricts, a record keyed by the fiber itself:
//   code can change its fiber-locals, but not which fiber it runs in.
// Who may import this: graded's own modules only.
import {
  Context as EffectContext,
  Effect,
  Fiber,
  type FiberId,
  FiberRef,
  FiberRefs,
  Option,
  Runtime,
  Scheduler,
  Scope,
  Supervisor
} from "effect"
import { sealDefaultsOf, sealed } from "./seal.js"
import type { RuntimeFiber } from "effect/Fiber"
import { capabilityName, type Confirmable, type Grade, gradeViolation, type Part, rank, within } from "../Grade.js"
import type { Context } from "../Invocation.js"
import { autonomousReason, gradeReason, Refused } from "../ToolError.js"

export const initial: Context = Object.freeze({ autonomous: false })

// Shared with Audit, which reads it straight from the fiber on its hot path.
// Descriptive only (page, actor, trace): no gate trusts its `autonomous`
// without the mark below.
export const currentRef: FiberRef.FiberRef<Context> = sealed(FiberRef.unsafeMake(initial))

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

const made = new WeakSet<object>()

const makeMark = (autonomous: boolean, ceiling: Ceiling, within: Within | undefined): Mark => {
  const mark = Object.freeze({ autonomous, ceiling, within })
  made.add(mark)
  return mark
}

export const free: Mark = makeMark(false, "send", undefined)

// What a value graded did not make stands for: nothing may be caused.
const lockdown: Mark = makeMark(true, "read", undefined)

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

// The record code cannot reach: for each fiber graded restricted, its
// restrictions, innermost last.
const held = new WeakMap<object, Array<Mark>>()

const heldBy = (fiber: object): Mark | undefined => held.get(fiber)?.at(-1)

const trusted = (value: unknown): Mark => {
  if (typeof value !== "object" || value === null) return lockdown
  return made.has(value) ? value as Mark : lockdown
}

const markRef: FiberRef.FiberRef<unknown> = sealed(FiberRef.unsafeMake<unknown>(free, {
  // Runs in the parent fiber while it forks: the child starts at least as
  // restricted as its parent is now, whatever the parent did to this value.
  fork: (value) => {
    const parent = Option.getOrUndefined(Fiber.getCurrentFiber())
    return strictest(trusted(value), parent === undefined ? undefined : heldBy(parent))
  },
  // A child never lifts its parent's mark on join.
  join: (parent) => parent
}))

// Every value this fiber and the fibers it descends from set, not only the
// current one: a fiber forked in a restricted region that sets the value back
// still carries its parent's entry underneath.
const inherited = (fiber: RuntimeFiber<unknown, unknown>): Mark => {
  const stack = fiber.getFiberRefs().locals.get(markRef)
  if (stack === undefined) return free
  let mark = trusted(stack[0][1])
  for (let i = 1; i < stack.length; i++) mark = strictest(mark, trusted(stack[i]![1]))
  return mark
}

const markOf = (fiber: RuntimeFiber<unknown, unknown>): Mark => strictest(inherited(fiber), heldBy(fiber))

// The current value and the fiber's own record, without the ancestors'
// entries: reading those costs more, and only the gates need them.
export const quickMark = (fiber: RuntimeFiber<unknown, unknown>): Mark =>
  strictest(trusted(fiber.getFiberRef(markRef)), heldBy(fiber))

/** The tool whose own code the current fiber runs, if any. */
export const toolCodeHere: Effect.Effect<Within | undefined> = sealed(
  Effect.withFiberRuntime((fiber) => Effect.succeed(markOf(fiber).within))
)

/** Whether the fiber runs a tool's own code (a run, a prepare): graded marks it. */
export const inToolCode = (fiber: RuntimeFiber<unknown, unknown>): boolean => markOf(fiber).within !== undefined

export const isAutonomous = (fiber: RuntimeFiber<unknown, unknown>): boolean =>
  fiber.getFiberRef(currentRef).autonomous || markOf(fiber).autonomous

/** For stamping audit entries on every call: the cheap reading. */
export const looksAutonomous = (
  fiber: RuntimeFiber<unknown, unknown>,
  context: Context = fiber.getFiberRef(currentRef)
): boolean => context.autonomous || quickMark(fiber).autonomous

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
    Effect.withFiberRuntime<A, E, R>((fiber) => {
      // The cheap reading is enough here: restricting more than needed is safe.
      const before = quickMark(fiber)
      const lower = patch.ceiling !== undefined && rank[patch.ceiling] < rank[before.ceiling]
      // Tool code where none ran yet is marked even at the same ceiling (a
      // send's deliver in a human's fiber): what it builds is then tainted.
      const entering = patch.within !== undefined && before.within === undefined
      const wanted = markFor(
        before.autonomous || patch.autonomous === true,
        lower ? patch.ceiling! : before.ceiling,
        lower || entering ? patch.within : before.within
      )
      // The fiber graded makes keeps no older entries: its mark counts the
      // caller's ancestors' too.
      if (patch.within !== undefined) return isolated(fiber, strictest(wanted, markOf(fiber)), self)
      // An autonomous fiber may cause no write or send already: a lower
      // ceiling would change nothing it is allowed.
      if (before.autonomous || (patch.autonomous !== true && !lower)) return self
      let stack = held.get(fiber)
      if (stack === undefined) held.set(fiber, stack = [])
      const entries = stack
      // The fiber-local value is set too, so fibers forked from here carry it
      // in their own entries.
      return Effect.acquireUseRelease(
        Effect.sync(() => entries.push(wanted)),
        () => Effect.locally(self, markRef, wanted),
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

// The fiber refs Effect's runtime reads to decide how and when code runs,
// set to graded's values in an isolated fiber rather than inherited: no
// supervisor (one sees, and can rewrite, every effect its fiber runs), the
// default scheduler, no request cache shared with anyone, batching within
// the fiber, Effect's default yield. The runtime flags are Effect's defaults
// (no op supervision).
const knobs: ReadonlyArray<readonly [FiberRef.FiberRef<any>, unknown]> = [
  [FiberRef.currentSupervisor, Supervisor.none],
  [FiberRef.currentScheduler, Scheduler.defaultScheduler],
  [FiberRef.currentRequestCacheEnabled, false],
  [FiberRef.currentRequestBatchingEnabled, true],
  // Effect's own default (core.ts), which FiberRef does not export.
  [FiberRef.currentMaxOpsBeforeYield, 2048]
]

/**
 * `code`, a tool's own code (or a service's), run in a fiber graded makes for
 * it, marked `mark`, and waited for: the caller takes back its exit and
 * nothing else. The fiber starts from the caller's fiber refs, each its
 * current value only (none of the older entries a fiber keeps, where its
 * caller's earlier services and scope are), with the runtime's knobs above
 * set by graded, a copy of the caller's services without its Scope (the code
 * gets a scope of its own, closed when it ends), and the mark held for that
 * fiber (code can change its fiber-locals, not which fiber it runs in). So
 * what the code sets in its fiber (a fiber ref, a supervisor, a runtime flag,
 * a service) ends with it, a request it blocks on is resolved in its fiber,
 * and its caller's fiber is never the code's to touch.
 */
const isolated = <A, E, R>(
  caller: RuntimeFiber<unknown, unknown>,
  mark: Mark,
  code: Effect.Effect<A, E, R>
): Effect.Effect<A, E, R> => {
  sealDefaultsOf(caller)
  const id = caller.id()
  const services = new Map(caller.currentContext.unsafeMap)
  const scoped = services.delete(Scope.Scope.key)
  const locals = new Map<FiberRef.FiberRef<any>, readonly [readonly [FiberId.Single, unknown]]>()
  for (const [ref, stack] of caller.getFiberRefs().locals) locals.set(ref, [[id, stack[0][1]]])
  for (const [ref, value] of knobs) locals.set(ref, [[id, value]])
  // Under the caller's id: the code's own `FiberRef.set` adds an entry
  // above it and leaves this one, which every reading of the mark counts.
  locals.set(markRef, [[id, mark]])
  const context = EffectContext.unsafeMake(services)
  const runtime = Runtime.make({
    context,
    fiberRefs: FiberRefs.unsafeMake(locals),
    runtimeFlags: Runtime.defaultRuntimeFlags
  })
  const body = scoped ? Effect.scoped(code) : code
  const child = Runtime.runFork(runtime)(Effect.withFiberRuntime<A, E, never>((self) => {
    held.set(self, [mark])
    return body as Effect.Effect<A, E, never>
  }))
  // Done within this step (most tools' code is): its exit as it is.
  const done = child.unsafePoll()
  if (done !== null) return done
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
  Effect.withFiberRuntime((fiber) => Effect.succeed(taintOf(markOf(fiber))))
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
  Effect.withFiberRuntime((fiber) => {
    const mark = markOf(fiber)
    if (mark.autonomous || fiber.getFiberRef(currentRef).autonomous) {
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
  Effect.withFiberRuntime((fiber) => Effect.succeed(refusal(markOf(fiber), tool, grade, needs)))
