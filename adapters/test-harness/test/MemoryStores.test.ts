/** The store contracts on the in-memory stores, together and one port at a time. */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { AccountStore } from "@model-platform/core/ports/AccountStore"
import {
  AccountStoreMemory,
  IdempotencyStoreMemory,
  KeyStoreMemory,
  MemoryStores
} from "../src/MemoryStores.ts"
import {
  accountStoreContract,
  allStoreContracts,
  idempotencyStoreContract,
  keyStoreContract
} from "../src/StoreContract.ts"

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
