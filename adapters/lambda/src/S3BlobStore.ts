/**
 * The blob port on S3 (AWS SDK v3). A blob is one object: the key (after an optional `prefix`,
 * for sharing a bucket) is the object key, the content type is the object's Content-Type.
 *
 * - `list` pages through ListObjectsV2 (1000 keys a page) and answers JavaScript's string order,
 *   as the other stores do (S3 orders by UTF-8 bytes, which differs only past U+FFFF).
 * - `deletePrefix` lists, then deletes with DeleteObjects in batches of 1000 (its limit); a key
 *   S3 reports as not deleted is a defect.
 * - A missing key (NoSuchKey, 404) is `undefined` for `get`; every other failure is a defect, as
 *   the port says. Interrupting an operation aborts its HTTP request.
 */
import {
  DeleteObjectCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  type S3Client
} from "@aws-sdk/client-s3"
import { Effect, Layer } from "effect"
import { type Blob, BlobStore } from "@model-platform/core/ports/BlobStore"

export interface S3BlobStoreOptions {
  readonly client: S3Client
  readonly bucket: string
  /** Prepended to every key (e.g. `blobs/`); listing strips it again. Default: none. */
  readonly prefix?: string
}

/** DeleteObjects takes at most 1000 keys a request. */
const DELETE_BATCH = 1000

const isMissing = (error: unknown): boolean => {
  if (typeof error !== "object" || error === null) return false
  const e = error as { readonly name?: unknown; readonly $metadata?: { readonly httpStatusCode?: unknown } }
  return e.name === "NoSuchKey" || e.name === "NotFound" || e.$metadata?.httpStatusCode === 404
}

export const makeBlobStoreS3 = (options: S3BlobStoreOptions): BlobStore["Service"] => {
  const { bucket, client } = options
  const root = options.prefix ?? ""
  const objectKey = (key: string) => root + key

  const listObjects = async (prefix: string, abortSignal: AbortSignal): Promise<Array<string>> => {
    const keys: Array<string> = []
    let token: string | undefined
    do {
      const page = await client.send(
        new ListObjectsV2Command({
          Bucket: bucket,
          Prefix: objectKey(prefix),
          ...(token === undefined ? {} : { ContinuationToken: token })
        }),
        { abortSignal }
      )
      for (const object of page.Contents ?? []) {
        if (object.Key !== undefined) keys.push(object.Key.slice(root.length))
      }
      token = page.IsTruncated === true ? page.NextContinuationToken : undefined
      if (page.IsTruncated === true && token === undefined) {
        throw new Error(`S3 ListObjectsV2 on ${bucket}: a truncated page without a continuation token`)
      }
    } while (token !== undefined)
    return keys.sort()
  }

  const deleteBatch = async (keys: ReadonlyArray<string>, abortSignal: AbortSignal): Promise<number> => {
    const answer = await client.send(
      new DeleteObjectsCommand({
        Bucket: bucket,
        Delete: { Objects: keys.map((key) => ({ Key: objectKey(key) })), Quiet: true }
      }),
      { abortSignal }
    )
    const errors = answer.Errors ?? []
    if (errors.length > 0) {
      const first = errors[0]
      throw new Error(
        `S3 DeleteObjects on ${bucket}: ${errors.length} of ${keys.length} keys not deleted ` +
          `(first: ${first?.Key} ${first?.Code} ${first?.Message})`
      )
    }
    return keys.length
  }

  return BlobStore.of({
    put: (key, blob) =>
      Effect.promise((abortSignal) =>
        client.send(
          new PutObjectCommand({
            Bucket: bucket,
            Key: objectKey(key),
            Body: blob.body,
            ContentType: blob.contentType,
            ContentLength: blob.body.byteLength
          }),
          { abortSignal }
        )
      ).pipe(Effect.asVoid),

    get: (key) =>
      Effect.promise(async (abortSignal): Promise<Blob | undefined> => {
        try {
          const answer = await client.send(new GetObjectCommand({ Bucket: bucket, Key: objectKey(key) }), { abortSignal })
          const body = answer.Body === undefined ? new Uint8Array(0) : await answer.Body.transformToByteArray()
          return { body, contentType: answer.ContentType ?? "application/octet-stream" }
        } catch (error) {
          if (isMissing(error)) return undefined
          throw error
        }
      }),

    delete: (key) =>
      Effect.promise((abortSignal) =>
        client.send(new DeleteObjectCommand({ Bucket: bucket, Key: objectKey(key) }), { abortSignal })
      ).pipe(Effect.asVoid),

    list: (prefix) => Effect.promise((abortSignal) => listObjects(prefix, abortSignal)),

    deletePrefix: (prefix) =>
      Effect.promise(async (abortSignal) => {
        const keys = await listObjects(prefix, abortSignal)
        let deleted = 0
        for (let i = 0; i < keys.length; i += DELETE_BATCH) {
          deleted += await deleteBatch(keys.slice(i, i + DELETE_BATCH), abortSignal)
        }
        return deleted
      })
  })
}

/** Blobs in `bucket` (under `prefix`), through the given client. */
export const BlobStoreS3 = (options: S3BlobStoreOptions): Layer.Layer<BlobStore> =>
  Layer.succeed(BlobStore, makeBlobStoreS3(options))
