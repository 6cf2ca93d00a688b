/** Fieldwork under any interleaving (FieldworkProperty.ts, WithdrawalExportProperty.ts), on the memory stores. */
import { BlobStoreMemory } from "@model-platform/core/datasets"
import { Layer } from "effect"
import { fieldworkProperty } from "../src/FieldworkProperty.ts"
import { DocumentStoresMemory } from "@model-platform/memory-stores/MemoryDocuments"
import { withdrawalExportProperty } from "../src/WithdrawalExportProperty.ts"

fieldworkProperty("memory", Layer.mergeAll(DocumentStoresMemory, BlobStoreMemory), 200)

withdrawalExportProperty("memory", Layer.mergeAll(DocumentStoresMemory, BlobStoreMemory), 200)
