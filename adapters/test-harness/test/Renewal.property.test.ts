/** Concurrent renewal jobs charge a due card plan at most once (RenewalProperty.ts), on the memory stores. */
import { Layer } from "effect"
import { AlertStoreMemory } from "@model-platform/memory-stores/MemoryAlertStore"
import { BillingSettingsStoreMemory } from "@model-platform/memory-stores/MemoryBillingSettingsStore"
import { LedgerStoreMemory } from "@model-platform/memory-stores/MemoryLedgerStore"
import { OrderStoreMemory } from "@model-platform/memory-stores/MemoryOrderStore"
import { PlanStoreMemory } from "@model-platform/memory-stores/MemoryPlanStore"
import { AccountStoreMemory } from "@model-platform/memory-stores/MemoryStores"
import { renewalProperty } from "@model-platform/contract-kit/RenewalProperty"

renewalProperty(
  "plan renewals on the memory stores",
  Layer.mergeAll(PlanStoreMemory, OrderStoreMemory, LedgerStoreMemory, AlertStoreMemory, BillingSettingsStoreMemory, AccountStoreMemory),
  200
)
