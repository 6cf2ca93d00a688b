/** The deposit watch store contract on the in-memory store. */
import { depositWatchStoreContract } from "../src/DepositWatchContract.ts"
import { DepositWatchStoreMemory } from "@model-platform/memory-stores/MemoryDepositWatchStore"

depositWatchStoreContract("DepositWatchStoreMemory", DepositWatchStoreMemory)
