// An effect made by `Effect.sync`: its function, to call at once (a sink's
// write, a read tool's run). Read from Effect 4's own representation (the
// primitive's name on its prototype, its argument on the object); anything
// else is run as an effect.
const identifier = "~effect/Effect/identifier"
const args = "~effect/Effect/args"

export const syncThunk = (effect: unknown): (() => unknown) | undefined => {
  if (typeof effect !== "object" || effect === null) return undefined
  const primitive = effect as { readonly [identifier]?: unknown; readonly [args]?: unknown }
  if (primitive[identifier] !== "Sync") return undefined
  const thunk = primitive[args]
  return typeof thunk === "function" ? thunk as () => unknown : undefined
}
