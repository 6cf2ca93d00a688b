/** The datasets area's public entry (docs/architecture.md "Areas"). */
export * from "./BlobStore.ts"
export * from "./DatasetErrors.ts"
export * from "./Datasets.ts"
export * from "./Exports.ts"
export * from "./MemoryBlobStore.ts"
export * from "./Records.ts"
export * from "./Schemas.ts"
