/** The ledger store contract on the in-memory store. */
import { ledgerStoreContract } from "@model-platform/contract-kit/LedgerContract"
import { LedgerStoreMemory } from "@model-platform/memory-stores/MemoryLedgerStore"

ledgerStoreContract("LedgerStoreMemory", LedgerStoreMemory, { budgetRuns: 200 })
