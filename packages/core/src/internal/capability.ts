// The brands that make capabilities and confirmations impossible to write by
// hand, and the run-time records that back them up when a cast gets past the
// compiler. Nothing here is exported from the package.
import type { Confirmed } from "../Capability.js"

export const OnlyGradedLayersGrantThis: unique symbol = Symbol("@graded/core/OnlyGradedLayersGrantThis")
export type OnlyGradedLayersGrantThis = typeof OnlyGradedLayersGrantThis

export const MadeByHumanConfirmOnly: unique symbol = Symbol("@graded/core/MadeByHumanConfirmOnly")
export type MadeByHumanConfirmOnly = typeof MadeByHumanConfirmOnly

// Services made by graded's own layers. A service object that is not here was
// forged with a cast and is refused.
const granted = new WeakSet<object>()

export const grant = <S extends object>(service: S): S => {
  granted.add(service)
  return service
}

export const isGranted = (service: unknown): boolean =>
  typeof service === "object" && service !== null && granted.has(service)

// Confirmations not yet delivered. Delivering removes one, so a confirmation is
// used at most once, and one that was never minted is never in the set.
const unused = new WeakSet<object>()

export const mintConfirmed = <P>(fields: {
  readonly tool: string
  readonly payload: P
  readonly by: string
  readonly edited: boolean
}): Confirmed<P> => {
  const confirmed: Confirmed<P> = Object.freeze({ [MadeByHumanConfirmOnly]: MadeByHumanConfirmOnly, ...fields })
  unused.add(confirmed)
  return confirmed
}

export const consumeConfirmed = (confirmed: unknown): boolean =>
  typeof confirmed === "object" && confirmed !== null && unused.delete(confirmed)
