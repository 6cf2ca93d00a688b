/** The billing settings store contract on the in-memory store. */
import { billingSettingsStoreContract } from "@model-platform/contract-kit/BillingSettingsContract"
import { BillingSettingsStoreMemory } from "@model-platform/memory-stores/MemoryBillingSettingsStore"

billingSettingsStoreContract("BillingSettingsStoreMemory", BillingSettingsStoreMemory)
