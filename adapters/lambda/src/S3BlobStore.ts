/**
 * The blob port on S3 (AWS SDK v3). A blob is one object: the key (after an optional `prefix`,
 * for sharing a bucket) is the object key, the content type is the object's Content-Type.
 *
 * - `list` pages through ListObjectsV2 (1000 keys a page) and answers JavaScript's string order,
 *   as the other stores do (S3 orders by UTF-8 bytes, which differs only past U+FFFF).
 * - `deletePrefix` lists, then deletes with DeleteObjects in batches of 1000 (its limit); a key
 *   S3 reports as not deleted is a defect.
 * - A missing key (NoSuchKey, 404) is `undefined` for `get` and `getStream`; every other failure
 *   is a defect, as the port says. Interrupting an operation aborts its HTTP request.
 * - `getStream` asks HeadObject for the size and content type; its body, when pulled, is a
 *   GetObject of that same version (If-Match its ETag: a blob replaced in between fails with 412,
 *   a defect) read as it arrives; ending the stream early destroys the response, and so the
 *   connection. Nothing is requested, and no connection held, for a body never run.
 * - `putStream` copies the body into one buffer of PART_BYTES (SHA-256 on the way). A body that
 *   fits in it is one PutObject; a longer one is a multipart upload (CRC32 checksums per part),
 *   each full buffer one UploadPart, the rest the last part, then CompleteMultipartUpload. On
 *   failure, interruption or `maxBytes` the upload is aborted; an abort that fails is logged,
 *   not raised (a bucket lifecycle rule for incomplete uploads is the backstop).
 */
import {
  AbortMultipartUploadCommand,
  type CompletedPart,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  type S3Client,
  UploadPartCommand
} from "@aws-sdk/client-s3"
import { Effect, Exit, Layer, Stream } from "effect"
import { createHash } from "node:crypto"
import {
  type Blob,
  BlobStore,
  type BlobStream,
  BlobTooLarge,
  boundedChunks,
  type PutStreamOptions,
  type PutStreamResult
} from "@model-platform/core/datasets"

export interface S3BlobStoreOptions {
  readonly client: S3Client
  readonly bucket: string
  /** Prepended to every key (e.g. `blobs/`); listing strips it again. Default: none. */
  readonly prefix?: string
}

/** DeleteObjects takes at most 1000 keys a request. */
const DELETE_BATCH = 1000

/** S3's smallest part but the last: 5 MiB. With at most 10,000 parts, bodies up to ~48 GiB. */
export const PART_BYTES = 5 * 1024 * 1024

/** A request that, when interrupted, is aborted and waited for (so an abort that follows comes after it). */
const settled = <A>(request: (abortSignal: AbortSignal) => Promise<A>): Effect.Effect<A> =>
  Effect.callback<A>((resume) => {
    const controller = new AbortController()
    const done = request(controller.signal).then((a) => resume(Effect.succeed(a)), (e) => resume(Effect.die(e)))
    return Effect.promise(() => {
      controller.abort()
      return done
    })
  })

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

  const putStream = <E>(
    key: string,
    body: Stream.Stream<Uint8Array, E>,
    { contentType, maxBytes }: PutStreamOptions
  ): Effect.Effect<PutStreamResult, E | BlobTooLarge> =>
    Effect.suspend(() => {
      const Key = objectKey(key)
      const hash = createHash("sha256")
      // never more than maxBytes, so a buffer filled up is always a full part
      const buffer = new Uint8Array(Math.min(PART_BYTES, Math.max(0, maxBytes)))
      let filled = 0
      let bytes = 0
      let uploadId: string | undefined
      let completed = false
      const parts: Array<CompletedPart> = []

      const uploadBuffer = Effect.gen(function*() {
        // uninterruptible: an upload that S3 created is always known, so it can be aborted
        uploadId ??= yield* Effect.uninterruptible(Effect.promise(() =>
          client.send(
            new CreateMultipartUploadCommand({ Bucket: bucket, Key, ContentType: contentType, ChecksumAlgorithm: "CRC32" })
          )
        )).pipe(Effect.map((answer) => {
          if (answer.UploadId === undefined) throw new Error(`S3 CreateMultipartUpload on ${bucket}: no upload id`)
          return answer.UploadId
        }))
        const PartNumber = parts.length + 1
        const Body = buffer.subarray(0, filled)
        const part = { Bucket: bucket, Key, UploadId: uploadId, PartNumber, Body, ContentLength: filled }
        const answer = yield* settled((abortSignal) =>
          client.send(new UploadPartCommand({ ...part, ChecksumAlgorithm: "CRC32" }), { abortSignal })
        )
        parts.push({ PartNumber, ETag: answer.ETag, ChecksumCRC32: answer.ChecksumCRC32 })
        filled = 0
      })

      const take = (chunk: Uint8Array) =>
        Effect.gen(function*() {
          if (bytes + chunk.byteLength > maxBytes) return yield* new BlobTooLarge({ maxBytes })
          bytes += chunk.byteLength
          hash.update(chunk)
          for (let offset = 0; offset < chunk.byteLength;) {
            // a full buffer is sent only once more bytes come, so the last part is never empty
            if (filled === buffer.byteLength) yield* uploadBuffer
            const n = Math.min(buffer.byteLength - filled, chunk.byteLength - offset)
            buffer.set(chunk.subarray(offset, offset + n), filled)
            filled += n
            offset += n
          }
        })

      const finish = Effect.gen(function*() {
        if (uploadId === undefined) {
          const Body = buffer.subarray(0, filled)
          yield* Effect.promise(() =>
            client.send(new PutObjectCommand({ Bucket: bucket, Key, Body, ContentType: contentType, ContentLength: filled }))
          )
        } else {
          yield* uploadBuffer
          const MultipartUpload = { Parts: parts }
          yield* Effect.promise(() =>
            client.send(new CompleteMultipartUploadCommand({ Bucket: bucket, Key, UploadId: uploadId, MultipartUpload }))
          )
          completed = true
        }
        return { bytes, sha256: hash.digest("hex") }
      })

      const abort = Effect.suspend(() =>
        uploadId === undefined || completed ? Effect.void : Effect.flatten(Effect.promise(() =>
          client.send(new AbortMultipartUploadCommand({ Bucket: bucket, Key, UploadId: uploadId })).then(
            () => Effect.void,
            (error: unknown) =>
              Effect.logWarning(`S3 AbortMultipartUpload of ${Key} (${uploadId}) on ${bucket} failed: ${String(error)}`)
          )
        ))
      )

      return Stream.runForEach(body, take).pipe(
        Effect.andThen(Effect.uninterruptible(finish)),
        Effect.onExit((exit) => (Exit.isSuccess(exit) ? Effect.void : abort))
      )
    })

  return BlobStore.of({
    putStream,
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

    getStream: (key) =>
      Effect.promise(async (abortSignal): Promise<BlobStream | undefined> => {
        const Key = objectKey(key)
        let head
        try {
          head = await client.send(new HeadObjectCommand({ Bucket: bucket, Key }), { abortSignal })
        } catch (error) {
          if (isMissing(error)) return undefined
          throw error
        }
        const body = Stream.unwrap(Effect.promise(async (signal) => {
          const answer = await client.send(
            new GetObjectCommand({ Bucket: bucket, Key, ...(head.ETag === undefined ? {} : { IfMatch: head.ETag }) }),
            { abortSignal: signal }
          )
          // On Node the body is the HTTP response (an IncomingMessage): async iterable, and
          // destroyed by the iterator's return() when the stream ends early.
          const chunks = answer.Body as AsyncIterable<Uint8Array> | undefined
          return chunks === undefined ? Stream.empty : boundedChunks(Stream.fromAsyncIterable(chunks, (e) => e))
        })).pipe(Stream.orDie)
        return { contentType: head.ContentType ?? "application/octet-stream", bytes: head.ContentLength ?? 0, body }
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
