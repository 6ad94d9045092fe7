// The contracts on ProposalStore.memory and RunStore.memory, the stores the others are held to.
import { memory as runsMemory, runStoreContract } from "./runStoreContract.js"
import { memory, storeContract } from "./storeContract.js"
import { transitionsContract } from "./transitionsContract.js"

storeContract(memory)
transitionsContract(memory)
runStoreContract(runsMemory)
