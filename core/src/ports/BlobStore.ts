/**
 * Port: blobs (dataset items, fieldwork takes, statement exports). Keys are slash-separated paths
 * such as `datasets/ds_1/items/it_1.wav`. Store failures are defects.
 */
import { Context, type Effect } from "effect"

export interface Blob {
  readonly body: Uint8Array
  readonly contentType: string
}

export class BlobStore extends Context.Service<BlobStore, {
  /** Writes (or replaces) the blob at `key`. */
  readonly put: (key: string, blob: Blob) => Effect.Effect<void>
  readonly get: (key: string) => Effect.Effect<Blob | undefined>
  /** Deleting a missing key is not an error. */
  readonly delete: (key: string) => Effect.Effect<void>
  /** Every key starting with `prefix`, in lexicographic order. */
  readonly list: (prefix: string) => Effect.Effect<ReadonlyArray<string>>
  /** Deletes every key starting with `prefix`; returns how many were deleted. */
  readonly deletePrefix: (prefix: string) => Effect.Effect<number>
}>()("@model-platform/core/ports/BlobStore") {}
