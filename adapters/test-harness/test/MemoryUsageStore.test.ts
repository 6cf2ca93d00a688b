/** The usage store contract on the in-memory store. */
import { usageStoreContract } from "@model-platform/contract-kit/UsageContract"
import { UsageStoreMemory } from "@model-platform/memory-stores/MemoryUsageStore"

usageStoreContract("UsageStoreMemory", UsageStoreMemory)
