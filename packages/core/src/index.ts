/**
 * @graded/core: LLM tools that carry their side-effect grade in their type.
 *
 * @since 0.1.0
 */
export * as Agent from "./Agent.js"
export * as Audit from "./Audit.js"
export * as Bridge from "./Bridge.js"
export * as Capability from "./Capability.js"
export type { HumanTrigger, NeedsHumanConfirm, SendCapability, WriteCapability } from "./Capability.js"
export * as Grade from "./Grade.js"
export * as Guard from "./Guard.js"
export * as HumanConfirm from "./HumanConfirm.js"
export * as Invocation from "./Invocation.js"
export * as LanguageModel from "./LanguageModel.js"
export * as Plan from "./Plan.js"
export * as Printable from "./Printable.js"
export * as Proposal from "./Proposal.js"
export * as ProposalStore from "./ProposalStore.js"
export * as Registry from "./Registry.js"
export * as Runs from "./Runs.js"
export * as RunStore from "./RunStore.js"
export * as ScriptedModel from "./ScriptedModel.js"
export * as Tool from "./Tool.js"
export * as Toolkit from "./Toolkit.js"
export * as ToolError from "./ToolError.js"
export * as Trim from "./Trim.js"
export * as Wire from "./Wire.js"

// Sealed when the package is loaded (internal/sealed.ts).
import "./internal/sealed.js"
