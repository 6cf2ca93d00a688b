/**
 * Datasets: collections of items (audio, images, video or text) from fieldwork, voices or uploads.
 * The spec shows no bodies; these are ours (docs/resources.md). JSON shapes only; the files live
 * in blob storage.
 */
import { Schema } from "effect"
import { Text } from "../kernel/Text.ts"
import { Timestamp } from "../kernel/Time.ts"

export const DatasetSourceValues = ["fieldwork", "voices", "upload"] as const
export const DatasetSource = Schema.Literals(DatasetSourceValues)
export type DatasetSource = typeof DatasetSource.Type

export const DatasetKindValues = ["audio", "image", "video", "text"] as const
export const DatasetKind = Schema.Literals(DatasetKindValues)
export type DatasetKind = typeof DatasetKind.Type

export const DatasetName = Text(1, 128)

/** A dataset with its item count and total size in bytes. */
export const Dataset = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  source: DatasetSource,
  kind: DatasetKind,
  /** The fieldwork project feeding it; null for an upload dataset. */
  project_id: Schema.NullOr(Schema.String),
  items: Schema.Int,
  bytes: Schema.Int,
  created_at: Timestamp,
  updated_at: Timestamp
})
export type Dataset = typeof Dataset.Type

export const DatasetList = Schema.Struct({ data: Schema.Array(Dataset) })
export type DatasetList = typeof DatasetList.Type

/**
 * POST /datasets. A dataset made here is an upload dataset; fieldwork and voices make theirs
 * themselves, so source is not part of the body.
 */
export const CreateDataset = Schema.Struct({
  name: DatasetName,
  kind: DatasetKind
})
export type CreateDataset = typeof CreateDataset.Type

/** DELETE /datasets/{id}: the dataset, its files and its version exports are gone. */
export const DatasetDeleted = Schema.Struct({
  id: Schema.String,
  deleted: Schema.Literal(true)
})
export type DatasetDeleted = typeof DatasetDeleted.Type

/** An item's review by the dataset's owner (a fieldwork participant sees it on their takes). */
export const ItemStatus = Schema.Literals(["pending_review", "accepted", "rejected"])
export type ItemStatus = typeof ItemStatus.Type

/** An item of a dataset: an uploaded file or a fieldwork take. */
export const DatasetItem = Schema.Struct({
  id: Schema.String,
  /** The uploaded file's name; a take's is `<prompt id>.wav`. */
  name: Schema.String,
  content_type: Schema.String,
  bytes: Schema.Int,
  sha256: Schema.String,
  duration_ms: Schema.NullOr(Schema.Int),
  /** A take's participant and prompt; null for an upload. */
  participant_id: Schema.NullOr(Schema.String),
  prompt_id: Schema.NullOr(Schema.String),
  status: ItemStatus,
  review_note: Schema.NullOr(Schema.String),
  reviewed_at: Schema.NullOr(Timestamp),
  created_at: Timestamp
})
export type DatasetItem = typeof DatasetItem.Type

export const DatasetItemList = Schema.Struct({ data: Schema.Array(DatasetItem) })
export type DatasetItemList = typeof DatasetItemList.Type

/** POST /datasets/{id}/items/{item_id}/review. */
export const ReviewItem = Schema.Struct({
  status: Schema.Literals(["accepted", "rejected"]),
  note: Schema.optionalKey(Text(0, 500))
})
export type ReviewItem = typeof ReviewItem.Type

/** A version export: the items frozen at created_at, listed in its manifest. */
export const DatasetExport = Schema.Struct({
  id: Schema.String,
  dataset_id: Schema.String,
  items: Schema.Int,
  bytes: Schema.Int,
  created_at: Timestamp
})
export type DatasetExport = typeof DatasetExport.Type

export const DatasetExportList = Schema.Struct({ data: Schema.Array(DatasetExport) })

/** GET /datasets/{id}/exports/{export_id}: the export and its manifest. */
export const DatasetExportManifest = Schema.Struct({
  ...DatasetExport.fields,
  manifest: Schema.Array(Schema.Struct({
    ...DatasetItem.fields,
    /**
     * Still in the dataset: false only between a withdrawn take's deletion and its manifest's
     * rewrite (core/src/datasets/Exports.ts), which then takes the line out.
     */
    available: Schema.Boolean
  }))
})
export type DatasetExportManifest = typeof DatasetExportManifest.Type
