/** The blob contract on the in-memory store. */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { BlobStore, BlobStoreMemory } from "@model-platform/core/datasets"
import { blobStoreContract } from "@model-platform/contract-kit/BlobContract"

blobStoreContract("BlobStoreMemory", BlobStoreMemory)

describe("BlobStoreMemory", () => {
  it.effect("each layer build starts empty", () =>
    Effect.gen(function*() {
      const store = yield* BlobStore
      assert.deepStrictEqual(yield* store.list(""), [])
      assert.strictEqual(yield* store.deletePrefix(""), 0)
    }).pipe(Effect.provide(BlobStoreMemory)))
})
