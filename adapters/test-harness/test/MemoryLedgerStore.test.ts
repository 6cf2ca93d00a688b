/** The ledger store contract on the in-memory store. */
import { ledgerStoreContract } from "../src/LedgerContract.ts"
import { LedgerStoreMemory } from "../src/MemoryLedgerStore.ts"

ledgerStoreContract("LedgerStoreMemory", LedgerStoreMemory, { budgetRuns: 200 })
