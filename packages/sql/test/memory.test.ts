// The contract on ProposalStore.memory, the store the others are held to.
import { memory, storeContract } from "./storeContract.js"

storeContract(memory)
