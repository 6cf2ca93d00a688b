/** The alert store contract on the in-memory store. */
import { alertStoreContract } from "../src/AlertContract.ts"
import { AlertStoreMemory } from "@model-platform/memory-stores/MemoryAlertStore"

alertStoreContract("AlertStoreMemory", AlertStoreMemory)
