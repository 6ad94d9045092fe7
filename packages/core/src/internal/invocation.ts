// The invocation context, and the mark that says what the current fiber may
// cause: whether a model chose the work (autonomous), and the highest grade
// the code running now may cause (inside a read tool's run: nothing above
// read). Every gate that lets a write or a send happen asks `refusal` here.
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
import { type Context as EffectContext, DefaultServices, Effect, Fiber, FiberRef, Option, Scope } from "effect"
import { sealDefaultsOf, sealed } from "./shared.js"
import type { RuntimeFiber } from "effect/Fiber"
import { capabilityName, type Confirmable, type Grade, gradeViolation, type Part, rank, within } from "../Grade.js"
import type { Context } from "../Invocation.js"
import { type Labels, labelsRef } from "./labels.js"
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

// The holds of `holdSync`, innermost last: a fiber and its mark. The code
// they hold is plain JavaScript that runs and ends within its fiber's current
// step, so they come and go in order, always inside any `held` entry of the
// same fiber. Kept apart from `held`: a fresh fiber's first entry in a
// WeakMap cost more than the rest of a synchronous call (a call a fiber).
const syncFibers: Array<object> = []
const syncMarks: Array<Mark> = []

const heldBy = (fiber: object): Mark | undefined => {
  for (let i = syncFibers.length - 1; i >= 0; i--) {
    if (syncFibers[i] === fiber) return syncMarks[i]
  }
  return held.get(fiber)?.at(-1)
}

// A fiber-local value that stands for "whatever the record says of this
// fiber": set once in a fiber, so that the fork below runs for its children
// without setting the fiber-local value on every read tool call (each set
// copies the fiber's map of locals).
interface Anchor {
  readonly fiber: object
  /** What the fiber-local value said when the anchor replaced it (a forked fiber's inherited mark). */
  readonly base: Mark
}
const anchors = new WeakSet<object>()

const trusted = (value: unknown): Mark => {
  if (typeof value !== "object" || value === null) return lockdown
  if (made.has(value)) return value as Mark
  if (anchors.has(value)) return strictest((value as Anchor).base, heldBy((value as Anchor).fiber))
  return lockdown
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

const anchorOf = (fiber: object, base: Mark): Anchor => {
  const anchor = Object.freeze({ fiber, base })
  anchors.add(anchor)
  return anchor
}

/**
 * Runs `self` with the current fiber's mark restricted further: autonomous,
 * or a lower ceiling. Restrictions only add up; nothing here lifts one.
 */
export const restrict =
  (patch: { readonly autonomous?: true; readonly ceiling?: Ceiling; readonly within?: Within }) =>
  <A, E, R>(code: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.withFiberRuntime<A, E, R>((fiber) => {
      // A tool's own code: what it sets in the fiber is undone when it returns.
      const self = patch.within !== undefined ? confined(fiber, code) : code
      // The cheap reading is enough here: restricting more than needed is safe.
      const before = quickMark(fiber)
      const lower = patch.ceiling !== undefined && rank[patch.ceiling] < rank[before.ceiling]
      // Tool code where none ran yet is marked even at the same ceiling (a
      // send's deliver in a human's fiber): what it builds is then tainted.
      const entering = patch.within !== undefined && before.within === undefined
      // An autonomous fiber may cause no write or send already: a lower
      // ceiling would change nothing it is allowed.
      if (before.autonomous || (patch.autonomous !== true && !lower && !entering)) return self
      const wanted = markFor(
        patch.autonomous === true,
        lower ? patch.ceiling! : before.ceiling,
        lower || entering ? patch.within : before.within
      )
      let stack = held.get(fiber)
      if (stack === undefined) held.set(fiber, stack = [])
      const entries = stack
      if (patch.autonomous === true) {
        // Once per agent run: the fiber-local value is set too, so fibers
        // forked from here carry it in their own entries.
        return Effect.acquireUseRelease(
          Effect.sync(() => (entries.push(wanted), fiber.getFiberRef(markRef))),
          () => Effect.locally(self, markRef, wanted),
          () => Effect.sync(() => entries.pop())
        )
      }
      const current = fiber.getFiberRef(markRef)
      const anchored = typeof current === "object" && current !== null && anchors.has(current) &&
        (current as Anchor).fiber === fiber
      entries.push(wanted)
      // Lifted on success and failure. An interruption while `self` runs may
      // leave the fiber restricted until it ends: that fails closed, and it is
      // cheaper on this hot path than a finalizer.
      const lift = Effect.sync(() => entries.pop())
      const guarded = Effect.matchCauseEffect(self, {
        onFailure: (cause) => Effect.zipRight(lift, Effect.failCause(cause)),
        onSuccess: (value) => Effect.as(lift, value)
      })
      // The anchor keeps what the value said: a fiber born restricted stays so.
      return anchored ? guarded : Effect.zipRight(FiberRef.set(markRef, anchorOf(fiber, trusted(current))), guarded)
    })

/**
 * Puts back what a tool's own code changed in its caller's fiber. The code
 * runs in that fiber, and what it sets there outlives its run: the
 * invocation context (`FiberRef.set` on a ref found by scanning, or the
 * fiber's own map of refs) and the services (`FiberRef.currentContext`). Left
 * as they were, the caller's later calls would run as someone else, with
 * features, a role or consents the tool chose, or without the guards and the
 * audit sink the app provided, or with another clock stamping its audit, or
 * with another tool's compliance tags on its entries. `context`, `services`,
 * `clock` and `labels` are what the fiber had when the code started.
 */
export const undoCallerChanges = (
  fiber: RuntimeFiber<unknown, unknown>,
  context: Context,
  services: EffectContext.Context<never>,
  clock: EffectContext.Context<DefaultServices.DefaultServices>,
  labels: Labels | undefined
): void => {
  const settable = fiber as unknown as { setFiberRef: <X>(ref: FiberRef.FiberRef<X>, value: X) => void }
  if (fiber.getFiberRef(currentRef) !== context) settable.setFiberRef(currentRef, context)
  if (fiber.currentContext !== services) settable.setFiberRef(FiberRef.currentContext, services)
  // The clock the audit stamps entries with, among Effect's default services.
  if (fiber.currentDefaultServices !== clock) settable.setFiberRef(DefaultServices.currentServices, clock)
  if (fiber.getFiberRef(labelsRef) !== labels) settable.setFiberRef(labelsRef, labels)
}

// `self`, a tool's own code, with what it changed in `fiber` undone when it
// ends (on success and failure; an interrupted fiber's work is over). Where
// the caller has a Scope, the code gets one of its own, closed when the code
// ends: a finalizer it added to its caller's scope would run later, in the
// caller's fiber, after the restriction it ran under was lifted.
const confined = <A, E, R>(fiber: RuntimeFiber<unknown, unknown>, code: Effect.Effect<A, E, R>) => {
  sealDefaultsOf(fiber)
  const context = fiber.getFiberRef(currentRef)
  const services = fiber.currentContext
  const clock = fiber.currentDefaultServices
  const labels = fiber.getFiberRef(labelsRef)
  const undo = Effect.sync(() => undoCallerChanges(fiber, context, services, clock, labels))
  const self = services.unsafeMap.has(Scope.Scope.key) ? Effect.scoped(code) : code
  return Effect.matchCauseEffect(self, {
    onFailure: (cause) => Effect.zipRight(undo, Effect.failCause(cause)),
    onSuccess: (value) => Effect.as(undo, value)
  })
}

/**
 * What `restrict({ ceiling, within })` does before its effect runs, done at
 * once for code that runs synchronously in `fiber` (a read tool's synchronous
 * run): the restriction is held until `release` is called with what this
 * returned, which must happen when that code is done, however it ends.
 * Undefined when nothing was restricted.
 */
export const holdSync = (
  fiber: RuntimeFiber<unknown, unknown>,
  patch: { readonly ceiling: Ceiling; readonly within: Within },
  // Read earlier in the same call is as good: nothing between can lift a
  // mark, and a restriction pushed when not needed changes nothing.
  before: Mark = quickMark(fiber)
): number | undefined => {
  if (before.autonomous || rank[patch.ceiling] >= rank[before.ceiling]) return undefined
  // Only the record, not the anchor `restrict` sets: the anchor is for the
  // fibers this one forks, and while the code held here runs (plain
  // JavaScript, before the fiber's next step) the fiber forks none. A fiber
  // that code starts from a runtime it kept is forked while this fiber is
  // the current one, and `markRef`'s fork reads the hold from it. Setting the
  // anchor copied the fiber's locals and doubled the cost of a call in a
  // fresh fiber.
  const depth = syncFibers.length
  syncFibers.push(fiber)
  syncMarks.push(markFor(false, patch.ceiling, patch.within))
  return depth
}

/** Ends a `holdSync` and every hold taken after it. */
export const release = (depth: number | undefined): void => {
  if (depth === undefined) return
  while (syncFibers.length > depth) {
    syncFibers.pop()
    syncMarks.pop()
  }
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
 * send's `deliver` included. Stricter than `refusalHere`: deciding is a
 * human's act, never a tool's; graded's own functions (`Proposal.approve`)
 * check who decides before they call the store.
 */
export const decidingRefusalHere = (what: string): Effect.Effect<Refused | undefined> =>
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

export const refusalHere = (tool: string, grade: Confirmable, needs?: string): Effect.Effect<Refused | undefined> =>
  Effect.withFiberRuntime((fiber) => Effect.succeed(refusal(markOf(fiber), tool, grade, needs)))
