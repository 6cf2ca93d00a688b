/**
 * Fixtures of the blob contract (BlobContract.ts, BlobStreamContract.ts) and of the stores' own
 * tests: fresh prefixes, bodies of known bytes, and the check that a blob is what was written.
 */
import { assert } from "@effect/vitest"
import { Effect, Stream } from "effect"
import type { Blob } from "@model-platform/core/datasets"

/** A fresh prefix per test: `contract/<uuid>/`. */
export const freshPrefix = Effect.sync(() => `contract/${crypto.randomUUID()}/`)

export const text = (body: string, contentType = "text/plain; charset=utf-8"): Blob => ({
  body: new TextEncoder().encode(body),
  contentType
})

/** Every byte value once, in order: catches text decoding, NUL handling and chunk framing. */
export const allBytes = (): Uint8Array => Uint8Array.from({ length: 256 }, (_, i) => i)

export const assertBlob = (actual: Blob | undefined, expected: Blob, what: string) => {
  assert.isDefined(actual, `${what}: expected a blob, got undefined`)
  assert.strictEqual(actual?.contentType, expected.contentType, `${what}: content type`)
  assert.instanceOf(actual?.body, Uint8Array, `${what}: body is a Uint8Array`)
  assert.deepStrictEqual(Array.from(actual?.body ?? []), Array.from(expected.body), `${what}: body bytes`)
}

/** `length` bytes of a pattern that does not repeat every 256 bytes. */
export const patternBytes = (length: number, seed = 0): Uint8Array => {
  const bytes = new Uint8Array(length)
  for (let i = 0; i < length; i++) bytes[i] = (i * 31 + (i >> 8) + seed) & 0xff
  return bytes
}

/** `body` as a stream of `size`-byte chunks (the last one shorter). */
export const chunked = (body: Uint8Array, size: number): Stream.Stream<Uint8Array> =>
  Stream.fromIterable(Array.from({ length: Math.ceil(body.byteLength / size) }, (_, i) => body.subarray(i * size, (i + 1) * size)))

/**
 * `chunks` chunks of `size` bytes of patternBytes (seeded by their index), each made when pulled:
 * a large body the test itself never holds.
 */
export const generated = (chunks: number, size: number): Stream.Stream<Uint8Array> =>
  Stream.suspend(() =>
    Stream.fromIterable(
      (function*() {
        for (let i = 0; i < chunks; i++) yield patternBytes(size, i)
      })(),
      { chunkSize: 1 }
    )
  )

export const octets = (body: Uint8Array): Blob => ({ body, contentType: "application/octet-stream" })
