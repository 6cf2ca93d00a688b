/** The store contracts on the in-memory stores, together and one port at a time. */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Ref } from "effect"
import { AccountStore } from "@model-platform/core/keys"
import { type IdempotencyRecord, IdempotencyStore, RETENTION_MS } from "@model-platform/core/http"
import { toTimestamp } from "@model-platform/core/kernel"
import {
  AccountStoreMemory,
  idempotencyStoreMemoryOn,
  IdempotencyStoreMemory,
  KeyStoreMemory,
  MemoryStores
} from "@model-platform/memory-stores/MemoryStores"
import {
  accountStoreContract,
  allStoreContracts,
  idempotencyStoreContract,
  keyStoreContract
} from "@model-platform/contract-kit/StoreContract"

allStoreContracts("MemoryStores", MemoryStores)

accountStoreContract("AccountStoreMemory", AccountStoreMemory)
keyStoreContract("KeyStoreMemory", KeyStoreMemory)
idempotencyStoreContract("IdempotencyStoreMemory", IdempotencyStoreMemory)

describe("AccountStoreMemory", () => {
  it.effect("first is undefined on an empty store", () =>
    Effect.gen(function*() {
      const store = yield* AccountStore
      assert.isUndefined(yield* store.first)
    }).pipe(Effect.provide(AccountStoreMemory)))
})

describe("IdempotencyStoreMemory", () => {
  it.effect("a claim removes every record expired by its time, whatever its key", () =>
    Effect.gen(function*() {
      const records = yield* Ref.make<ReadonlyMap<string, IdempotencyRecord>>(new Map())
      const t0 = Date.UTC(2026, 2, 1)
      yield* Effect.gen(function*() {
        const store = yield* IdempotencyStore
        yield* store.claim({ scope: "acct_a", key: "old", fingerprint: "fp", created_at: toTimestamp(t0) })
        yield* store.complete("acct_a", "old", { status: 200, body: "v1.sealed" })
        yield* store.claim({ scope: "acct_b", key: "young", fingerprint: "fp", created_at: toTimestamp(t0 + 1) })
        yield* store.claim({ scope: "acct_c", key: "new", fingerprint: "fp", created_at: toTimestamp(t0 + RETENTION_MS) })
      }).pipe(Effect.provide(idempotencyStoreMemoryOn(records)))
      assert.deepStrictEqual([...(yield* Ref.get(records)).values()].map((r) => r.key).sort(), ["new", "young"])
    }))
})
