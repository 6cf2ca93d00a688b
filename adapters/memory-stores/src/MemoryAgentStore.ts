/**
 * The agent store port (core/src/agents/AgentStore.ts) in memory, for tests and the in-process
 * shell: the generic document store of MemoryDocuments.ts for agents (`AgentDocuments`).
 */
import { AgentDocuments, AgentStore } from "@model-platform/core/agents"
import { Effect, Layer } from "effect"
import { documentStoreMemory } from "./MemoryDocuments.ts"

export const AgentStoreMemory: Layer.Layer<AgentStore> = Layer.effect(
  AgentStore,
  Effect.map(documentStoreMemory(AgentDocuments), AgentStore.of)
)
