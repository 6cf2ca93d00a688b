/** The rate-limit store contract on the in-memory store. */
import { rateLimitStoreContract } from "@model-platform/contract-kit/RateLimitContract"
import { RateLimitStoreMemory } from "@model-platform/memory-stores/MemoryRateLimitStore"

rateLimitStoreContract("RateLimitStoreMemory", RateLimitStoreMemory)
