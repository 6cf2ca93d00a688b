/** The alert store contract on the in-memory store. */
import { alertStoreContract } from "../src/AlertContract.ts"
import { AlertStoreMemory } from "../src/MemoryAlertStore.ts"

alertStoreContract("AlertStoreMemory", AlertStoreMemory)
