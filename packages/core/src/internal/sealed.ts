// graded's exported effects, layers and tags, and Effect's shared values,
// sealed when the package is loaded, before any tool's code can run: a tool's
// code could import one and change it in place (Invocation.seal, seal.ts).
// Who may import this: the package's index, only.
import { seal } from "../Invocation.js"
import * as Agent from "../Agent.js"
import * as Audit from "../Audit.js"
import * as Bridge from "../Bridge.js"
import * as Capability from "../Capability.js"
import * as Grade from "../Grade.js"
import * as Guard from "../Guard.js"
import * as HumanConfirm from "../HumanConfirm.js"
import * as Invocation from "../Invocation.js"
import * as LanguageModel from "../LanguageModel.js"
import * as Plan from "../Plan.js"
import * as Printable from "../Printable.js"
import * as Proposal from "../Proposal.js"
import * as ProposalStore from "../ProposalStore.js"
import * as Registry from "../Registry.js"
import * as Runs from "../Runs.js"
import * as RunStore from "../RunStore.js"
import * as ScriptedModel from "../ScriptedModel.js"
import * as Tool from "../Tool.js"
import * as Toolkit from "../Toolkit.js"
import * as ToolError from "../ToolError.js"
import * as Trim from "../Trim.js"
import * as Wire from "../Wire.js"

seal(Agent)
seal(Audit)
seal(Bridge)
seal(Capability)
seal(Grade)
seal(Guard)
seal(HumanConfirm)
seal(Invocation)
seal(LanguageModel)
seal(Plan)
seal(Printable)
seal(Proposal)
seal(ProposalStore)
seal(Registry)
seal(Runs)
seal(RunStore)
seal(ScriptedModel)
seal(Tool)
seal(Toolkit)
seal(ToolError)
seal(Trim)
seal(Wire)
