/** The usage store contract on the in-memory store. */
import { usageStoreContract } from "../src/UsageContract.ts"
import { UsageStoreMemory } from "@model-platform/memory-stores/MemoryUsageStore"

usageStoreContract("UsageStoreMemory", UsageStoreMemory)
