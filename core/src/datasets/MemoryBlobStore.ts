/**
 * The blob port in memory: for tests, and the default of a platform given no blob store (Http.ts). Bodies are copied on the way in and on the way out, so a
 * caller that reuses or mutates its buffer cannot change what is stored (as with disk and S3).
 * Each operation is one `Ref` step, so a `deletePrefix` counts exactly what it removed.
 * `putStream` collects the body (copying each chunk, failing as soon as it passes `maxBytes`) and
 * stores it in one step at the end; `getStream` answers copies of 64 KiB slices of the stored body,
 * each made when pulled.
 */
import { Effect, Layer, Ref, Stream } from "effect"
import { sha256, toHex } from "../kernel/Sha256.ts"
import { type Blob, BlobStore, BlobTooLarge } from "./BlobStore.ts"

/** The chunks `getStream` answers, as the disk store reads them. */
const STREAM_CHUNK_BYTES = 64 * 1024

const copy = (blob: Blob): Blob => ({ body: new Uint8Array(blob.body), contentType: blob.contentType })

/** Lexicographic order by UTF-16 code units, as `Array.prototype.sort` without a comparator. */
const sortedKeys = (map: ReadonlyMap<string, Blob>, prefix: string): Array<string> =>
  Array.from(map.keys()).filter((key) => key.startsWith(prefix)).sort()

export const makeBlobStoreMemory: Effect.Effect<BlobStore["Service"]> = Effect.gen(function*() {
  const blobs = yield* Ref.make<ReadonlyMap<string, Blob>>(new Map())

  return BlobStore.of({
    put: (key, blob) =>
      Ref.update(blobs, (map) => new Map(map).set(key, copy(blob))),
    putStream: (key, body, { contentType, maxBytes }) =>
      Effect.suspend(() => {
        const chunks: Array<Uint8Array> = []
        let bytes = 0
        return Stream.runForEach(body, (chunk) => {
          bytes += chunk.byteLength
          if (bytes > maxBytes) return Effect.fail(new BlobTooLarge({ maxBytes }))
          chunks.push(new Uint8Array(chunk))
          return Effect.void
        }).pipe(Effect.andThen(Effect.suspend(() => {
          const whole = new Uint8Array(bytes)
          let offset = 0
          for (const chunk of chunks) {
            whole.set(chunk, offset)
            offset += chunk.byteLength
          }
          return Ref.update(blobs, (map) => new Map(map).set(key, { body: whole, contentType })).pipe(
            Effect.as({ bytes, sha256: toHex(sha256(whole)) })
          )
        })))
      }),
    get: (key) =>
      Ref.get(blobs).pipe(Effect.map((map) => {
        const blob = map.get(key)
        return blob === undefined ? undefined : copy(blob)
      })),
    getStream: (key) =>
      Ref.get(blobs).pipe(Effect.map((map) => {
        const blob = map.get(key)
        if (blob === undefined) return undefined
        const { body } = blob
        // One slice a pull (chunkSize 1): a larger batch would copy much of the blob at once.
        const slices = function*() {
          for (let at = 0; at < body.byteLength; at += STREAM_CHUNK_BYTES) yield body.slice(at, at + STREAM_CHUNK_BYTES)
        }
        return { contentType: blob.contentType, bytes: body.byteLength, body: Stream.suspend(() => Stream.fromIterable(slices(), { chunkSize: 1 })) }
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
