/**
 * Capabilities are Effect services. A tool that writes needs
 * `WriteCapability` in its requirements, one that sends needs
 * `SendCapability`, and a fixed flow needs `HumanTrigger`. The built-in ones
 * are types only: their tags are internal, their services are opaque tokens
 * with nothing to call, and only graded's layers (`HumanConfirm.layer`,
 * `Plan.run`, `HumanConfirm.trigger`) provide them.
 *
 * @since 0.1.0
 */
import { Context, Data, Effect, Layer } from "effect"
import * as internal from "./internal/capability.js"
import { Refused } from "./ToolError.js"
import { freshService } from "./internal/freshLayer.js"
import { sealed } from "./internal/seal.js"

/**
 * A payload a human saw and approved, for one send tool. Only `HumanConfirm`
 * makes these; each is bound to the tool it was made for and the exact
 * payload shown (an edit makes a new one), and can be delivered once, by that
 * tool, in a fiber that is not autonomous.
 *
 * @since 0.1.0
 * @category models
 */
export interface Confirmed<P, Name extends string = string> {
  /** A value no code outside graded can write: a confirmation made by hand does not compile. */
  readonly madeByHumanConfirmOnly: internal.MadeByHumanConfirmOnly
  /** The send tool it was made for: only that tool's `deliver` accepts it. */
  readonly tool: Name
  readonly payload: P
  /** Who approved. */
  readonly by: string
  /** Whether the human changed the payload before approving. */
  readonly edited: boolean
  /**
   * The key that names this delivery to the outside system: pass it on (an
   * `Idempotency-Key` header, a unique column) so that a retried delivery is
   * recognised there. One per approval; a proposal keeps its key across a
   * human's retry of an in-doubt delivery.
   */
  readonly idempotencyKey: string
}

/**
 * Authorizes one write call: a human approves (and may edit) the input, or a
 * fixed flow a human started declared this write. A type only: graded's
 * layers provide it (`HumanConfirm.layer`, `Plan.run`); user code cannot look
 * it up or call it.
 *
 * @since 0.1.0
 * @category models
 */
export interface WriteCapability {
  readonly [internal.CapabilityId]: "WriteCapability"
}

/**
 * @since 0.1.0
 */
export declare namespace WriteCapability {
  /**
   * An opaque token: what it does is kept inside graded.
   *
   * @since 0.1.0
   * @category models
   */
  export interface Service {
    readonly [internal.OnlyGradedLayersGrantThis]: "WriteCapability"
  }
}

/**
 * Turns a prepared payload into a `Confirmed` one: a human saw it and said
 * yes. A type only: `HumanConfirm.layer` alone provides it.
 *
 * @since 0.1.0
 * @category models
 */
export interface SendCapability {
  readonly [internal.CapabilityId]: "SendCapability"
}

/**
 * @since 0.1.0
 */
export declare namespace SendCapability {
  /**
   * An opaque token: what it does is kept inside graded.
   *
   * @since 0.1.0
   * @category models
   */
  export interface Service {
    readonly [internal.OnlyGradedLayersGrantThis]: "SendCapability"
  }
}

/**
 * Proof that a human started the current work: a shortcut, a CLI command, a
 * click. A type only: `HumanConfirm.trigger` provides it.
 *
 * @since 0.1.0
 * @category models
 */
export interface HumanTrigger {
  readonly [internal.CapabilityId]: "HumanTrigger"
}

/**
 * @since 0.1.0
 */
export declare namespace HumanTrigger {
  /**
   * What `HumanConfirm.trigger` provides: who started the work and how;
   * `Plan.run` acts as `by` unless the context names an actor.
   *
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
 * A human to confirm the named tools: what `Agent.supervised`,
 * `Proposal.approve` and `Proposal.retry` need beside `WriteCapability` and
 * `SendCapability`, so that an effect run without a layer that asks a human
 * is refused with a message that names the tools waiting for one
 * (`Type '... | NeedsHumanConfirm<"ticket.submit" | "chat.sendMessage">' is
 * not assignable to type 'never'`). Provide `HumanConfirm.layer(ui)` (or
 * `WebConfirm.layer`, `TerminalConfirm.layer`), which provides it for every
 * tool. A type only, like the capabilities: nothing looks it up.
 *
 * @since 0.1.0
 * @category models
 */
export interface NeedsHumanConfirm<Tools extends string> {
  readonly [internal.NeedsHumanConfirmId]: Tools
}

/**
 * `NeedsHumanConfirm` for the writes and sends among `Tools` (a union of
 * tools), or `never` when there are none.
 *
 * @since 0.1.0
 * @category models
 */
export type NeedsHumanConfirmFor<Tools> = [ConfirmableName<Tools>] extends [never] ? never
  : NeedsHumanConfirm<ConfirmableName<Tools>>

type ConfirmableName<Tools> = Tools extends
  { readonly name: infer Name extends string; readonly grade: "write" | "send" } ? Name
  : never

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
 * A user-defined capability: an effect tools yield to require it (it fails
 * with `Refused` when what is in scope was not granted by this definition's
 * `layer`), and the one way to grant it. Keep `layer` where your
 * authorization lives; whoever holds it can grant the capability.
 *
 * @since 0.1.0
 * @category models
 */
export interface Definition<Id extends string> extends Effect.Effect<Grant<Id>, Refused, Custom<Id>> {
  readonly id: Id
  /** The service key; unique to this definition. */
  readonly key: string
  readonly layer: (by: string) => Layer.Layer<Custom<Id>>
}

/**
 * Thrown when a second capability is made with a key already in use: two
 * definitions of one key would grant each other's capability.
 *
 * @since 0.1.0
 * @category errors
 */
export class DuplicateCapability extends Data.TaggedError("@graded/core/Capability/DuplicateCapability")<{
  readonly id: string
}> {
  override get message(): string {
    return `Capability '${this.id}' is already defined: make each capability once and import it where it is needed`
  }
}

/**
 * Defines a capability of your own (a role, a consent) that tools can require.
 * Each id can be made once per process; a second `make` throws
 * `DuplicateCapability`.
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
  const key = `@graded/core/Capability/${id}`
  if (!internal.claimCustomKey(key)) throw new DuplicateCapability({ id })
  const tag = sealed(Context.Service<Custom<Id>, Grant<Id>>(key))
  const definition: Definition<Id> = Object.assign(
    Effect.flatMap(tag, (grant) =>
      internal.isCustomGrant(grant, definition)
        ? Effect.succeed(grant)
        : Effect.fail(
          new Refused({
            tool: id,
            gate: "capability",
            reason: `this ${id} was not granted by its Capability.make layer`
          })
        )),
    {
      id,
      key,
      layer: (by: string) =>
        sealed(freshService(tag, () => Effect.sync(() => internal.grantCustom(definition, id, by))))
    }
  )
  // Sealed: code that finds the definition (an app exports it) must not swap
  // `layer` for a function the app would later run, nor rewrite the effect
  // every tool that needs it runs (Effect 4 keeps hashes in a WeakMap).
  return sealed(definition)
}
