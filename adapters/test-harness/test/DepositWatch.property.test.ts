/** Racing deposit watchers over reorgs pay once, on the memory stores (DepositWatchProperty.ts). */
import { Layer } from "effect"
import { depositWatchProperty } from "@model-platform/contract-kit/DepositWatchProperty"
import { LedgerStoreMemory } from "@model-platform/memory-stores/MemoryLedgerStore"
import { DepositWatchStoreMemory } from "@model-platform/memory-stores/MemoryDepositWatchStore"
import { OrderStoreMemory } from "@model-platform/memory-stores/MemoryOrderStore"
import { PlanStoreMemory } from "@model-platform/memory-stores/MemoryPlanStore"

depositWatchProperty(
  "the deposit watcher on the memory stores",
  Layer.mergeAll(OrderStoreMemory, LedgerStoreMemory, PlanStoreMemory, DepositWatchStoreMemory),
  100
)
