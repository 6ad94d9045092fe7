// What makes capabilities and confirmations impossible to obtain without a
// human: the tags of the built-in capabilities (user code names them as types
// only), the brands no code outside graded can write, and the run-time records
// that back them up when something gets past the compiler.
//
// A capability service is an opaque token: nothing on it can be called. What
// it does (ask a human, or authorize a plan's declared writes) is kept here,
// keyed by the token, so finding a service in a fiber's context gives code
// nothing it can use. A confirmation is bound to the tool object it was made
// for, is used once, and carries what the human approved.
// Who may import this: graded's own modules only; nothing here is exported
// from the package.
import { Context, Effect, type Schema } from "effect"
import type { Confirmed, Grant, HumanTrigger, SendCapability, WriteCapability } from "../Capability.js"
import type { Confirmable } from "../Grade.js"
import type { Any as AnyTool } from "../Tool.js"
import type { Tainted } from "./authority.js"
import { autonomousReason, type ConfirmError, Refused } from "../ToolError.js"
import { sealed } from "./seal.js"

export const OnlyGradedLayersGrantThis: unique symbol = Symbol("@graded/core/OnlyGradedLayersGrantThis")
export type OnlyGradedLayersGrantThis = typeof OnlyGradedLayersGrantThis

export const MadeByHumanConfirmOnly: unique symbol = Symbol("@graded/core/MadeByHumanConfirmOnly")
export type MadeByHumanConfirmOnly = typeof MadeByHumanConfirmOnly

export const CapabilityId: unique symbol = Symbol("@graded/core/CapabilityId")
export type CapabilityId = typeof CapabilityId
// A type's key only: nothing holds a value under it (Capability.NeedsHumanConfirm).
export declare const NeedsHumanConfirmId: unique symbol
export type NeedsHumanConfirmId = typeof NeedsHumanConfirmId

export class WriteCapabilityTag
  extends Context.Service<WriteCapability, WriteCapability.Service>()("@graded/core/WriteCapability")
{}

export class SendCapabilityTag
  extends Context.Service<SendCapability, SendCapability.Service>()("@graded/core/SendCapability")
{}

export class HumanTriggerTag
  extends Context.Service<HumanTrigger, HumanTrigger.Service>()("@graded/core/HumanTrigger")
{}

// Sealed where they are made (seal.ts): each is run in every caller's
// fiber, and a tool's code that finds one (a supervisor over its own call
// is handed every effect its fiber runs) must not rewrite it.
sealed(WriteCapabilityTag)
sealed(SendCapabilityTag)
sealed(HumanTriggerTag)

/** What a write or send asks its capability: the tool object and the value it will use. */
export interface Request {
  readonly tool: AnyTool
  readonly grade: Confirmable
  readonly payload: unknown
  /** The schema the payload is shown, edited and checked with. */
  readonly schema: Schema.Codec<any, unknown>
  /** The key the delivery goes out with: a proposal's recorded one, else a fresh one. */
  readonly idempotencyKey?: string | undefined
}

export interface Authority {
  readonly confirm: (request: Request) => Effect.Effect<Confirmed<unknown>, ConfirmError>
}

// Services made by graded's own layers. A service object that is not here was
// forged with a cast and is refused.
const granted = new WeakSet<object>()
const authorities = new WeakMap<object, Authority>()

export const grant = <S extends object>(service: S): S => {
  granted.add(Object.freeze(service))
  return service
}

export const isGranted = (service: unknown): boolean =>
  typeof service === "object" && service !== null && granted.has(service)

export const writeCapability = (authority: Authority): WriteCapability.Service => {
  const service = grant({ [OnlyGradedLayersGrantThis]: "WriteCapability" as const })
  authorities.set(service, authority)
  return service
}

export const sendCapability = (authority: Authority): SendCapability.Service => {
  const service = grant({ [OnlyGradedLayersGrantThis]: "SendCapability" as const })
  authorities.set(service, authority)
  return service
}

// Services graded made where they may never authorize anything (a trigger
// made inside a tool's own code): where they were made, kept with them.
const taints = new WeakMap<object, Tainted>()

export const taint = <S extends object>(service: S, tainted: Tainted | undefined): S => {
  if (tainted !== undefined) taints.set(service, tainted)
  return service
}

export const taintOf = (service: unknown): Tainted | undefined =>
  typeof service === "object" && service !== null ? taints.get(service) : undefined

export const authorityOf = (service: unknown): Authority | undefined =>
  typeof service === "object" && service !== null ? authorities.get(service) : undefined

// Services that refuse every write and send: what a fiber running for a model
// gets, whatever an outer layer provided.
const refusing: Authority = {
  confirm: (request) =>
    Effect.fail(new Refused({ tool: request.tool.name, gate: "autonomous", reason: autonomousReason }))
}
const refusingWrite = writeCapability(refusing)
const refusingSend = sendCapability(refusing)

export const withoutCapabilities = <A, E, R>(self: Effect.Effect<A, E, R>) =>
  self.pipe(
    Effect.provideService(WriteCapabilityTag, refusingWrite),
    Effect.provideService(SendCapabilityTag, refusingSend)
  )

// Confirmations not yet delivered, and the tool each was made for. Delivering
// removes one, so a confirmation is used at most once, by that tool only, and
// one that was never minted is never here.
const owners = new WeakMap<object, AnyTool>()

export const mintConfirmed = <P>(tool: AnyTool, fields: {
  readonly payload: P
  readonly by: string
  readonly edited: boolean
  readonly idempotencyKey?: string | undefined
}): Confirmed<P> => {
  const confirmed = Object.freeze({
    madeByHumanConfirmOnly: MadeByHumanConfirmOnly,
    tool: tool.name,
    payload: fields.payload,
    by: fields.by,
    edited: fields.edited,
    idempotencyKey: fields.idempotencyKey ?? crypto.randomUUID()
  }) as unknown as Confirmed<P>
  owners.set(confirmed, tool)
  return confirmed
}

export const consumeConfirmed = (confirmed: unknown, tool: AnyTool): boolean => {
  if (typeof confirmed !== "object" || confirmed === null || owners.get(confirmed) !== tool) return false
  return owners.delete(confirmed)
}

// User-defined capabilities: each key is made once, and a grant counts only
// for the definition that made it.
const customKeys = new Set<string>()
const customGrants = new WeakMap<object, object>()

export const claimCustomKey = (key: string): boolean => {
  if (customKeys.has(key)) return false
  customKeys.add(key)
  return true
}

export const grantCustom = <Id extends string>(definition: object, id: Id, by: string): Grant<Id> => {
  const service = grant({ [OnlyGradedLayersGrantThis]: id, by }) as Grant<Id>
  customGrants.set(service, definition)
  return service
}

export const isCustomGrant = (service: unknown, definition: object): boolean =>
  typeof service === "object" && service !== null && customGrants.get(service) === definition

// Proposal records made by Tool.proposal. A store refuses any other, so no
// code can queue a payload that no tool prepared.
export const MadeByToolProposalOnly: unique symbol = Symbol("@graded/core/MadeByToolProposalOnly")
export type MadeByToolProposalOnly = typeof MadeByToolProposalOnly

const proposalRecords = new WeakSet<object>()

export const mintProposal = <T extends object>(
  fields: T
): T & { readonly madeByToolProposalOnly: MadeByToolProposalOnly } => {
  const record: T & { readonly madeByToolProposalOnly: MadeByToolProposalOnly } = Object.freeze({
    ...fields,
    madeByToolProposalOnly: MadeByToolProposalOnly
  })
  proposalRecords.add(record)
  return record
}

export const isProposalRecord = (record: unknown): boolean =>
  typeof record === "object" && record !== null && proposalRecords.has(record)
