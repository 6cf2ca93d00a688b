/** Concurrent renewal jobs charge a due card plan at most once (RenewalProperty.ts), on the memory stores. */
import { Layer } from "effect"
import { AlertStoreMemory } from "../src/MemoryAlertStore.ts"
import { BillingSettingsStoreMemory } from "../src/MemoryBillingSettingsStore.ts"
import { LedgerStoreMemory } from "../src/MemoryLedgerStore.ts"
import { OrderStoreMemory } from "../src/MemoryOrderStore.ts"
import { PlanStoreMemory } from "../src/MemoryPlanStore.ts"
import { AccountStoreMemory } from "../src/MemoryStores.ts"
import { renewalProperty } from "../src/RenewalProperty.ts"

renewalProperty(
  "plan renewals on the memory stores",
  Layer.mergeAll(PlanStoreMemory, OrderStoreMemory, LedgerStoreMemory, AlertStoreMemory, BillingSettingsStoreMemory, AccountStoreMemory),
  200
)
