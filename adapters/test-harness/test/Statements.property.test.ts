/** Statements close month over month on the memory stores (StatementsProperty.ts). */
import { Layer } from "effect"
import { LedgerStoreMemory } from "../src/MemoryLedgerStore.ts"
import { UsageStoreMemory } from "../src/MemoryUsageStore.ts"
import { statementsProperty } from "../src/StatementsProperty.ts"

statementsProperty("statements on memory stores", Layer.mergeAll(LedgerStoreMemory, UsageStoreMemory), 100)
