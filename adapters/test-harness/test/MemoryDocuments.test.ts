/** The document store contract in memory, for agents and approvals, and the DocumentStores port. */
import { Layer } from "effect"
import { AgentDocumentsContract } from "@model-platform/contract-kit/AgentContract"
import { ApprovalDocumentsContract } from "@model-platform/contract-kit/ApprovalContract"
import { documentStoresContract } from "@model-platform/contract-kit/DocumentContract"
import { AgentStoreMemory } from "@model-platform/memory-stores/MemoryAgentStore"
import { ApprovalStoreMemory, DocumentStoresMemory } from "@model-platform/memory-stores/MemoryDocuments"

documentStoresContract(
  "AgentStoreMemory + ApprovalStoreMemory + DocumentStoresMemory",
  Layer.mergeAll(AgentStoreMemory, ApprovalStoreMemory, DocumentStoresMemory),
  [AgentDocumentsContract, ApprovalDocumentsContract]
)
