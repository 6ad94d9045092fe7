// What Policy.make keeps beside a policy for its review and manifest.
import { make as makeManifest, type Row } from "./manifest.js"
import type { Compiled } from "./policy.js"
import { InvalidPolicy } from "./policy.js"
import type { Finding } from "./review.js"

interface Reviewed {
  readonly compiled: Compiled
  /** The four questions' findings, with the policy's review options (the defaults when it is off). */
  readonly findings: ReadonlyArray<Finding>
  /** The findings that keep a tool out of production: none when the review is off. */
  readonly enforced: ReadonlyArray<Finding>
}

const reviewed = new WeakMap<object, Reviewed>()

export const remember = (policy: object, state: Reviewed): void => void reviewed.set(policy, state)

const stateOf = (policy: object): Reviewed => {
  const state = typeof policy === "object" && policy !== null ? reviewed.get(policy) : undefined
  if (state === undefined) throw new InvalidPolicy(undefined, "this policy was not made by Policy.make")
  return state
}

export const findingsOf = (policy: object): ReadonlyArray<Finding> => stateOf(policy).findings

export const manifestOf = (policy: object): ReadonlyArray<Row> => {
  const state = stateOf(policy)
  return makeManifest(state.compiled, state.enforced)
}

export const isPolicy = (u: unknown): boolean => typeof u === "object" && u !== null && reviewed.has(u)
