/** Group commit (core/src/kernel/Batcher.ts): what waits goes together (after a linger when asked), each gets its own result, a bad item fails alone. */
import { assert, describe, it } from "@effect/vitest"
import { Cause, Deferred, Effect, Exit, Fiber } from "effect"
import fc from "fast-check"
import { makeBatcher } from "../src/kernel/Batcher.ts"

/** A store whose writes wait for `gate` (when given) and which records every batch it was handed. */
const recordingWrite = (gate?: Deferred.Deferred<void>) => {
  const batches: Array<ReadonlyArray<number>> = []
  const write = (items: ReadonlyArray<number>) =>
    Effect.gen(function*() {
      batches.push(items)
      if (gate !== undefined) yield* Deferred.await(gate)
      if (items.includes(13)) return yield* Effect.die(new Error("13 is refused"))
      return items.map((n) => n * 10)
    })
  return { batches, write }
}

describe("Batcher", () => {
  it.effect("alone, an item is written at once in a batch of its own", () =>
    Effect.gen(function*() {
      const { batches, write } = recordingWrite()
      const batcher = makeBatcher(write, 8)
      assert.strictEqual(yield* batcher.submit(1), 10)
      assert.strictEqual(yield* batcher.submit(2), 20)
      assert.deepStrictEqual(batches, [[1], [2]])
    }))

  it.live("with a linger, an item alone waits that long, and what arrives meanwhile goes in its batch", () =>
    Effect.gen(function*() {
      const { batches, write } = recordingWrite()
      const batcher = makeBatcher(write, 8, 20)
      const first = yield* Effect.forkChild(batcher.submit(1), { startImmediately: true })
      yield* Effect.sleep(5)
      assert.deepStrictEqual(batches, [], "nothing is written during the linger")
      const second = yield* Effect.forkChild(batcher.submit(2), { startImmediately: true })
      assert.strictEqual(yield* Fiber.join(first), 10)
      assert.strictEqual(yield* Fiber.join(second), 20)
      assert.deepStrictEqual(batches, [[1, 2]])
    }))

  it.effect("items submitted while a batch is written wait and go together, at most maxBatch at a time", () =>
    Effect.gen(function*() {
      const gate = yield* Deferred.make<void>()
      const { batches, write } = recordingWrite(gate)
      const batcher = makeBatcher(write, 3)
      const first = yield* Effect.forkChild(batcher.submit(1), { startImmediately: true })
      const rest = yield* Effect.forkChild(
        Effect.all([2, 3, 4, 5, 6].map((n) => batcher.submit(n)), { concurrency: "unbounded" }),
        { startImmediately: true }
      )
      yield* Effect.yieldNow
      assert.deepStrictEqual(batches, [[1]]) // the others wait for the batch being written
      yield* Deferred.succeed(gate, undefined)
      assert.strictEqual(yield* Fiber.join(first), 10)
      assert.deepStrictEqual(yield* Fiber.join(rest), [20, 30, 40, 50, 60])
      assert.deepStrictEqual(batches, [[1], [2, 3, 4], [5, 6]])
    }))

  it.effect("a failing batch is written again item by item: the bad item fails alone", () =>
    Effect.gen(function*() {
      const gate = yield* Deferred.make<void>()
      const { batches, write } = recordingWrite(gate)
      const batcher = makeBatcher(write, 8)
      const first = yield* Effect.forkChild(batcher.submit(1), { startImmediately: true })
      const others = yield* Effect.forkChild(
        Effect.all([12, 13, 14].map((n) => Effect.exit(batcher.submit(n))), { concurrency: "unbounded" }),
        { startImmediately: true }
      )
      yield* Effect.yieldNow
      yield* Deferred.succeed(gate, undefined)
      assert.strictEqual(yield* Fiber.join(first), 10)
      const [a, b, c] = yield* Fiber.join(others)
      assert.deepStrictEqual(a, Exit.succeed(120))
      assert.isTrue(Exit.isFailure(b!) && Cause.hasDies(b.cause))
      assert.deepStrictEqual(c, Exit.succeed(140))
      assert.deepStrictEqual(batches, [[1], [12, 13, 14], [12], [13], [14]])
    }))

  it.effect("property: any items submitted in any waves each get their own result and are written once", () =>
    Effect.promise(() =>
      fc.assert(
        fc.asyncProperty(
          fc.array(fc.array(fc.integer({ min: 0, max: 1000 }).filter((n) => n !== 13), { maxLength: 20 }), { maxLength: 6 }),
          fc.integer({ min: 1, max: 10 }),
          (waves, maxBatch) =>
            Effect.runPromise(Effect.gen(function*() {
              const { batches, write } = recordingWrite()
              const batcher = makeBatcher((items: ReadonlyArray<number>) => Effect.andThen(Effect.yieldNow, write(items)), maxBatch)
              const results = yield* Effect.all(
                waves.map((wave) => Effect.all(wave.map((n) => batcher.submit(n)), { concurrency: "unbounded" })),
                { concurrency: "unbounded" }
              )
              assert.deepStrictEqual(results, waves.map((wave) => wave.map((n) => n * 10)))
              assert.deepStrictEqual(batches.flat().sort((x, y) => x - y), waves.flat().sort((x, y) => x - y))
              for (const batch of batches) assert.isTrue(batch.length >= 1 && batch.length <= maxBatch)
            }))
        ),
        { numRuns: 200 }
      )
    ))
})
