/** The billing settings store contract on the in-memory store. */
import { billingSettingsStoreContract } from "../src/BillingSettingsContract.ts"
import { BillingSettingsStoreMemory } from "@model-platform/memory-stores/MemoryBillingSettingsStore"

billingSettingsStoreContract("BillingSettingsStoreMemory", BillingSettingsStoreMemory)
