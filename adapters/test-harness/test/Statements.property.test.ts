/** Statements close month over month on the memory stores (StatementsProperty.ts). */
import { Layer } from "effect"
import { LedgerStoreMemory } from "@model-platform/memory-stores/MemoryLedgerStore"
import { UsageStoreMemory } from "@model-platform/memory-stores/MemoryUsageStore"
import { statementsProperty } from "../src/StatementsProperty.ts"

statementsProperty("statements on memory stores", Layer.mergeAll(LedgerStoreMemory, UsageStoreMemory), 100)
