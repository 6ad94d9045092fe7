// Who may import this: graded's modules that call a service the app provides
// (the proposal and run stores, the model, a guard, an effectful audit sink).
//
// A context is a map any code can write to (`Context.unsafeMap`), and a
// fiber's older contexts stay reachable from its refs: a tool's code can put
// a service of its own where graded will later look for one, in a human's
// fiber. So where a service comes from is not checked; what its code may do
// is. graded runs the effects a service's methods return as code that may
// cause nothing above a read: a HumanConfirm or trigger built there is
// tainted, a write or send asked for there is refused, and a plan's
// authorization does not cover it. No store, model, guard or sink needs to
// write or send through graded.
import { Effect, Either, Exit, Option } from "effect"
import { restrict } from "./invocation.js"

type Restricted = <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>

// One restriction per name: the mark is made once per `within`.
const restrictions = new Map<string, Restricted>()

/** Runs `self` as code graded calls that is no tool's: `whose` says whose, as a phrase ("the ProposalStore's code"). */
export const asCode = (whose: string): Restricted => {
  let restricted = restrictions.get(whose)
  if (restricted === undefined) {
    restricted = restrict({ ceiling: "read", within: Object.freeze({ tool: whose, grade: "read", part: "code" }) })
    restrictions.set(whose, restricted)
  }
  return restricted
}

// An effect a method returned, to run marked; values that are effects only
// by Effect's protocol (an Exit is done already; an Either or Option is a
// value the caller reads) are handed back as they are.
const runsLater = (value: unknown): value is Effect.Effect<unknown, unknown, unknown> =>
  Effect.isEffect(value) && !Exit.isExit(value) && !Either.isEither(value) && !Option.isOption(value)

const wrapped = new WeakMap<object, object>()

/**
 * `service` with every method's effect run as `asCode(whose)`: made once per
 * service object. Methods are found on the object and its prototypes (a
 * class's instance); other properties are read through.
 */
export const marked = <S extends object>(service: S, whose: string): S => {
  const made = wrapped.get(service)
  if (made !== undefined) return made as S
  const restricted = asCode(whose)
  const wrapper: Record<PropertyKey, unknown> = {}
  for (let at: object | null = service; at !== null && at !== Object.prototype; at = Object.getPrototypeOf(at)) {
    for (const key of Reflect.ownKeys(at)) {
      if (key === "constructor" || key in wrapper) continue
      const value = (service as Record<PropertyKey, unknown>)[key]
      if (typeof value !== "function") {
        Object.defineProperty(wrapper, key, {
          enumerable: true,
          get: () => (service as Record<PropertyKey, unknown>)[key]
        })
        continue
      }
      wrapper[key] = (...args: Array<unknown>) => {
        const out: unknown = Reflect.apply(value, service, args)
        return runsLater(out) ? restricted(out) : out
      }
    }
  }
  const frozen = Object.freeze(wrapper) as S
  wrapped.set(service, frozen)
  return frozen
}
