/** The document store contract in memory, for agents and approvals, and the DocumentStores port. */
import { Layer } from "effect"
import { AgentDocumentsContract } from "../src/AgentContract.ts"
import { ApprovalDocumentsContract } from "../src/ApprovalContract.ts"
import { documentStoresContract } from "../src/DocumentContract.ts"
import { AgentStoreMemory } from "@model-platform/memory-stores/MemoryAgentStore"
import { ApprovalStoreMemory, DocumentStoresMemory } from "@model-platform/memory-stores/MemoryDocuments"

documentStoresContract(
  "AgentStoreMemory + ApprovalStoreMemory + DocumentStoresMemory",
  Layer.mergeAll(AgentStoreMemory, ApprovalStoreMemory, DocumentStoresMemory),
  [AgentDocumentsContract, ApprovalDocumentsContract]
)
