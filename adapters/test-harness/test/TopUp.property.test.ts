/** Automatic top-ups charge exactly once per crossing, on the memory stores (TopUpProperty.ts). */
import { Layer } from "effect"
import { MemoryStores } from "@model-platform/memory-stores/MemoryStores"
import { AlertStoreMemory } from "@model-platform/memory-stores/MemoryAlertStore"
import { BillingSettingsStoreMemory } from "@model-platform/memory-stores/MemoryBillingSettingsStore"
import { LedgerStoreMemory } from "@model-platform/memory-stores/MemoryLedgerStore"
import { OrderStoreMemory } from "@model-platform/memory-stores/MemoryOrderStore"
import { PlanStoreMemory } from "@model-platform/memory-stores/MemoryPlanStore"
import { topUpProperty } from "@model-platform/contract-kit/TopUpProperty"

topUpProperty(
  "automatic top-ups on memory stores",
  Layer.mergeAll(MemoryStores, AlertStoreMemory, LedgerStoreMemory, OrderStoreMemory, PlanStoreMemory, BillingSettingsStoreMemory),
  60
)
