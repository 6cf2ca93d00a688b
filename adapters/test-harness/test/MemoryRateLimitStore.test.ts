/** The rate-limit store contract on the in-memory store. */
import { rateLimitStoreContract } from "../src/RateLimitContract.ts"
import { RateLimitStoreMemory } from "../src/MemoryRateLimitStore.ts"

rateLimitStoreContract("RateLimitStoreMemory", RateLimitStoreMemory)
