import { PlanStoreMemory } from "@model-platform/memory-stores/MemoryPlanStore"
import { planStoreContract } from "@model-platform/contract-kit/PlanContract"

planStoreContract("PlanStoreMemory", PlanStoreMemory)
