// The one home of sealing: what graded makes read-only, and the copies it
// makes so that no one else holds what a human is shown or confirmed.
// 1. Values every fiber of the process shares (`seal`, `sealed`,
//    `sealShared`), sealed before any tool's code runs.
// 2. A tool's schemas, frozen with their AST (`frozenSchema`).
// 3. A payload shown or confirmed: a copy of its own (`copyOf`), frozen
//    (`frozenData`).
//
// 1. A tool's code can import Effect's and graded's exported effects,
// layers, services and references, and find the default value of every
// reference (the clock, random, the tracer, the loggers) that a fiber whose
// context does not hold one reads, every fiber of the process. Left writable,
// one `Object.assign` there, or a `set` on a context's map (`mapUnsafe` is
// the map itself), plants code that runs later wherever the value is used,
// in a human's fiber too, where what it builds is not tainted: a clock whose
// `currentTimeMillis` sends with a HumanConfirm of its own, read when the
// human approves a proposal, or a logger that every fiber calls.
//
// Sealed there: objects whose behaviour is their properties (effects, layers,
// services and references, contexts, request resolvers, plain data), frozen with what they hold
// of the same kinds; a reference's default value (made first: Effect keeps it
// on the reference the first time it is asked for); the empty context every
// root fiber starts from. Left alone: objects that keep state in their
// properties (a scheduler, a fiber, the default metric registry) and JavaScript's own
// (`globalThis.console`, the console reference's default). Effect never writes
// to the values sealed: it makes a new effect or context for every change.
// Each package's sealed list (internal/sealed.ts) is checked against its
// index by test/sealed.test.ts.
// Who may import this: graded's own modules, and each package's index.
import * as Everything from "effect"
import {
  Channel,
  Context,
  Effect,
  ErrorReporter,
  Fiber,
  Layer,
  References,
  RequestResolver,
  Schedule,
  Sink,
  Stream
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

/**
 * A set read as the one it copies and never written (a reference's default
 * set of loggers). Effect only iterates it and asks its size; it does not
 * claim `ReadonlySet`, whose ES2025 methods (`union`, ...) Effect never calls.
 */
class ReadonlyValues<V> implements Iterable<V> {
  readonly #set: Set<V>
  constructor(values: Iterable<V>) {
    this.#set = new Set(values)
    Object.freeze(this)
  }
  get size(): number {
    return this.#set.size
  }
  has(value: V): boolean {
    return this.#set.has(value)
  }
  keys(): SetIterator<V> {
    return this.#set.keys()
  }
  values(): SetIterator<V> {
    return this.#set.values()
  }
  entries(): SetIterator<[V, V]> {
    return this.#set.entries()
  }
  forEach(f: (value: V, key: V, set: ReadonlyValues<V>) => void, self?: unknown): void {
    this.#set.forEach((value) => f.call(self, value, value, this))
  }
  [Symbol.iterator](): SetIterator<V> {
    return this.#set[Symbol.iterator]()
  }
}
Object.freeze(ReadonlyValues.prototype)
Object.freeze(ReadonlyValues)

/** A read-only copy of `values`, iterated like the set it copies. */
export const readOnlySet = <V>(values: Iterable<V>): Iterable<V> => new ReadonlyValues(values)

/** A context of `services` whose map no one can write to (an isolated fiber's). */
export const readOnlyContext = (services: Iterable<readonly [string, unknown]>): Context.Context<never> =>
  Context.makeUnsafe(new ReadonlyServices(services))

const seen = new WeakSet<object>()

const frozen = (value: object): void => {
  if (!Object.isFrozen(value)) Object.freeze(value)
}

// Effect 4's context keeps its services in a base map and a chain of later
// additions, and fills in caches as it is read: the merged map, and on the
// context its fibers' caches come from (its root), what those fibers read
// on every step (the scheduler, the tracer). All filled in here, once, the
// map replaced by a read-only copy, then frozen: reading it writes nothing.
interface ContextFields {
  cacheRoot: ContextFields
  base: ReadonlyMap<string, unknown>
  overlay: unknown
  depth: number
  _flat: ReadonlyMap<string, unknown> | undefined
  _fiberCache?: object
}

const sealContext = (context: Context.Context<never>): void => {
  const fields = context as unknown as ContextFields
  if (Object.isFrozen(fields) || !Object.isExtensible(fields)) return
  const services = new ReadonlyServices(context.mapUnsafe)
  fields.base = services
  fields._flat = services
  fields.overlay = undefined
  fields.depth = 0
  if (fields.cacheRoot !== fields) sealContext(fields.cacheRoot as unknown as Context.Context<never>)
  else if (fields._fiberCache === undefined) Effect.runForkWith(context)(Effect.void)
  if (fields._fiberCache !== undefined) frozen(fields._fiberCache)
  frozen(fields)
}

const isPlain = (value: object): boolean => {
  const proto = Object.getPrototypeOf(value)
  return proto === Object.prototype || proto === null || Array.isArray(value)
}

/** Whether its behaviour is its properties: sealed, with what it holds. */
const isBehaviour = (value: object): boolean =>
  Effect.isEffect(value) || Layer.isLayer(value) || Context.isKey(value) || isPlain(value) ||
  Schedule.isSchedule(value) || Stream.isStream(value) || Sink.isSink(value) || Channel.isChannel(value) ||
  RequestResolver.isRequestResolver(value)

// Objects that look like effects but keep their state in their properties.
const isStateful = (value: object): boolean =>
  Fiber.isFiber(value) || value instanceof Map || value instanceof Set || value instanceof WeakMap ||
  value instanceof WeakSet || value instanceof Promise || value instanceof RegExp || value instanceof Date ||
  ArrayBuffer.isView(value)

// The references whose default set Effect never writes to.
const readOnlySets: ReadonlySet<string> = new Set([
  References.CurrentLoggers.key,
  ErrorReporter.CurrentErrorReporters.key
])

// Where Effect keeps a reference's default value once it was asked for.
const defaultValueKey = "~effect/Context/defaultValue"

// A reference's default, shared by every fiber whose context lacks the
// reference: made now, kept read-only. A scheduler keeps its queue in its
// fields, and the console is JavaScript's own: both left as they are.
const sealDefault = (reference: Context.Reference<unknown>): void => {
  const value = Context.get(Context.empty(), reference)
  if (typeof value !== "object" || value === null || value === globalThis.console) return
  const holder = reference as unknown as Record<string, unknown>
  // A set Effect only reads (the loggers every fiber calls, the error
  // reporters): a read-only copy. Maps and other sets are state Effect writes
  // to (the default metric registry): left as they are.
  if (value instanceof Set && readOnlySets.has(reference.key)) holder[defaultValueKey] = new ReadonlyValues(value)
  else if ("scheduleTask" in value || isStateful(value)) return
  else {
    seen.add(value)
    frozen(value)
    for (const held of heldBy(value)) seal(held)
  }
}

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
  if (Context.isKey(value)) {
    // A service's key decides which service is found; a reference's default
    // is what fibers read where no one provided one.
    if (Context.isReference(value)) sealDefault(value)
    return frozen(value)
  }
  if (typeof value === "function" || isStateful(value)) return
  if (Context.isContext(value)) return sealContext(value)
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

let done = false

/** Seals Effect's shared values, once for the process. */
export const sealShared = (): void => {
  if (done) return
  done = true
  seal(Context.empty())
  seal(Everything)
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
  // A class schema (`Schema.Class`, `TaggedError`) finds its AST through a
  // getter on a class it extends, which freezing the schema does not freeze:
  // the AST it has now becomes its own, read-only.
  const ast = schema.ast
  freezeGraph(ast)
  if (!Object.prototype.hasOwnProperty.call(schema, "ast") || Object.getOwnPropertyDescriptor(schema, "ast")?.get) {
    Object.defineProperty(schema, "ast", { value: ast, enumerable: true, writable: false, configurable: false })
  }
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
