/** The document store contract in memory, for agents and approvals. */
import { Layer } from "effect"
import { AgentDocumentsContract } from "../src/AgentContract.ts"
import { ApprovalDocumentsContract } from "../src/ApprovalContract.ts"
import { documentStoresContract } from "../src/DocumentContract.ts"
import { AgentStoreMemory } from "../src/MemoryAgentStore.ts"
import { ApprovalStoreMemory } from "../src/MemoryDocuments.ts"

documentStoresContract(
  "AgentStoreMemory + ApprovalStoreMemory",
  Layer.mergeAll(AgentStoreMemory, ApprovalStoreMemory),
  [AgentDocumentsContract, ApprovalDocumentsContract]
)
