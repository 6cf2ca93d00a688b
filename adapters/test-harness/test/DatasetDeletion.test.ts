/** A dataset's deletion resumed after a crash at any step (DatasetDeletionProperty.ts), on the memory stores. */
import { BlobStoreMemory } from "@model-platform/core/datasets"
import { Layer } from "effect"
import { datasetDeletionProperty } from "../src/DatasetDeletionProperty.ts"
import { DocumentStoresMemory } from "@model-platform/memory-stores/MemoryDocuments"

datasetDeletionProperty("memory", Layer.mergeAll(DocumentStoresMemory, BlobStoreMemory))
