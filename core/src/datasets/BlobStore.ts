/**
 * Port: blobs (dataset items, fieldwork takes, statement exports). Keys are slash-separated paths
 * such as `datasets/ds_1/items/it_1.wav`. Store failures are defects.
 */
import { Context, type Effect, Schema, Stream } from "effect"

export interface Blob {
  readonly body: Uint8Array
  readonly contentType: string
}

/** A streamed body went past `maxBytes`: nothing new is stored. */
export class BlobTooLarge extends Schema.TaggedError<BlobTooLarge>()("BlobTooLarge", {
  maxBytes: Schema.Number
}) {}

export interface PutStreamOptions {
  readonly contentType: string
  /** The most bytes the body may have; one more fails the write with BlobTooLarge. */
  readonly maxBytes: number
}

/**
 * The most bytes one chunk of a `getStream` body holds: a reader holds a chunk at a time, so this
 * bounds what a download costs in memory, whatever the blob's size.
 */
export const MAX_BLOB_CHUNK_BYTES = 1024 * 1024

/** A blob to be read as a stream: its size and content type, and its bytes as they are pulled. */
export interface BlobStream {
  readonly contentType: string
  /** The body's size in bytes. */
  readonly bytes: number
  /**
   * The body in chunks of at most MAX_BLOB_CHUNK_BYTES, each read from the store when pulled
   * (nothing is read until the stream runs; stopping early stops reading). A blob deleted or
   * replaced before its body is first pulled may end the stream with a defect, as a store failure.
   */
  readonly body: Stream.Stream<Uint8Array>
}

export interface PutStreamResult {
  readonly bytes: number
  /** Lower-case hex SHA-256 of the body. */
  readonly sha256: string
}

export class BlobStore extends Context.Service<BlobStore, {
  /** Writes (or replaces) the blob at `key`. */
  readonly put: (key: string, blob: Blob) => Effect.Effect<void>
  /**
   * Writes the blob at `key` from `body`, chunk by chunk, never holding it whole (disk: a
   * temporary file renamed into place; S3: a multipart upload, parts of PART_BYTES), and answers
   * its size and hex SHA-256. More than `maxBytes` bytes: fails with BlobTooLarge. A failing or
   * interrupted body fails with the stream's error or is interrupted (disk: the temporary file is
   * removed; S3: the multipart upload is aborted). In all three cases nothing new is stored: a
   * blob already at `key` is left as it was. Once the body has ended, storing it is not
   * interrupted.
   */
  readonly putStream: <E>(
    key: string,
    body: Stream.Stream<Uint8Array, E>,
    options: PutStreamOptions
  ) => Effect.Effect<PutStreamResult, E | BlobTooLarge>
  readonly get: (key: string) => Effect.Effect<Blob | undefined>
  /**
   * The blob at `key` to be read chunk by chunk, never held whole (disk: a file read stream; S3:
   * the body of a GetObject as it arrives): for bodies too large to hold, such as a dataset item
   * sent to a client. undefined when there is none.
   */
  readonly getStream: (key: string) => Effect.Effect<BlobStream | undefined>
  /** Deleting a missing key is not an error. */
  readonly delete: (key: string) => Effect.Effect<void>
  /** Every key starting with `prefix`, in lexicographic order. */
  readonly list: (prefix: string) => Effect.Effect<ReadonlyArray<string>>
  /** Deletes every key starting with `prefix`; returns how many were deleted. */
  readonly deletePrefix: (prefix: string) => Effect.Effect<number>
}>()("@model-platform/core/datasets/BlobStore") {}

/** `body` with every chunk above MAX_BLOB_CHUNK_BYTES split (views, not copies). */
export const boundedChunks = <E>(body: Stream.Stream<Uint8Array, E>): Stream.Stream<Uint8Array, E> =>
  Stream.flatMap(body, (chunk) => {
    if (chunk.byteLength <= MAX_BLOB_CHUNK_BYTES) return Stream.succeed(chunk)
    const parts: Array<Uint8Array> = []
    for (let at = 0; at < chunk.byteLength; at += MAX_BLOB_CHUNK_BYTES) parts.push(chunk.subarray(at, at + MAX_BLOB_CHUNK_BYTES))
    return Stream.fromIterable(parts)
  })
