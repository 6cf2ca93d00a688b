/** The alert store contract on the in-memory store. */
import { alertStoreContract } from "@model-platform/contract-kit/AlertContract"
import { AlertStoreMemory } from "@model-platform/memory-stores/MemoryAlertStore"

alertStoreContract("AlertStoreMemory", AlertStoreMemory)
