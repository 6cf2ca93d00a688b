/** Racing deposit watchers over reorgs pay once, on the memory stores (DepositWatchProperty.ts). */
import { Layer } from "effect"
import { depositWatchProperty } from "../src/DepositWatchProperty.ts"
import { LedgerStoreMemory } from "../src/MemoryLedgerStore.ts"
import { DepositWatchStoreMemory } from "../src/MemoryDepositWatchStore.ts"
import { OrderStoreMemory } from "../src/MemoryOrderStore.ts"
import { PlanStoreMemory } from "../src/MemoryPlanStore.ts"

depositWatchProperty(
  "the deposit watcher on the memory stores",
  Layer.mergeAll(OrderStoreMemory, LedgerStoreMemory, PlanStoreMemory, DepositWatchStoreMemory),
  100
)
