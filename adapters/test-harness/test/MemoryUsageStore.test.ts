/** The usage store contract on the in-memory store. */
import { usageStoreContract } from "../src/UsageContract.ts"
import { UsageStoreMemory } from "../src/MemoryUsageStore.ts"

usageStoreContract("UsageStoreMemory", UsageStoreMemory)
