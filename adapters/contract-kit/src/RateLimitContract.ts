/**
 * The contract suite of the rate-limit store port (core/src/kernel/RateLimitStore.ts). Every
 * implementation runs it against its own layer: `rateLimitStoreContract("memory", RateLimitStoreMemory)`.
 *
 * Tests work on fresh random buckets, in windows of the current time (a store may drop the
 * counters of windows long past, so tests never count in them), and never assume an empty store.
 */
import { assert, describe, layer, type Vitest } from "@effect/vitest"
import { Effect, type Layer } from "effect"
import fc from "fast-check"
import { generateId, RateLimitStore, windowStartOf } from "@model-platform/core/kernel"
import { assertDies } from "./ContractSupport.ts"

/** Store layers may open a database, which takes a few seconds on embedded Postgres. */
const layerOptions = { excludeTestServices: true, timeout: "60 seconds" } as const

const unbounded = { concurrency: "unbounded" } as const

const MINUTE = 60_000

/** The current minute's window (wall clock: the suite runs with live services). */
const thisMinute = () => windowStartOf(Date.now(), MINUTE)

const freshBucket = Effect.map(generateId("key"), (id) => `rpm:${id}`)


const oneTo = (n: number) => Array.from({ length: n }, (_, i) => i + 1)
const sorted = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)

const rateLimitTests = (it: Vitest.MethodsNonLive<RateLimitStore>) => {
  describe("hit", () => {
    it.effect("hits of one window count 1, 2, 3...", () =>
      Effect.gen(function*() {
        const store = yield* RateLimitStore
        const bucket = yield* freshBucket
        const window = thisMinute()
        const counts: Array<number> = []
        for (let i = 0; i < 5; i++) counts.push(yield* store.hit(bucket, window, MINUTE))
        assert.deepStrictEqual(counts, oneTo(5))
      }))

    it.effect("N concurrent hits of one window answer 1..N, each once", () =>
      Effect.gen(function*() {
        const store = yield* RateLimitStore
        const bucket = yield* freshBucket
        const window = thisMinute()
        const counts = yield* Effect.all(Array.from({ length: 50 }, () => store.hit(bucket, window, MINUTE)), unbounded)
        assert.deepStrictEqual(sorted(counts), oneTo(50))
        assert.strictEqual(yield* store.hit(bucket, window, MINUTE), 51)
      }))

    it.effect("buckets and windows are independent, also when hit concurrently", () =>
      Effect.gen(function*() {
        const store = yield* RateLimitStore
        const buckets = [yield* freshBucket, yield* freshBucket, `${yield* freshBucket}:ünïcödé 'x' "y" #1`]
        const now = thisMinute()
        const windows = [now, now + MINUTE]
        const cells = buckets.flatMap((bucket, b) => windows.map((window, w) => ({ bucket, window, n: 3 + 4 * b + w })))
        const hits = cells.flatMap((cell, c) => Array.from({ length: cell.n }, () => c))
        // interleave the cells' hits
        const shuffled = hits.map((c, i) => ({ c, k: (i * 7919) % hits.length })).sort((a, b) => a.k - b.k)
        const counts = yield* Effect.all(
          shuffled.map(({ c }) => Effect.map(store.hit(cells[c]!.bucket, cells[c]!.window, MINUTE), (count) => ({ c, count }))),
          unbounded
        )
        cells.forEach((cell, c) => {
          assert.deepStrictEqual(sorted(counts.filter((x) => x.c === c).map((x) => x.count)), oneTo(cell.n), cell.bucket)
        })
        // A bucket that is a prefix of another shares nothing with it.
        const prefix = buckets[0]!.slice(0, -1)
        assert.strictEqual(yield* store.hit(prefix, now, MINUTE), 1)
      }))

    it.effect("windows of other lengths: a second's window and an hour's", () =>
      Effect.gen(function*() {
        const store = yield* RateLimitStore
        const bucket = yield* freshBucket
        const second = windowStartOf(Date.now(), 1_000)
        assert.strictEqual(yield* store.hit(bucket, second, 1_000), 1)
        assert.strictEqual(yield* store.hit(bucket, second + 1_000, 1_000), 1)
        assert.strictEqual(yield* store.hit(bucket, second, 1_000), 2)
        const hourBucket = yield* freshBucket
        const hour = windowStartOf(Date.now(), 3_600_000)
        assert.strictEqual(yield* store.hit(hourBucket, hour, 3_600_000), 1)
        assert.strictEqual(yield* store.hit(hourBucket, hour, 3_600_000), 2)
      }))

    it.effect("a hit that breaks the rules is a defect", () =>
      Effect.gen(function*() {
        const store = yield* RateLimitStore
        const bucket = yield* freshBucket
        const window = thisMinute()
        yield* assertDies(store.hit("", window, MINUTE), "empty bucket")
        yield* assertDies(store.hit(bucket, window + 1, MINUTE), "window not aligned")
        yield* assertDies(store.hit(bucket, window, 0), "zero window")
        yield* assertDies(store.hit(bucket, window, 1.5), "fractional window")
        yield* assertDies(store.hit(bucket, -MINUTE, MINUTE), "negative start")
        assert.strictEqual(yield* store.hit(bucket, window, MINUTE), 1)
      }))

    it.effect("property: any sequence of hits over a few buckets and windows counts as a model does", () =>
      Effect.gen(function*() {
        const services = yield* Effect.context<RateLimitStore>()
        const run = Effect.runPromiseWith(services)
        yield* Effect.promise(() =>
          fc.assert(
            fc.asyncProperty(
              fc.array(fc.record({ bucket: fc.nat({ max: 2 }), window: fc.nat({ max: 2 }) }), { maxLength: 30 }),
              fc.boolean(),
              (hits, concurrent) =>
                run(Effect.gen(function*() {
                  const store = yield* RateLimitStore
                  const buckets = [yield* freshBucket, yield* freshBucket, yield* freshBucket]
                  const now = thisMinute()
                  const key = (h: { bucket: number; window: number }) => `${h.bucket}/${h.window}`
                  const counts = yield* Effect.forEach(
                    hits,
                    (h) => Effect.map(store.hit(buckets[h.bucket]!, now + h.window * MINUTE, MINUTE), (count) => ({ h, count })),
                    concurrent ? unbounded : {}
                  )
                  const model = new Map<string, Array<number>>()
                  for (const { h, count } of counts) model.set(key(h), [...(model.get(key(h)) ?? []), count])
                  for (const [, got] of model) {
                    assert.deepStrictEqual(concurrent ? sorted(got) : got, oneTo(got.length))
                  }
                }))
            ),
            { numRuns: 25 }
          )
        )
      }), 120_000)
  })
}

/** Declares the rate-limit store contract on `storeLayer` (built once for the suite). */
export const rateLimitStoreContract = <E>(name: string, storeLayer: Layer.Layer<RateLimitStore, E>): void =>
  layer(storeLayer, layerOptions)(name, rateLimitTests)
