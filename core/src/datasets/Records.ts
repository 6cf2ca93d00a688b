/**
 * Datasets as the platform keeps them, each a kind of the generic document store
 * (kernel/Documents.ts, `DocumentStores`): the dataset (owned by its account), its items and
 * exports (owned by the dataset), and the deletions under way (all under one owner, so a sweeper
 * lists them). An item's bytes are in the BlobStore at `blob_key`; docs/datasets.md says where.
 */
import { Schema } from "effect"
import { documentKind } from "../kernel/Documents.ts"
import { Timestamp } from "../kernel/Time.ts"
import { DatasetItem, DatasetKind, DatasetSource } from "./Schemas.ts"

export const DatasetRecord = Schema.Struct({
  id: Schema.String,
  account_id: Schema.String,
  name: Schema.String,
  source: DatasetSource,
  kind: DatasetKind,
  /** The fieldwork project feeding it, if any. */
  project_id: Schema.NullOr(Schema.String),
  /** Set when its deletion starts: from then on nothing is added and it is not shown. */
  deleting_at: Schema.NullOr(Timestamp),
  created_at: Timestamp,
  updated_at: Timestamp,
  version: Schema.Int
})
export type DatasetRecord = typeof DatasetRecord.Type

export const DatasetDocuments = documentKind("dataset", DatasetRecord, (r) => r.account_id)

/** An item as shown (Schemas.ts DatasetItem), with where its bytes are and the take's meta. */
export const ItemRecord = Schema.Struct({
  ...DatasetItem.fields,
  dataset_id: Schema.String,
  blob_key: Schema.String,
  /** What the item's source said of it, kept as given (a take: its X-Fieldwork-Meta, checked there). */
  meta: Schema.NullOr(Schema.Unknown),
  version: Schema.Int
})
export type ItemRecord = typeof ItemRecord.Type

export const ItemDocuments = documentKind("dataset_item", ItemRecord, (r) => r.dataset_id)

/** A version export: the manifest frozen at `manifest_key`. */
export const ExportRecord = Schema.Struct({
  id: Schema.String,
  dataset_id: Schema.String,
  manifest_key: Schema.String,
  items: Schema.Int,
  bytes: Schema.Int,
  created_at: Timestamp,
  version: Schema.Int
})
export type ExportRecord = typeof ExportRecord.Type

export const ExportDocuments = documentKind("dataset_export", ExportRecord, (r) => r.dataset_id)

/** Every deletion under way has one of these, kept until the last blob and record are gone. */
export const DELETIONS_OWNER = "deletions"

export const DeletionRecord = Schema.Struct({
  id: Schema.String,
  dataset_id: Schema.String,
  account_id: Schema.String,
  owner: Schema.Literal(DELETIONS_OWNER),
  created_at: Timestamp,
  version: Schema.Int
})
export type DeletionRecord = typeof DeletionRecord.Type

export const DeletionDocuments = documentKind("dataset_deletion", DeletionRecord, (r) => r.owner)
