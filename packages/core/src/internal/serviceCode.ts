// Who may import this: graded's modules that call a service the app provides
// (the proposal and run stores, the model, a guard, an effectful audit sink).
//
// A context is a map any code can write to (`Context.mapUnsafe` is the map
// itself) or replace in its fiber: a tool's code can put
// a service of its own where graded will later look for one, in a human's
// fiber. So where a service comes from is not checked; what its code may do
// is. graded runs the effects a service's methods return as code that may
// cause nothing above a read: a HumanConfirm or trigger built there is
// tainted, a write or send asked for there is refused, and a plan's
// authorization does not cover it. No store, model, guard or sink needs to
// write or send through graded.
import { type Cause, Effect, Exit, Queue, Stream } from "effect"
import { syncThunk } from "./syncThunk.js"
import { asServiceCode } from "./authority.js"

type Restricted = <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>

/**
 * What a service handed graded to run (a method's result, a sink's write, a
 * guard's verdict), as an effect graded made itself: whatever the value says
 * it is, it is never run as it came. Effect's own run loop and `yield*` read
 * the value's fields (`_op`, `_tag`, its iterator) again when they run it,
 * and a value that changes its answer between the reads would run unmarked.
 * So an Exit is rebuilt from its fields read once; a synchronous effect's
 * function is taken once and wrapped again; anything else that runs as an
 * effect (an effect, or any value `yield*` could iterate) runs under
 * `restricted`; a plain value is handed back.
 */
export const ownEffect = (value: unknown, restricted: Restricted): unknown => {
  if ((typeof value !== "object" && typeof value !== "function") || value === null) return value
  if (Effect.isEffect(value)) {
    const tag: unknown = (value as { readonly _tag?: unknown })._tag
    if (tag === "Success") return Exit.succeed((value as { readonly value?: unknown }).value)
    if (tag === "Failure") return Exit.failCause((value as unknown as { readonly cause: Cause.Cause<unknown> }).cause)
    const thunk = syncThunk(value)
    if (thunk !== undefined) return Effect.sync(thunk)
    return restricted(Effect.suspend(() => value))
  }
  if (Symbol.iterator in value) {
    const iterable = value as Iterable<unknown>
    return restricted(Effect.gen(function*() {
      return yield* (iterable as unknown as Effect.Effect<unknown>)
    }))
  }
  return value
}

const asIs: Restricted = (self) => self

const wrapped = new WeakMap<object, object>()

/**
 * What a service's method handed graded as a stream (a model's streamed
 * turn), as a stream graded made: the service's stream runs in a fiber of its
 * own, under `restricted` (the method's call too), and only its elements come back. Pulled as it came,
 * its effects would run in the loop's fiber, unmarked. A value that is no
 * stream comes back as the only element, for the caller to judge.
 */
const ownStream = (make: () => unknown, restricted: Restricted): Stream.Stream<unknown, unknown> =>
  Stream.callback<unknown, unknown>((queue) =>
    restricted(Effect.suspend(() => {
      const value = make()
      return Stream.isStream(value)
        ? Stream.runForEach(value as Stream.Stream<unknown, unknown>, (element) => Queue.offer(queue, element))
        : Queue.offer(queue, value)
    })).pipe(
      Effect.matchCauseEffect({
        onSuccess: () => Queue.end(queue),
        onFailure: (cause) => Queue.failCause(queue, cause)
      })
    )
  )

/**
 * `service` with every method's effect run as `asServiceCode(whose)`: made once per
 * service object, from its properties read once. Methods are found on the
 * object and its prototypes (a class's instance). The methods named in
 * `streams` return a stream, run the same way.
 */
export const marked = <S extends object>(service: S, whose: string, streams: ReadonlyArray<string> = []): S => {
  const made = wrapped.get(service)
  if (made !== undefined) return made as S
  const restricted = asServiceCode(whose)
  const wrapper: Record<PropertyKey, unknown> = {}
  for (let at: object | null = service; at !== null && at !== Object.prototype; at = Object.getPrototypeOf(at)) {
    for (const key of Reflect.ownKeys(at)) {
      if (key === "constructor" || key in wrapper) continue
      const value = (service as Record<PropertyKey, unknown>)[key]
      // Read once: a getter cannot hand graded another function later.
      // The method itself runs under the mark too, in a scope of its own: its
      // body is plain JavaScript, which can reach the fiber it runs in.
      wrapper[key] = typeof value !== "function"
        ? value
        : streams.includes(key as string)
        ? (...args: Array<unknown>) => ownStream(() => Reflect.apply(value, service, args), restricted)
        : (...args: Array<unknown>) =>
          restricted(Effect.suspend(() => {
            const out = ownEffect(Reflect.apply(value, service, args), asIs)
            return Effect.isEffect(out) ? out : Effect.succeed(out)
          }))
    }
  }
  const frozen = Object.freeze(wrapper) as S
  wrapped.set(service, frozen)
  return frozen
}
