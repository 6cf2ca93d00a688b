import { PlanStoreMemory } from "../src/MemoryPlanStore.ts"
import { planStoreContract } from "../src/PlanContract.ts"

planStoreContract("PlanStoreMemory", PlanStoreMemory)
