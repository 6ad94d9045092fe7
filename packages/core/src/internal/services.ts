// The services graded calls that the app provides, each read as
// serviceCode.ts's `marked` gives it: their code may cause nothing above a read.
import { Effect } from "effect"
import { LanguageModel } from "../LanguageModel.js"
import { ProposalStore } from "../ProposalStore.js"
import { RunStore } from "../RunStore.js"
import { marked } from "./serviceCode.js"

export const proposalStoreHere = Effect.map(ProposalStore, (store) => marked(store, "the ProposalStore's code"))
export const runStoreHere = Effect.map(RunStore, (store) => marked(store, "the RunStore's code"))
export const modelHere = Effect.map(LanguageModel, (model) => marked(model, "the LanguageModel's code"))
