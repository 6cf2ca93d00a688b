import { PlanStoreMemory } from "@model-platform/memory-stores/MemoryPlanStore"
import { planStoreContract } from "../src/PlanContract.ts"

planStoreContract("PlanStoreMemory", PlanStoreMemory)
