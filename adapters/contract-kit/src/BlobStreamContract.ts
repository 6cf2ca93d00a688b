/**
 * The blob contract's part on `getStream` (run by blobStoreContract, BlobContract.ts): size,
 * content type and every byte; a 64 MiB blob (written from a body made as it is pulled, so the
 * test holds none of it) read back in chunks of at most MAX_BLOB_CHUNK_BYTES while what the
 * process holds alive stays far below the blob's size (LiveMemory.ts); a body read in part.
 */
import { assert, describe, type Vitest } from "@effect/vitest"
import { Effect, Stream } from "effect"
import { createHash } from "node:crypto"
import { type Blob, BlobStore, type BlobStream, MAX_BLOB_CHUNK_BYTES } from "@model-platform/core/datasets"
import { sha256, toHex } from "@model-platform/core/kernel"
import { allBytes, freshPrefix, generated, octets, patternBytes, text } from "./BlobFixtures.ts"
import { canCollect, liveBytes } from "./LiveMemory.ts"

interface StreamRead {
  readonly bytes: number
  readonly chunks: number
  readonly largestChunk: number
  readonly sha256: string
  /** The most the process held alive above what it held before reading, sampled every 4 MiB. */
  readonly peakLiveGrowth: number
}

/** Reads a `getStream` body to its end, measuring its chunks and what reading it holds alive. */
export const readBlobStream = (blob: BlobStream, measureMemory = false) =>
  Effect.gen(function*() {
    const hash = createHash("sha256")
    const before = measureMemory ? liveBytes() : 0
    let bytes = 0
    let chunks = 0
    let largestChunk = 0
    let peakLiveGrowth = 0
    let sampledAt = 0
    yield* Stream.runForEach(blob.body, (chunk) =>
      Effect.sync(() => {
        hash.update(chunk)
        bytes += chunk.byteLength
        chunks += 1
        largestChunk = Math.max(largestChunk, chunk.byteLength)
        if (measureMemory && bytes - sampledAt >= 4 * 1024 * 1024) {
          sampledAt = bytes
          peakLiveGrowth = Math.max(peakLiveGrowth, liveBytes() - before)
        }
      }))
    return { bytes, chunks, largestChunk, sha256: hash.digest("hex"), peakLiveGrowth } satisfies StreamRead
  })

export const blobStreamTests = (it: Vitest.MethodsNonLive<BlobStore>) =>
  describe("BlobStore.getStream", () => {
    it.effect("getStream answers the size, the content type and every byte in order; a missing key is undefined", () =>
      Effect.gen(function*() {
        const store = yield* BlobStore
        const prefix = yield* freshPrefix
        assert.isUndefined(yield* store.getStream(`${prefix}never-written`))
        yield* store.put(`${prefix}a/b`, text("x"))
        assert.isUndefined(yield* store.getStream(`${prefix}a`), "a key's parent 'folder' is not a blob")
        const blobs: ReadonlyArray<Blob> = [
          { body: allBytes(), contentType: "application/octet-stream" },
          { body: new Uint8Array(0), contentType: "application/json" },
          { body: patternBytes(300_007, 3), contentType: "audio/wav; rate=16000" }
        ]
        for (const [i, blob] of blobs.entries()) {
          const key = `${prefix}stream-${i}.bin`
          yield* store.put(key, blob)
          const stream = yield* store.getStream(key)
          assert.isDefined(stream, key)
          assert.strictEqual(stream!.contentType, blob.contentType, `${key}: content type`)
          assert.strictEqual(stream!.bytes, blob.body.byteLength, `${key}: size`)
          const chunks = yield* Stream.runCollect(stream!.body)
          const whole = new Uint8Array(chunks.reduce((n, c) => n + c.byteLength, 0))
          chunks.reduce((at, c) => (whole.set(c, at), at + c.byteLength), 0)
          assert.deepStrictEqual(Array.from(whole), Array.from(blob.body), `${key}: bytes`)
          // A body can be read more than once.
          assert.strictEqual((yield* readBlobStream(stream!)).sha256, toHex(sha256(blob.body)), `${key}: read again`)
        }
      }))

    it.effect("getStream of a 64 MiB blob reads it in bounded chunks, holding far less than the blob alive", () =>
      Effect.gen(function*() {
        const store = yield* BlobStore
        const key = `${yield* freshPrefix}large.bin`
        const size = 64 * 1024 * 1024
        const written = yield* store.putStream(key, generated(64, 1024 * 1024), { contentType: "video/mp4", maxBytes: 1 << 30 })
        assert.strictEqual(written.bytes, size)
        const stream = yield* store.getStream(key)
        assert.strictEqual(stream?.bytes, size)
        assert.strictEqual(stream?.contentType, "video/mp4")
        const read = yield* readBlobStream(stream!, true)
        assert.strictEqual(read.bytes, size, "every byte")
        assert.strictEqual(read.sha256, written.sha256, "the bytes written")
        assert.isAtMost(read.largestChunk, MAX_BLOB_CHUNK_BYTES, "no chunk above the bound")
        assert.isAtLeast(read.chunks, size / MAX_BLOB_CHUNK_BYTES, "read in many chunks")
        // A store that read the blob whole would hold 64 MiB alive (the memory store holds it already,
        // before reading: its slices are made one at a time).
        if (canCollect) assert.isBelow(read.peakLiveGrowth, size / 4, `live memory grew by ${read.peakLiveGrowth} bytes while reading`)
        yield* store.delete(key)
      }), 180_000)

    it.effect("a getStream body read only in part stops there; the blob can be read again and deleted", () =>
      Effect.gen(function*() {
        const store = yield* BlobStore
        const key = `${yield* freshPrefix}partial.bin`
        const body = patternBytes(3 * 1024 * 1024, 5)
        yield* store.put(key, octets(body))
        const stream = (yield* store.getStream(key))!
        const first = yield* Stream.runCollect(Stream.take(stream.body, 1))
        assert.strictEqual(first.length, 1)
        assert.deepStrictEqual(Array.from(first[0]!.subarray(0, 16)), Array.from(body.subarray(0, 16)), "the first bytes")
        assert.strictEqual((yield* readBlobStream((yield* store.getStream(key))!)).sha256, toHex(sha256(body)), "read again, whole")
        yield* store.delete(key)
        assert.isUndefined(yield* store.getStream(key))
      }))
  })
