/**
 * Capabilities are Effect services. A tool that writes needs
 * `WriteCapability` in its requirements, one that sends needs
 * `SendCapability`, and a fixed flow needs `HumanTrigger`. Their service
 * shapes carry a brand that no code outside graded can write, so only
 * graded's layers (`HumanConfirm.layer`, `Plan.run`, a UI entry point) can
 * provide them.
 *
 * @since 0.1.0
 */
import { Context, Layer } from "effect"
import type { Effect } from "effect/Effect"
import type { ParseError } from "effect/ParseResult"
import * as internal from "./internal/capability.js"
import type { ConfirmError } from "./ToolError.js"

/**
 * What a human is asked to confirm: a write's input or a send's prepared
 * payload.
 *
 * @since 0.1.0
 * @category models
 */
export interface Request<P> {
  readonly tool: string
  readonly grade: "write" | "send"
  readonly title: string
  readonly description: string
  /** The payload as the tool will use it. */
  readonly payload: P
  /** The payload as the human sees it: encoded with the tool's schema, plain JSON. */
  readonly shown: unknown
  /** Decodes an edited payload with the tool's schema again. */
  readonly revalidate: (edited: unknown) => Effect<P, ParseError>
  /** The JSON Schema of the payload, for a UI that builds an edit form. */
  readonly schema?: unknown
}

/**
 * A payload a human saw and approved. Only `HumanConfirm` makes these; each is
 * bound to one tool and the exact payload shown, and can be delivered once.
 *
 * @since 0.1.0
 * @category models
 */
export interface Confirmed<P> {
  readonly [internal.MadeByHumanConfirmOnly]: internal.MadeByHumanConfirmOnly
  readonly tool: string
  readonly payload: P
  /** Who approved. */
  readonly by: string
  /** Whether the human changed the payload before approving. */
  readonly edited: boolean
}

/**
 * Authorizes one write call: a human approves (and may edit) the input.
 *
 * @since 0.1.0
 * @category services
 */
export class WriteCapability extends Context.Tag("@graded/core/WriteCapability")<
  WriteCapability,
  WriteCapability.Service
>() {}

/**
 * @since 0.1.0
 */
export declare namespace WriteCapability {
  /**
   * @since 0.1.0
   * @category models
   */
  export interface Service {
    readonly [internal.OnlyGradedLayersGrantThis]: "WriteCapability"
    readonly authorize: <P>(request: Request<P>) => Effect<Confirmed<P>, ConfirmError>
  }
}

/**
 * Turns a prepared payload into a `Confirmed<P>`: a human saw it and said yes.
 *
 * @since 0.1.0
 * @category services
 */
export class SendCapability extends Context.Tag("@graded/core/SendCapability")<
  SendCapability,
  SendCapability.Service
>() {}

/**
 * @since 0.1.0
 */
export declare namespace SendCapability {
  /**
   * @since 0.1.0
   * @category models
   */
  export interface Service {
    readonly [internal.OnlyGradedLayersGrantThis]: "SendCapability"
    readonly confirm: <P>(request: Request<P>) => Effect<Confirmed<P>, ConfirmError>
  }
}

/**
 * Proof that a human started the current work: a shortcut, a CLI command, a
 * click.
 *
 * @since 0.1.0
 * @category services
 */
export class HumanTrigger extends Context.Tag("@graded/core/HumanTrigger")<
  HumanTrigger,
  HumanTrigger.Service
>() {}

/**
 * @since 0.1.0
 */
export declare namespace HumanTrigger {
  /**
   * @since 0.1.0
   * @category models
   */
  export interface Service {
    readonly [internal.OnlyGradedLayersGrantThis]: "HumanTrigger"
    /** Who started the work. */
    readonly by: string
    /** How: "shortcut", "cli", "click", ... */
    readonly via: string
  }
}

/**
 * The three capabilities graded itself defines.
 *
 * @since 0.1.0
 * @category models
 */
export type Builtin = WriteCapability | SendCapability | HumanTrigger

/**
 * The identifier of a user-defined capability.
 *
 * @since 0.1.0
 * @category models
 */
export interface Custom<Id extends string> {
  readonly capability: Id
}

/**
 * What a user-defined capability provides: who granted it.
 *
 * @since 0.1.0
 * @category models
 */
export interface Grant<Id extends string> {
  readonly [internal.OnlyGradedLayersGrantThis]: Id
  readonly by: string
}

/**
 * A user-defined capability: a tag tools can require, and the one way to
 * grant it. Keep `layer` where your authorization lives; whoever holds it can
 * grant the capability.
 *
 * @since 0.1.0
 * @category models
 */
export interface Definition<Id extends string> extends Context.Tag<Custom<Id>, Grant<Id>> {
  readonly id: Id
  readonly layer: (by: string) => Layer.Layer<Custom<Id>>
}

/**
 * Defines a capability of your own (a role, a consent) that tools can require.
 *
 * @example
 * import { Effect } from "effect"
 * import { Capability } from "@graded/core"
 *
 * const Consent = Capability.make("Consent")
 * const needsConsent = Effect.gen(function*() {
 *   const grant = yield* Consent
 *   return grant.by
 * })
 * const granted = Effect.provide(needsConsent, Consent.layer("customer:42"))
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = <const Id extends string>(id: Id): Definition<Id> => {
  const tag = Context.GenericTag<Custom<Id>, Grant<Id>>(`@graded/core/Capability/${id}`)
  const layer = (by: string) =>
    Layer.sync(tag, () => internal.grant({ [internal.OnlyGradedLayersGrantThis]: id, by }))
  return Object.assign(tag, { id, layer })
}
