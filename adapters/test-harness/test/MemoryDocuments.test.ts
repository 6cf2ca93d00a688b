import { agentStoreContract } from "../src/AgentContract.ts"
import { AgentStoreMemory } from "../src/MemoryAgentStore.ts"

agentStoreContract("AgentStoreMemory", AgentStoreMemory)
