/**
 * The agent store port (core/src/agents/AgentStore.ts) in memory, for tests and the in-process
 * shell: the generic document store of MemoryDocuments.ts for agents (`AgentDocuments`).
 */
import { AgentDocuments } from "@model-platform/core/agents/Records"
import { AgentStore } from "@model-platform/core/agents/AgentStore"
import { Effect, Layer } from "effect"
import { documentStoreMemory } from "./MemoryDocuments.ts"

export const AgentStoreMemory: Layer.Layer<AgentStore> = Layer.effect(
  AgentStore,
  Effect.map(documentStoreMemory(AgentDocuments), AgentStore.of)
)
