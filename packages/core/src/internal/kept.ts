// graded's own services, read from a context once and kept for that context.
// A context does not change once made (Effect makes a new one for every
// service provided), but its map is mutable all the same
// (`Context.mapUnsafe` is the map itself) and shared with whoever provided it: under a
// ManagedRuntime, with every later call of the app. Code that reaches into it
// (a tool's own code, without a cast) could drop a policy's guards or swap the
// audit sink for the calls that follow. So the first reading stands for the
// context's life, and a later change to its map changes nothing graded reads.
// Who may import this: graded's own modules.
import { Context } from "effect"

const kept = new WeakMap<object, Map<string, unknown>>()

/** `Context.get(context, tag)` as it was the first time graded read it. */
export const keptService = <I, S>(context: Context.Context<never>, tag: Context.Key<I, S>): S => {
  let services = kept.get(context)
  if (services === undefined) kept.set(context, services = new Map())
  if (services.has(tag.key)) return services.get(tag.key) as S
  const service = Context.get(context as Context.Context<I>, tag)
  services.set(tag.key, service)
  return service
}
