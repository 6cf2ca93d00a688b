/**
 * The stack's blob store (S3BlobStore.ts) with its module and the S3 client imported at the first
 * blob operation rather than at start: only datasets and fieldwork use it, and a cold start
 * compiles whatever is imported up front (docs/lambda.md "Cold start"; the bundle puts what is
 * imported lazily in chunks of its own).
 */
import { BlobStore } from "@model-platform/core/datasets"
import type { S3Client } from "@aws-sdk/client-s3"
import { Effect, Layer } from "effect"

/**
 * Blobs in `bucket`, through the S3 client `makeClient` makes at the first use (by default the
 * SDK's default configuration, as the stack runs).
 */
export const BlobStoreS3Lazy = (
  bucket: string,
  makeClient: (sdk: typeof import("@aws-sdk/client-s3")) => S3Client = (sdk) => new sdk.S3Client({})
): Layer.Layer<BlobStore> => {
  let loaded: Promise<BlobStore["Service"]> | undefined
  const store = Effect.promise(() =>
    loaded ??= Promise.all([import("./S3BlobStore.ts"), import("@aws-sdk/client-s3")]).then(([s3Store, sdk]) =>
      s3Store.makeBlobStoreS3({ client: makeClient(sdk), bucket })
    )
  )
  return Layer.succeed(BlobStore, {
    put: (key, blob) => Effect.flatMap(store, (s) => s.put(key, blob)),
    putStream: (key, body, options) => Effect.flatMap(store, (s) => s.putStream(key, body, options)),
    get: (key) => Effect.flatMap(store, (s) => s.get(key)),
    getStream: (key) => Effect.flatMap(store, (s) => s.getStream(key)),
    delete: (key) => Effect.flatMap(store, (s) => s.delete(key)),
    list: (prefix) => Effect.flatMap(store, (s) => s.list(prefix)),
    deletePrefix: (prefix) => Effect.flatMap(store, (s) => s.deletePrefix(prefix))
  })
}
