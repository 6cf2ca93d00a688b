/** Statements close month over month on the memory stores (StatementsProperty.ts). */
import { Layer } from "effect"
import { LedgerStoreMemory } from "@model-platform/memory-stores/MemoryLedgerStore"
import { UsageStoreMemory } from "@model-platform/memory-stores/MemoryUsageStore"
import { statementsProperty } from "@model-platform/contract-kit/StatementsProperty"

statementsProperty("statements on memory stores", Layer.mergeAll(LedgerStoreMemory, UsageStoreMemory), 100)
