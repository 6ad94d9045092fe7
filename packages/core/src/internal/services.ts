// The services graded calls that the app provides, each read as
// serviceCode.ts's `marked` gives it: their code may cause nothing above a read.
import { Cause, Effect, Option } from "effect"
import { LanguageModel } from "../LanguageModel.js"
import { ProposalStore } from "../ProposalStore.js"
import { RunStore } from "../RunStore.js"
import { marked } from "./serviceCode.js"
import { sealed } from "./seal.js"

// Each sealed where it is made (seal.ts): it runs in every caller's fiber.
export const proposalStoreHere = sealed(
  Effect.map(ProposalStore, (store) => marked(store, "the ProposalStore's code"))
)
export const runStoreHere = sealed(Effect.map(RunStore, (store) => marked(store, "the RunStore's code")))
/** The RunStore where one is in scope (a proposal's approval does not require one). */
export const runStoreIfAny = sealed(Effect.map(
  Effect.serviceOption(RunStore),
  Option.map((store) => marked(store, "the RunStore's code"))
))
export const modelHere = sealed(
  Effect.map(LanguageModel, (model) => marked(model, "the LanguageModel's code", ["stream"]))
)

type Transactional = {
  readonly withTransaction?: (<A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>) | undefined
}

const asItIs = <A, E, R>(self: Effect.Effect<A, E, R>) => self

/**
 * One transition as one transaction of the store's database: the state
 * change and its audit entries commit together (a store without
 * transactions, memory, writes each at once).
 */
export const transaction = (store: Transactional): <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R> =>
  store.withTransaction ?? asItIs

/**
 * The error of a cause that is one typed failure and nothing else (Effect 3's
 * `Fail` cause), or undefined: a cause that also holds a defect or an
 * interruption is not read as that failure.
 */
export const soleFailure = <E>(cause: Cause.Cause<E>): E | undefined => {
  const [reason, ...rest] = cause.reasons
  return rest.length === 0 && reason !== undefined && Cause.isFailReason(reason) ? reason.error : undefined
}

/** The first line of what a store's failure said, for a reason a human reads. */
export const causeLine = (cause: Cause.Cause<unknown>): string => {
  const failure = Cause.squash(cause)
  const text = failure instanceof Error ? failure.message : String(failure)
  return text.split("\n")[0]!.slice(0, 500)
}
