/**
 * The billing properties of the contract kit (BillingProperties.ts) on the memory stores: priced by
 * tables the kit's arbitraries make, and by the fixture catalogue's own models and tiers.
 */
import { billingProperties } from "@model-platform/contract-kit/BillingProperties"
import { LedgerStoreMemory } from "@model-platform/memory-stores/MemoryLedgerStore"
import { OrderStoreMemory } from "@model-platform/memory-stores/MemoryOrderStore"
import { Layer } from "effect"
import { fixtureCatalogue } from "../src/Fixtures.ts"

const stores = Layer.mergeAll(LedgerStoreMemory, OrderStoreMemory)

billingProperties("memory stores, generated tables", stores, { numRuns: 100 })
billingProperties("memory stores, the fixture catalogue's tables", stores, {
  prices: fixtureCatalogue.models,
  tiers: fixtureCatalogue.tiers,
  numRuns: 50
})
