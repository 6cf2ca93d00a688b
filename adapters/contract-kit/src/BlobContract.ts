/**
 * The contract suite of the blob port. Every implementation (memory, local disk, S3...) runs it
 * against its own layer, in the style of Effect's KeyValueStoreTest:
 * `blobStoreContract("memory", BlobStoreMemory)` declares the tests.
 *
 * The layer is built once per suite and shared by its tests, so every test works under a fresh
 * random prefix and never assumes an empty store: suites can share a bucket or a directory that
 * earlier runs have written to.
 *
 * Order: `list` answers keys in JavaScript's default string order (UTF-16 code units). Every key
 * whose order the suite checks is ASCII, where that order is also S3's (UTF-8 bytes).
 *
 * `putStream`: each refused write (too large, failing body, interrupted) is tried on a key that
 * holds a blob, which must stay as it was, and on a fresh key, which must stay empty.
 *
 * `getStream` has its own part, BlobStreamContract.ts, run with the rest.
 */
import { assert, describe, layer, type Vitest } from "@effect/vitest"
import { Data, Deferred, Effect, Fiber, type Layer, Stream } from "effect"
import { type Blob, BlobStore, BlobTooLarge } from "@model-platform/core/datasets"
import { sha256, toHex } from "@model-platform/core/kernel"
import { allBytes, assertBlob, chunked, freshPrefix, octets, patternBytes, text } from "./BlobFixtures.ts"
import { blobStreamTests } from "./BlobStreamContract.ts"

export { chunked, patternBytes } from "./BlobFixtures.ts"

/** Store layers may start an emulator or open a directory. */
const layerOptions = { excludeTestServices: true, timeout: "60 seconds" } as const

/** More than S3's page of 1000 keys, for both listing and batched deletes. */
const MANY = 1100

// ---------------------------------------------------------------------------------------------
// fixtures

const putAll = (store: BlobStore["Service"], keys: ReadonlyArray<string>, concurrency = 16) =>
  Effect.forEach(keys, (key) => store.put(key, text(key)), { concurrency, discard: true })

const sorted = (keys: ReadonlyArray<string>): Array<string> => [...keys].sort()

/** The error a test body fails with. */
export class BodyBroke extends Data.TaggedError("BodyBroke")<{ readonly at: number }> {}

/** A key holding a blob and a fresh key, for checking that a refused write stored nothing. */
const occupiedAndFresh = (store: BlobStore["Service"]) =>
  Effect.gen(function*() {
    const prefix = yield* freshPrefix
    const previous = text("the blob that was there before", "text/x-previous")
    yield* store.put(`${prefix}occupied.bin`, previous)
    const nothingNew = Effect.gen(function*() {
      assertBlob(yield* store.get(`${prefix}occupied.bin`), previous, "the blob already there is unchanged")
      assert.isUndefined(yield* store.get(`${prefix}fresh.bin`), "nothing at the fresh key")
      assert.deepStrictEqual(yield* store.list(prefix), [`${prefix}occupied.bin`], "no other key")
    })
    return { keys: [`${prefix}occupied.bin`, `${prefix}fresh.bin`] as const, nothingNew }
  })

/**
 * Runs `putStream` on a body that emits `head`, then never ends; once the store has taken `head`
 * (a stream is pulled again only after its previous chunks were handled), runs `meanwhile`, then
 * interrupts the write.
 */
export const interruptAfter = (
  store: BlobStore["Service"],
  key: string,
  head: Stream.Stream<Uint8Array>,
  meanwhile: Effect.Effect<void> = Effect.void
) =>
  Effect.gen(function*() {
    const taken = yield* Deferred.make<void>()
    const body = head.pipe(Stream.concat(Stream.fromEffectDrain(Deferred.succeed(taken, undefined))), Stream.concat(Stream.never))
    const fiber = yield* Effect.forkChild(store.putStream(key, body, { contentType: "application/octet-stream", maxBytes: 1 << 30 }))
    yield* Deferred.await(taken)
    yield* meanwhile
    yield* Fiber.interrupt(fiber)
  })

// ---------------------------------------------------------------------------------------------
// tests

const blobTests = (it: Vitest.MethodsNonLive<BlobStore>) =>
  describe("BlobStore", () => {
    it.effect("put then get returns every byte value and the content type", () =>
      Effect.gen(function*() {
        const store = yield* BlobStore
        const key = `${yield* freshPrefix}bytes.bin`
        const blob: Blob = { body: allBytes(), contentType: "application/octet-stream" }
        yield* store.put(key, blob)
        assertBlob(yield* store.get(key), blob, "all bytes")
      }))

    it.effect("an empty body round-trips, with its content type", () =>
      Effect.gen(function*() {
        const store = yield* BlobStore
        const key = `${yield* freshPrefix}empty.json`
        const blob: Blob = { body: new Uint8Array(0), contentType: "application/json" }
        yield* store.put(key, blob)
        assertBlob(yield* store.get(key), blob, "empty body")
        assert.deepStrictEqual(yield* store.list(key), [key], "an empty blob is still listed")
      }))

    it.effect("text, a larger body and content-type parameters round-trip", () =>
      Effect.gen(function*() {
        const store = yield* BlobStore
        const prefix = yield* freshPrefix
        const small = text("héllo, wörld ✓\n", "text/csv; charset=utf-8; header=present")
        const large: Blob = {
          body: Uint8Array.from({ length: 300_000 }, (_, i) => (i * 31 + (i >> 8)) & 0xff),
          contentType: "audio/wav"
        }
        yield* store.put(`${prefix}small.csv`, small)
        yield* store.put(`${prefix}large.wav`, large)
        assertBlob(yield* store.get(`${prefix}small.csv`), small, "text")
        assertBlob(yield* store.get(`${prefix}large.wav`), large, "300 kB")
      }))

    it.effect("the store keeps its own copy of the body", () =>
      Effect.gen(function*() {
        const store = yield* BlobStore
        const key = `${yield* freshPrefix}copy.bin`
        const body = Uint8Array.of(1, 2, 3)
        yield* store.put(key, { body, contentType: "application/octet-stream" })
        body[0] = 99
        const first = yield* store.get(key)
        assert.deepStrictEqual(Array.from(first?.body ?? []), [1, 2, 3], "mutating the caller's buffer after put")
        if (first !== undefined) first.body[1] = 99
        const second = yield* store.get(key)
        assert.deepStrictEqual(Array.from(second?.body ?? []), [1, 2, 3], "mutating a returned buffer")
      }))

    it.effect("put replaces the body and the content type", () =>
      Effect.gen(function*() {
        const store = yield* BlobStore
        const key = `${yield* freshPrefix}report`
        yield* store.put(key, text("first version, which is the longer of the two", "text/plain"))
        const second: Blob = { body: Uint8Array.of(0, 1, 2), contentType: "application/pdf" }
        yield* store.put(key, second)
        assertBlob(yield* store.get(key), second, "after overwrite")
        assert.deepStrictEqual(yield* store.list(key), [key], "one key after overwrite")
      }))

    it.effect("get of a missing key is undefined", () =>
      Effect.gen(function*() {
        const store = yield* BlobStore
        const prefix = yield* freshPrefix
        assert.isUndefined(yield* store.get(`${prefix}never-written`))
        yield* store.put(`${prefix}a/b`, text("x"))
        assert.isUndefined(yield* store.get(`${prefix}a`), "a key's parent 'folder' is not a blob")
        assert.isUndefined(yield* store.get(`${prefix}a/b/c`), "nothing below a blob")
      }))

    it.effect("delete removes the blob; deleting a missing key is fine", () =>
      Effect.gen(function*() {
        const store = yield* BlobStore
        const prefix = yield* freshPrefix
        yield* store.put(`${prefix}keep`, text("keep"))
        yield* store.put(`${prefix}gone`, text("gone"))
        yield* store.delete(`${prefix}gone`)
        assert.isUndefined(yield* store.get(`${prefix}gone`))
        assert.deepStrictEqual(yield* store.list(prefix), [`${prefix}keep`])
        yield* store.delete(`${prefix}gone`)
        yield* store.delete(`${prefix}never-written`)
        yield* store.delete(`${prefix}no/such/folder/either`)
        assertBlob(yield* store.get(`${prefix}keep`), text("keep"), "the sibling stays")
      }))

    it.effect("a deleted key can be written again", () =>
      Effect.gen(function*() {
        const store = yield* BlobStore
        const key = `${yield* freshPrefix}deep/er/again.txt`
        yield* store.put(key, text("one"))
        yield* store.delete(key)
        yield* store.put(key, text("two", "text/markdown"))
        assertBlob(yield* store.get(key), text("two", "text/markdown"), "rewritten")
      }))

    it.effect("list answers the keys under a prefix, sorted, as plain string prefixes", () =>
      Effect.gen(function*() {
        const store = yield* BlobStore
        const prefix = yield* freshPrefix
        const keys = ["a/bc/1", "a/b/2", "a/b", "a/b/10", "a/b/1", "b/1", "a/a", "A/b/1", "a/b-1", "a/b/sub/deep/x"]
          .map((k) => `${prefix}${k}`)
        yield* putAll(store, keys)
        assert.deepStrictEqual(
          yield* store.list(`${prefix}a/b/`),
          [`${prefix}a/b/1`, `${prefix}a/b/10`, `${prefix}a/b/2`, `${prefix}a/b/sub/deep/x`],
          "a/b/ is a folder: a/bc and a/b-1 are siblings, not children"
        )
        assert.deepStrictEqual(
          yield* store.list(`${prefix}a/b`),
          sorted(keys.filter((k) => k.startsWith(`${prefix}a/b`))),
          "a/b (no slash) is a string prefix: a/b, a/b-1, a/b/... and a/bc/..."
        )
        assert.deepStrictEqual(yield* store.list(`${prefix}a/bc`), [`${prefix}a/bc/1`])
        assert.deepStrictEqual(yield* store.list(prefix), sorted(keys), "everything, sorted")
        assert.deepStrictEqual(yield* store.list(`${prefix}a/b/sub/`), [`${prefix}a/b/sub/deep/x`])
        assert.deepStrictEqual(yield* store.list(`${prefix}a/b/1`), [`${prefix}a/b/1`, `${prefix}a/b/10`])
        assert.deepStrictEqual(yield* store.list(`${prefix}c/`), [], "nothing there")
        assert.deepStrictEqual(yield* store.list(`${prefix}a/b/2/`), [], "below a blob, nothing")
        assert.deepStrictEqual(yield* store.list(`${prefix}zz`), [])
      }))

    it.effect(`list and deletePrefix handle more than one page of keys (${MANY})`, () =>
      Effect.gen(function*() {
        const store = yield* BlobStore
        const prefix = yield* freshPrefix
        const keys = Array.from({ length: MANY }, (_, i) => `${prefix}many/${String(i).padStart(5, "0")}`)
        // written in a shuffled order, so a sorted answer is not an accident of insertion order
        const shuffled = keys.map((k, i) => [(i * 7919) % MANY, k] as const).sort((a, b) => a[0] - b[0]).map(([, k]) => k)
        yield* putAll(store, shuffled, 32)
        yield* store.put(`${prefix}other`, text("other"))
        const listed = yield* store.list(`${prefix}many/`)
        assert.strictEqual(listed.length, MANY)
        assert.deepStrictEqual(listed, keys)
        assert.strictEqual(yield* store.deletePrefix(`${prefix}many/`), MANY)
        assert.deepStrictEqual(yield* store.list(prefix), [`${prefix}other`])
      }), 120_000)

    it.effect("deletePrefix deletes exactly the keys under the prefix and counts them", () =>
      Effect.gen(function*() {
        const store = yield* BlobStore
        const prefix = yield* freshPrefix
        const keys = ["a/b/1", "a/b/2", "a/b/deep/3", "a/bc/1", "a/b", "b/1"].map((k) => `${prefix}${k}`)
        yield* putAll(store, keys)
        assert.strictEqual(yield* store.deletePrefix(`${prefix}a/b/`), 3)
        assert.deepStrictEqual(yield* store.list(prefix), sorted([`${prefix}a/b`, `${prefix}a/bc/1`, `${prefix}b/1`]))
        assert.isUndefined(yield* store.get(`${prefix}a/b/deep/3`))
        assertBlob(yield* store.get(`${prefix}a/b`), text(`${prefix}a/b`), "the sibling a/b stays")
        assert.strictEqual(yield* store.deletePrefix(`${prefix}a/b/`), 0, "again: nothing left to delete")
        assert.strictEqual(yield* store.deletePrefix(`${prefix}nothing/`), 0)
        assert.strictEqual(yield* store.deletePrefix(`${prefix}a/b`), 2, "a string prefix: a/b and a/bc/1")
        assert.deepStrictEqual(yield* store.list(prefix), [`${prefix}b/1`])
        assert.strictEqual(yield* store.deletePrefix(prefix), 1)
        assert.deepStrictEqual(yield* store.list(prefix), [])
      }))

    it.effect("putStream writes a body given in many small chunks, replacing the blob there", () =>
      Effect.gen(function*() {
        const store = yield* BlobStore
        const prefix = yield* freshPrefix
        const body = patternBytes(100_003)
        // chunks of 997 bytes, with empty chunks between some of them
        const stream = chunked(body, 997).pipe(Stream.flatMap((chunk) =>
          chunk[0]! % 3 === 0 ? Stream.make(chunk, new Uint8Array(0)) : Stream.succeed(chunk)
        ))
        yield* store.put(`${prefix}item.wav`, text("older and shorter"))
        const result = yield* store.putStream(`${prefix}item.wav`, stream, { contentType: "audio/wav", maxBytes: 1 << 30 })
        assert.deepStrictEqual(result, { bytes: body.byteLength, sha256: toHex(sha256(body)) })
        assertBlob(yield* store.get(`${prefix}item.wav`), { body, contentType: "audio/wav" }, "streamed body")
        assert.deepStrictEqual(yield* store.list(prefix), [`${prefix}item.wav`])
      }))

    it.effect("putStream of an empty body stores an empty blob", () =>
      Effect.gen(function*() {
        const store = yield* BlobStore
        const key = `${yield* freshPrefix}empty.txt`
        const result = yield* store.putStream(key, Stream.empty, { contentType: "text/plain", maxBytes: 0 })
        assert.deepStrictEqual(result, {
          bytes: 0,
          sha256: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        })
        assertBlob(yield* store.get(key), { body: new Uint8Array(0), contentType: "text/plain" }, "empty")
      }))

    it.effect("putStream of exactly maxBytes is stored; one byte more fails with BlobTooLarge and stores nothing", () =>
      Effect.gen(function*() {
        const store = yield* BlobStore
        const prefix = yield* freshPrefix
        const exact = patternBytes(10_000, 1)
        const fits = yield* store.putStream(`${prefix}exact.bin`, chunked(exact, 1000), { contentType: "application/octet-stream", maxBytes: 10_000 })
        assert.strictEqual(fits.bytes, 10_000)
        assertBlob(yield* store.get(`${prefix}exact.bin`), octets(exact), "exactly maxBytes")

        const { keys, nothingNew } = yield* occupiedAndFresh(store)
        for (const key of keys) {
          // the body must not be read past the chunk that goes over
          const body = chunked(patternBytes(10_001), 1000).pipe(Stream.concat(Stream.fail(new BodyBroke({ at: 10_001 }))))
          const error = yield* Effect.flip(store.putStream(key, body, { contentType: "application/octet-stream", maxBytes: 10_000 }))
          assert.instanceOf(error, BlobTooLarge, key)
          assert.strictEqual((error as BlobTooLarge).maxBytes, 10_000)
        }
        yield* nothingNew
      }))

    it.effect("putStream of a body that fails halfway fails with that error and stores nothing", () =>
      Effect.gen(function*() {
        const store = yield* BlobStore
        const { keys, nothingNew } = yield* occupiedAndFresh(store)
        for (const key of keys) {
          const broke = new BodyBroke({ at: 5000 })
          const body = chunked(patternBytes(5000), 512).pipe(Stream.concat(Stream.fail(broke)))
          const error = yield* Effect.flip(store.putStream(key, body, { contentType: "application/octet-stream", maxBytes: 1 << 30 }))
          assert.strictEqual(error, broke, key)
        }
        yield* nothingNew
      }))

    it.effect("an interrupted putStream stores nothing", () =>
      Effect.gen(function*() {
        const store = yield* BlobStore
        const { keys, nothingNew } = yield* occupiedAndFresh(store)
        for (const key of keys) yield* interruptAfter(store, key, chunked(patternBytes(5000), 512))
        yield* nothingNew
      }))

    it.effect("putStream of a body over one S3 part (11 MiB in 64 KiB chunks) round-trips", () =>
      Effect.gen(function*() {
        const store = yield* BlobStore
        const key = `${yield* freshPrefix}large.bin`
        const body = patternBytes(11 * 1024 * 1024, 7)
        const result = yield* store.putStream(key, chunked(body, 64 * 1024), { contentType: "application/x-large", maxBytes: 1 << 30 })
        assert.deepStrictEqual(result, { bytes: body.byteLength, sha256: toHex(sha256(body)) })
        const got = yield* store.get(key)
        assert.strictEqual(got?.contentType, "application/x-large")
        assert.strictEqual(got?.body.byteLength, body.byteLength)
        assert.strictEqual(toHex(sha256(got!.body)), result.sha256, "the stored bytes")
      }), 120_000)

    it.effect("keys with spaces, punctuation and unicode round-trip and list", () =>
      Effect.gen(function*() {
        const store = yield* BlobStore
        const prefix = yield* freshPrefix
        const names = [
          "with space/file name (1).txt",
          "naïve/Ünïcødé ß.txt",
          "日本語/ファイル.wav",
          "emoji/🎙️ take 1.wav",
          "punctuation/a+b=c&d;e,f'g!h~i.txt",
          "percent/100% done #1 @home $5.txt"
        ]
        const keys = names.map((n) => `${prefix}${n}`)
        yield* Effect.forEach(keys, (key) => store.put(key, text(key)), { discard: true })
        for (const key of keys) assertBlob(yield* store.get(key), text(key), key)
        assert.sameMembers([...(yield* store.list(prefix))], keys)
        assert.deepStrictEqual(yield* store.list(`${prefix}with space/`), [`${prefix}with space/file name (1).txt`])
        assert.deepStrictEqual(yield* store.list(`${prefix}日本語/`), [`${prefix}日本語/ファイル.wav`])
        yield* store.delete(`${prefix}naïve/Ünïcødé ß.txt`)
        assert.isUndefined(yield* store.get(`${prefix}naïve/Ünïcødé ß.txt`))
        assert.strictEqual(yield* store.deletePrefix(prefix), names.length - 1)
        assert.deepStrictEqual(yield* store.list(prefix), [])
      }))
  })

// ---------------------------------------------------------------------------------------------
// suite

export const blobStoreContract = <E>(name: string, storeLayer: Layer.Layer<BlobStore, E>): void =>
  layer(storeLayer, layerOptions)(name, (it) => {
    blobTests(it)
    blobStreamTests(it)
  })
