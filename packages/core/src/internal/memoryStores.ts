// Who may import this: ProposalStore.memory, which records each store it
// makes, and Agent.supervised, which settles what graded's gates refused in
// a store of its own (in a read tool's code, where a decision is refused).
import type { ProposalStore } from "../ProposalStore.js"

/** Each guarded memory store, and the store it guards. */
export const unguarded = new WeakMap<object, ProposalStore.Service>()
