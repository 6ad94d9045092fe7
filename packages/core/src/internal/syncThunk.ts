// An effect made by `Effect.sync`: its function, to call at once (a sink's
// write, a read tool's run). Read from Effect's own representation; anything
// else is run as an effect.
export const syncThunk = (effect: unknown): (() => unknown) | undefined => {
  if (typeof effect !== "object" || effect === null) return undefined
  const primitive = effect as { readonly _op?: unknown; readonly effect_instruction_i0?: unknown }
  return primitive._op === "Sync" && typeof primitive.effect_instruction_i0 === "function"
    ? primitive.effect_instruction_i0 as () => unknown
    : undefined
}
