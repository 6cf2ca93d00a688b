/**
 * The blob port in memory: for tests, and the default of a platform given no blob store (Http.ts). Bodies are copied on the way in and on the way out, so a
 * caller that reuses or mutates its buffer cannot change what is stored (as with disk and S3).
 * Each operation is one `Ref` step, so a `deletePrefix` counts exactly what it removed.
 */
import { Effect, Layer, Ref } from "effect"
import { type Blob, BlobStore } from "./BlobStore.ts"

const copy = (blob: Blob): Blob => ({ body: new Uint8Array(blob.body), contentType: blob.contentType })

/** Lexicographic order by UTF-16 code units, as `Array.prototype.sort` without a comparator. */
const sortedKeys = (map: ReadonlyMap<string, Blob>, prefix: string): Array<string> =>
  Array.from(map.keys()).filter((key) => key.startsWith(prefix)).sort()

export const makeBlobStoreMemory: Effect.Effect<BlobStore["Service"]> = Effect.gen(function*() {
  const blobs = yield* Ref.make<ReadonlyMap<string, Blob>>(new Map())

  return BlobStore.of({
    put: (key, blob) =>
      Ref.update(blobs, (map) => new Map(map).set(key, copy(blob))),
    get: (key) =>
      Ref.get(blobs).pipe(Effect.map((map) => {
        const blob = map.get(key)
        return blob === undefined ? undefined : copy(blob)
      })),
    delete: (key) =>
      Ref.update(blobs, (map) => {
        if (!map.has(key)) return map
        const next = new Map(map)
        next.delete(key)
        return next
      }),
    list: (prefix) => Ref.get(blobs).pipe(Effect.map((map) => sortedKeys(map, prefix))),
    deletePrefix: (prefix) =>
      Ref.modify(blobs, (map): readonly [number, ReadonlyMap<string, Blob>] => {
        const doomed = sortedKeys(map, prefix)
        if (doomed.length === 0) return [0, map]
        const next = new Map(map)
        for (const key of doomed) next.delete(key)
        return [doomed.length, next]
      })
  })
})

/** A fresh, empty blob store per layer build. */
export const BlobStoreMemory: Layer.Layer<BlobStore> = Layer.effect(BlobStore, makeBlobStoreMemory)
