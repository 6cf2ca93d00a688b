/** The deposit watch store contract on the in-memory store. */
import { depositWatchStoreContract } from "../src/DepositWatchContract.ts"
import { DepositWatchStoreMemory } from "../src/MemoryDepositWatchStore.ts"

depositWatchStoreContract("DepositWatchStoreMemory", DepositWatchStoreMemory)
