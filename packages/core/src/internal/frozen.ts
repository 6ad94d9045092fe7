// A schema made read-only, its AST included: a tool's schemas decide what
// runs and what a human is shown (HumanConfirm encodes the payload with the
// tool's schema), and code that holds the tool must not swap them. Effect
// makes a new schema for every change (`pipe`, `annotations`), so nothing
// Effect does writes to one.
// Who may import this: graded's tool constructors.

const seen = new WeakSet<object>()

// Objects whose state is not their properties (a RegExp keeps `lastIndex`,
// which `Schema.pattern` resets on every test): left as they are.
const stateful = (value: object): boolean =>
  value instanceof RegExp || value instanceof Date || value instanceof Map || value instanceof Set ||
  value instanceof WeakMap || value instanceof WeakSet || value instanceof Promise || ArrayBuffer.isView(value)

const freezeGraph = (value: unknown): void => {
  if (typeof value !== "object" || value === null || seen.has(value) || stateful(value)) return
  seen.add(value)
  Object.freeze(value)
  for (const key of Reflect.ownKeys(value)) {
    freezeGraph((value as Record<PropertyKey, unknown>)[key])
  }
}

/** `schema`, with its own properties and every object its AST reaches frozen. */
export const frozenSchema = <S extends { readonly ast: unknown }>(schema: S): S => {
  if (seen.has(schema)) return schema
  freezeGraph(schema.ast)
  seen.add(schema)
  Object.freeze(schema)
  return schema
}

/**
 * `value` with every plain object and array it reaches frozen: a payload
 * shown to a human, or confirmed. What keeps its state inside (a Date, a Map)
 * is not frozen by this; such a value is copied instead, so that no one else
 * holds it (HumanConfirm).
 */
export const frozenData = <A>(value: A): A => {
  freezeGraph(value)
  return value
}
