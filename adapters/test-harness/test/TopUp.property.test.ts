/** Automatic top-ups charge exactly once per crossing, on the memory stores (TopUpProperty.ts). */
import { Layer } from "effect"
import { MemoryStores } from "../src/MemoryStores.ts"
import { AlertStoreMemory } from "../src/MemoryAlertStore.ts"
import { BillingSettingsStoreMemory } from "../src/MemoryBillingSettingsStore.ts"
import { LedgerStoreMemory } from "../src/MemoryLedgerStore.ts"
import { OrderStoreMemory } from "../src/MemoryOrderStore.ts"
import { topUpProperty } from "../src/TopUpProperty.ts"

topUpProperty(
  "automatic top-ups on memory stores",
  Layer.mergeAll(MemoryStores, AlertStoreMemory, LedgerStoreMemory, OrderStoreMemory, BillingSettingsStoreMemory),
  60
)
