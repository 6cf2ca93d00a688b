/** The rate-limit store contract on the in-memory store. */
import { rateLimitStoreContract } from "../src/RateLimitContract.ts"
import { RateLimitStoreMemory } from "@model-platform/memory-stores/MemoryRateLimitStore"

rateLimitStoreContract("RateLimitStoreMemory", RateLimitStoreMemory)
