/**
 * Datasets: collections of items (audio, images, video or text) from fieldwork, voices or uploads.
 * The spec shows no bodies; these are ours (docs/resources.md). JSON shapes only; the files live
 * in blob storage.
 */
import { Schema } from "effect"
import { Timestamp } from "../Time.ts"

export const DatasetSourceValues = ["fieldwork", "voices", "upload"] as const
export const DatasetSource = Schema.Literals(DatasetSourceValues)
export type DatasetSource = typeof DatasetSource.Type

export const DatasetKindValues = ["audio", "image", "video", "text"] as const
export const DatasetKind = Schema.Literals(DatasetKindValues)
export type DatasetKind = typeof DatasetKind.Type

export const DatasetName = Schema.String.check(
  Schema.isBetweenLength(1, 128, { expected: "a name of 1 to 128 characters" })
)

/** A dataset with its item count and total size in bytes. */
export const Dataset = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  source: DatasetSource,
  kind: DatasetKind,
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
