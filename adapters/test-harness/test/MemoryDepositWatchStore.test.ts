/** The deposit watch store contract on the in-memory store. */
import { depositWatchStoreContract } from "@model-platform/contract-kit/DepositWatchContract"
import { DepositWatchStoreMemory } from "@model-platform/memory-stores/MemoryDepositWatchStore"

depositWatchStoreContract("DepositWatchStoreMemory", DepositWatchStoreMemory)
