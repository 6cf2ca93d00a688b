/** Fieldwork under any interleaving (FieldworkProperty.ts), on the memory stores. */
import { BlobStoreMemory } from "@model-platform/core/ports/MemoryBlobStore"
import { Layer } from "effect"
import { fieldworkProperty } from "../src/FieldworkProperty.ts"
import { DocumentStoresMemory } from "../src/MemoryDocuments.ts"

fieldworkProperty("memory", Layer.mergeAll(DocumentStoresMemory, BlobStoreMemory), 200)
