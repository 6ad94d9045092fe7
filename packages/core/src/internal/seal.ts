// The one home of sealing: what graded makes read-only, and the copies it
// makes so that no one else holds what a human is shown or confirmed.
// 1. Values every fiber of the process shares (`seal`, `sealed`,
//    `sealShared`, `sealDefaultsOf`), sealed before any tool's code runs.
// 2. A tool's schemas, frozen with their AST (`frozenSchema`).
// 3. A payload shown or confirmed: a copy of its own (`copyOf`), frozen
//    (`frozenData`).
//
// 1. A tool's code can import Effect's and graded's exported effects,
// layers, tags and fiber refs, find Effect's default services in its fiber
// (the clock, console, random, config provider and tracer) or reach them from
// a runtime (`Runtime.defaultRuntime`, which `Effect.runPromise` starts every
// fiber from). Left writable, one `Object.assign` or `unsafeMap.set` there
// plants an effect that runs later wherever the value is used, in a human's
// fiber too, where what it builds is not tainted: a clock whose
// `currentTimeMillis` sends with a HumanConfirm of its own, read when the
// human approves a proposal.
//
// Sealed there: objects whose behaviour is their properties (effects, layers,
// tags, contexts, plain data), frozen with what they hold of the same kinds.
// Left alone: objects that keep state in their properties (a scheduler, a
// fiber, a metric registry), and a fiber ref's initial value unless named
// below. Effect never writes to the values sealed: it makes a new effect,
// context or map for every change. A value's hash is computed before it is
// frozen, since Effect caches a hash on the value the first time it is asked.
// Each package's sealed list (internal/sealed.ts) is checked against its
// index by test/sealed.test.ts.
// Who may import this: graded's own modules, and each package's index.
import * as Everything from "effect"
import {
  Channel,
  Context,
  DefaultServices,
  Effect,
  type Fiber,
  FiberRef,
  FiberRefs,
  Hash,
  Layer,
  Runtime,
  Schedule,
  Sink,
  Stream,
  Supervisor
} from "effect"

/**
 * A map that can be read like the one it copies and never written: not a
 * `Map` itself, so `Map.prototype.set.call(view, ...)` throws too. Effect
 * only reads a context's map (get, has, size, iteration, copying it).
 */
class ReadonlyServices<K, V> implements ReadonlyMap<K, V> {
  readonly #map: Map<K, V>
  constructor(entries: Iterable<readonly [K, V]>) {
    this.#map = new Map(entries)
    Object.freeze(this)
  }
  get size(): number {
    return this.#map.size
  }
  get(key: K): V | undefined {
    return this.#map.get(key)
  }
  has(key: K): boolean {
    return this.#map.has(key)
  }
  keys(): MapIterator<K> {
    return this.#map.keys()
  }
  values(): MapIterator<V> {
    return this.#map.values()
  }
  entries(): MapIterator<[K, V]> {
    return this.#map.entries()
  }
  forEach(f: (value: V, key: K, map: ReadonlyMap<K, V>) => void, self?: unknown): void {
    this.#map.forEach((value, key) => f.call(self, value, key, this))
  }
  [Symbol.iterator](): MapIterator<[K, V]> {
    return this.#map[Symbol.iterator]()
  }
}
Object.freeze(ReadonlyServices.prototype)
Object.freeze(ReadonlyServices)

const seen = new WeakSet<object>()

const frozen = (value: object): void => {
  if (Object.isFrozen(value)) return
  if (Object.isExtensible(value) && Hash.symbol in value) Hash.hash(value)
  Object.freeze(value)
}

/** `context` with its map replaced by a read-only copy, and frozen. */
/** `owner[key]`, a map, replaced by a read-only copy (unless something froze `owner` first). */
const readOnlyMap = <K extends string>(owner: { readonly [key in K]: ReadonlyMap<unknown, unknown> }, key: K): void => {
  const map = owner[key]
  if (map instanceof ReadonlyServices || !Object.isExtensible(owner)) return
  Object.defineProperty(owner, key, {
    value: new ReadonlyServices(map),
    writable: false,
    configurable: false,
    enumerable: true
  })
}

const sealContext = (context: Context.Context<never>): void => {
  // A context someone froze first keeps its map (nothing of Effect's does).
  readOnlyMap(context, "unsafeMap")
  frozen(context)
}

const isPlain = (value: object): boolean => {
  const proto = Object.getPrototypeOf(value)
  return proto === Object.prototype || proto === null || Array.isArray(value)
}

const isFiberRef = (value: object): boolean => FiberRef.FiberRefTypeId in value

// Effect's values whose behaviour is their fields or functions of their own
// (a schedule's `step`, a supervisor's `onStart`, a stream's channel), by the
// symbol each kind carries.
const kinds: ReadonlyArray<symbol> = [
  Schedule.ScheduleTypeId,
  Supervisor.SupervisorTypeId,
  Stream.StreamTypeId,
  Sink.SinkTypeId,
  Channel.ChannelTypeId
]

/** Whether its behaviour is its properties: sealed, with what it holds. */
const isBehaviour = (value: object): boolean =>
  Effect.isEffect(value) || Layer.isLayer(value) || Context.isTag(value) || isPlain(value) ||
  kinds.some((kind) => kind in value)

// Objects that look like effects but keep their state in their properties.
const isStateful = (value: object): boolean =>
  "unsafeAddObserver" in value || // a fiber
  value instanceof Map || value instanceof Set || value instanceof WeakMap || value instanceof WeakSet ||
  value instanceof Promise || value instanceof RegExp || value instanceof Date || ArrayBuffer.isView(value)

/** Seals `value` and what it holds of the same kinds (see the top of this file). */
export const seal = (value: unknown): void => {
  if ((typeof value !== "object" && typeof value !== "function") || value === null || seen.has(value)) return
  seen.add(value)
  // A module's namespace (a package's index, or one of its modules): its
  // exports, each sealed; the namespace itself is read-only already.
  if (Object.prototype.toString.call(value) === "[object Module]") {
    for (const exported of Object.values(value)) seal(exported)
    return
  }
  if (typeof value === "function") {
    // A class-based tag: its key decides which service is found.
    if (Context.isTag(value)) frozen(value)
    return
  }
  if (isStateful(value)) return
  if (Context.isContext(value)) return sealContext(value)
  // The ref, not the value it starts fibers with (a scheduler, a logger set).
  if (isFiberRef(value)) return frozen(value)
  if (!isBehaviour(value)) return
  frozen(value)
  for (const held of heldBy(value)) seal(held)
}

// What an object holds in its own data properties (a getter is not run).
const heldBy = (value: object): Array<unknown> => {
  const held: Array<unknown> = []
  for (const key of Reflect.ownKeys(value)) {
    const descriptor = Object.getOwnPropertyDescriptor(value, key)
    if (descriptor !== undefined && "value" in descriptor) held.push(descriptor.value)
  }
  return held
}

// Effect's default services, the context every fiber reads its clock from
// unless a program set another, with the services in it and their effects.
const sealDefaultServices = (): void => {
  const live = FiberRefs.getOrDefault(Runtime.defaultRuntime.fiberRefs, DefaultServices.currentServices)
  for (const service of live.unsafeMap.values()) {
    if (typeof service !== "object" || service === null || seen.has(service)) continue
    seen.add(service)
    // A service instance (the clock is a class) keeps no state in its own
    // properties, only effects and functions; the random generator it may
    // hold keeps its own state and is left as it is.
    frozen(service)
    for (const held of heldBy(service)) {
      if (typeof held === "object" && held !== null && isBehaviour(held)) seal(held)
    }
  }
  seal(live)
}

// The runtime `Effect.runPromise` and `Effect.runFork` start every fiber from.
const sealDefaultRuntime = (): void => {
  const runtime = Runtime.defaultRuntime
  if (seen.has(runtime)) return
  seen.add(runtime)
  seal(runtime.context)
  const refs = runtime.fiberRefs
  readOnlyMap(refs, "locals")
  Object.freeze(refs)
  Object.freeze(runtime)
}

let done = false

/** Seals Effect's shared values, once for the process. */
export const sealShared = (): void => {
  if (done) return
  done = true
  sealDefaultServices()
  sealDefaultRuntime()
  seal(Everything)
}

/**
 * Seals the default services `fiber` reads its clock from, and those of the
 * fibers it descends from, before a tool's code runs in it: a program may
 * have set its own (`Effect.withClock`, a test clock), made as a new context
 * that nothing sealed yet. The services in it are the program's, as mutable
 * as it made them.
 *
 * Once the current one is sealed, the rest were too: the fiber's older
 * entries were sealed with it (the fiber's refs are read only then; reading
 * them copies their map, which cost a third of a read tool's call), and a
 * fiber forked since starts from the same entries.
 */
export const sealDefaultsOf = (fiber: Fiber.RuntimeFiber<unknown, unknown>): void => {
  const current = fiber.currentDefaultServices
  if (seen.has(current)) return
  const stack = fiber.getFiberRefs().locals.get(DefaultServices.currentServices) ?? []
  for (const [, services] of [[undefined, current] as const, ...stack]) {
    if (seen.has(services)) continue
    try {
      seal(services)
    } catch {
      // Not a context Effect made (its map throws when read): the code that
      // made it runs in its own fibers; the tool's call goes on.
    }
  }
}

/**
 * `value`, sealed: a module's constants where they are made, and what
 * graded's constructors return (a layer an app keeps and shares). Effect's
 * shared values are sealed first, so a module imported by its own path,
 * without its package's index, seals them too.
 */
export const sealed = <A>(value: A): A => {
  sealShared()
  seal(value)
  return value
}

// 2 and 3: graded's own graphs of plain objects, frozen whole.

const frozenGraphs = new WeakSet<object>()

// Objects whose state is not their properties (a RegExp keeps `lastIndex`,
// which `Schema.pattern` resets on every test): left as they are.
const keepsState = (value: object): boolean =>
  value instanceof RegExp || value instanceof Date || value instanceof Map || value instanceof Set ||
  value instanceof WeakMap || value instanceof WeakSet || value instanceof Promise || ArrayBuffer.isView(value)

const freezeGraph = (value: unknown): void => {
  if (typeof value !== "object" || value === null || frozenGraphs.has(value) || keepsState(value)) return
  frozenGraphs.add(value)
  Object.freeze(value)
  for (const key of Reflect.ownKeys(value)) {
    freezeGraph((value as Record<PropertyKey, unknown>)[key])
  }
}

/**
 * `schema`, with its own properties and every object its AST reaches frozen:
 * a tool's schemas decide what runs and what a human is shown (HumanConfirm
 * encodes the payload with the tool's schema), and code that holds the tool
 * must not swap them. Effect makes a new schema for every change (`pipe`,
 * `annotations`), so nothing Effect does writes to one.
 */
export const frozenSchema = <S extends { readonly ast: unknown }>(schema: S): S => {
  if (frozenGraphs.has(schema)) return schema
  freezeGraph(schema.ast)
  frozenGraphs.add(schema)
  Object.freeze(schema)
  return schema
}

/**
 * `value` with every plain object and array it reaches frozen: a payload
 * shown to a human, or confirmed. What keeps its state inside (a Date, a Map)
 * is not frozen by this; such a value is copied instead (`copyOf`), so that
 * no one else holds it.
 */
export const frozenData = <A>(value: A): A => {
  freezeGraph(value)
  return value
}

// Taken when this module loads: code that later replaces the global cannot
// choose what a confirmation copies.
const structuredCopy = globalThis.structuredClone

/** What `copyOf` answers for a value that is not data (a function, a symbol). */
export const cannotCopy: unique symbol = Symbol("cannotCopy")

/** A deep copy of `value`, every getter read once; `cannotCopy` for a value that is not data. */
export const copyOf = (value: unknown): unknown => {
  try {
    return structuredCopy(value)
  } catch {
    return cannotCopy
  }
}
