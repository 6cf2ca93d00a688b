/**
 * The admission part of the gateway store contract (GatewayStoreContract.ts): `GatewayStore.admit`
 * answers a batch in the order given, each admission as if admitted alone (one key's reservations
 * one after the other); it admits a live key of the account only, counts the call in the key's rpm
 * window (the count `RateLimitStore.hit` shares) and moves the key's last use forward, never back.
 */
import { assert, describe, type Vitest } from "@effect/vitest"
import { Effect } from "effect"
import { type AdmissionResult, GatewayStore } from "@model-platform/core/gateway"
import { type KeyRecord, KeyStore } from "@model-platform/core/keys"
import { generateId, RateLimitStore } from "@model-platform/core/kernel"
import { LedgerStore } from "@model-platform/core/ledger"
import { assertDies } from "./ContractSupport.ts"
import {
  accountWithKey,
  admissionOf,
  admitOne,
  assertConsistent,
  at,
  credits,
  fund,
  MINUTE,
  ordered,
  snapshot,
  thisMinute,
  unbounded
} from "./GatewayContractFixtures.ts"
import type { GatewayContractStores } from "./GatewayStoreContract.ts"

export const gatewayAdmissionTests = (it: Vitest.MethodsNonLive<GatewayContractStores>) => {
  describe("admit: batches", () => {
    it.effect("a batch across accounts and keys answers in the order given, each as if admitted alone", () =>
      Effect.gen(function*() {
        const gateway = yield* GatewayStore
        const ledger = yield* LedgerStore
        const first = yield* accountWithKey()
        const second = yield* accountWithKey()
        const revoked = yield* accountWithKey({ revoked_at: at(0) })
        yield* fund(first.account.id, null, 500n)
        yield* fund(second.account.id, null, 50n)
        const window = thisMinute()
        const fits = yield* ordered(first.account.id, null, 300n)
        const tooMuch = yield* ordered(second.account.id, null, 60n)
        const batch = [
          admissionOf(second.key, { reservation: tooMuch, window_start: window }),
          admissionOf(first.key, { reservation: fits, window_start: window }),
          admissionOf(revoked.key, { window_start: window }),
          admissionOf(first.key, { window_start: window, limit: 1 }),
          admissionOf(second.key, { window_start: window })
        ]
        const results = yield* gateway.admit(batch)
        assert.deepStrictEqual(results, [
          { _tag: "Admitted", count: 1, reserved: { _tag: "insufficient", available: 50n } },
          { _tag: "Admitted", count: 1, reserved: { _tag: "reserved", allocations: [{ machine_id: null, amount: 300n }] } },
          { _tag: "KeyRevoked" },
          { _tag: "RateLimited", count: 2 },
          { _tag: "Admitted", count: 2, reserved: undefined }
        ])
        assert.strictEqual((yield* ledger.reservation(fits.ref))?.status, "pending")
        assert.isUndefined(yield* ledger.reservation(tooMuch.ref))
        assert.deepStrictEqual(yield* gateway.admit([]), [])
      }))

    it.effect("admissions of one key in one batch reserve one after the other: no overspend inside a batch", () =>
      Effect.gen(function*() {
        const gateway = yield* GatewayStore
        const { account, key } = yield* accountWithKey()
        yield* fund(account.id, null, 250n)
        const window = thisMinute()
        const requests = yield* Effect.all(Array.from({ length: 4 }, () => ordered(account.id, null, 100n)))
        const results = yield* gateway.admit(requests.map((reservation) => admissionOf(key, { reservation, window_start: window })))
        assert.deepStrictEqual(results.map((r) => r._tag === "Admitted" ? [r.count, r.reserved?._tag] : [r._tag]), [
          [1, "reserved"],
          [2, "reserved"],
          [3, "insufficient"],
          [4, "insufficient"]
        ])
        yield* assertConsistent(account.id)
      }))

    it.effect("a batch holding a broken admission is a defect and admits none of it", () =>
      Effect.gen(function*() {
        const gateway = yield* GatewayStore
        const rateLimits = yield* RateLimitStore
        const { key } = yield* accountWithKey()
        const window = thisMinute()
        const good = admissionOf(key, { window_start: window })
        yield* assertDies(gateway.admit([good, { ...good, rate: { ...good.rate, bucket: "" } }]), "empty bucket in a batch")
        assert.strictEqual(yield* rateLimits.hit(`rpm:${key.id}`, window, MINUTE), 1)
      }))
  })

  describe("admit: the key, its use and the rpm count", () => {
    it.effect("a live key is admitted, counted 1, 2, 3 in its window, sharing the count with RateLimitStore.hit", () =>
      Effect.gen(function*() {
        const gateway = yield* GatewayStore
        const rateLimits = yield* RateLimitStore
        const { key } = yield* accountWithKey()
        const window = thisMinute()
        const admit = () => admitOne(gateway, admissionOf(key, { window_start: window }))
        const expected = (count: number): AdmissionResult => ({ _tag: "Admitted", count, reserved: undefined })
        assert.deepStrictEqual(yield* admit(), expected(1))
        assert.deepStrictEqual(yield* admit(), expected(2))
        assert.deepStrictEqual(yield* admit(), expected(3))
        assert.strictEqual(yield* rateLimits.hit(`rpm:${key.id}`, window, MINUTE), 4)
        assert.deepStrictEqual(yield* admit(), expected(5))
        // Another window of the same bucket counts on its own.
        assert.deepStrictEqual(
          yield* admitOne(gateway, admissionOf(key, { window_start: window + MINUTE })),
          expected(1)
        )
        assert.strictEqual(yield* rateLimits.hit(`rpm:${key.id}`, window, MINUTE), 6)
      }))

    it.effect("touch_at moves last_used_at forward, never backwards; undefined leaves it; nothing else changes", () =>
      Effect.gen(function*() {
        const gateway = yield* GatewayStore
        const keys = yield* KeyStore
        const { key } = yield* accountWithKey()
        const stored = keys.get(key.account_id, key.id)
        yield* admitOne(gateway, admissionOf(key))
        assert.deepStrictEqual(yield* stored, key, "touch_at undefined on a never used key")
        yield* admitOne(gateway, admissionOf(key, { touch_at: at(2_000) }))
        assert.deepStrictEqual(yield* stored, { ...key, last_used_at: at(2_000) })
        yield* admitOne(gateway, admissionOf(key, { touch_at: at(1_000) }))
        assert.deepStrictEqual(yield* stored, { ...key, last_used_at: at(2_000) }, "backwards")
        yield* admitOne(gateway, admissionOf(key))
        assert.deepStrictEqual(yield* stored, { ...key, last_used_at: at(2_000) }, "undefined")
        yield* admitOne(gateway, admissionOf(key, { touch_at: at(2_001) }))
        assert.deepStrictEqual(yield* stored, { ...key, last_used_at: at(2_001) })
      }))

    it.effect("concurrent admits touching a key keep the latest time", () =>
      Effect.gen(function*() {
        const gateway = yield* GatewayStore
        const keys = yield* KeyStore
        const { key } = yield* accountWithKey()
        const times = Array.from({ length: 15 }, (_, i) => at(((i * 7) % 15) * 1_000))
        yield* Effect.all(times.map((t) => admitOne(gateway, admissionOf(key, { touch_at: t }))), unbounded)
        assert.strictEqual((yield* keys.get(key.account_id, key.id))?.last_used_at, at(14_000))
      }))

    it.effect("a revoked key, an unknown key or another account's key: KeyRevoked, nothing counted, touched or reserved", () =>
      Effect.gen(function*() {
        const gateway = yield* GatewayStore
        const keys = yield* KeyStore
        const ledger = yield* LedgerStore
        const rateLimits = yield* RateLimitStore
        const { account, key } = yield* accountWithKey()
        const { account: other } = yield* accountWithKey()
        yield* fund(account.id, null, credits(10))
        yield* fund(other.id, null, credits(10))
        const revoked = (yield* accountWithKey()).key
        yield* fund(revoked.account_id, null, credits(10))
        const revokedRecord = yield* keys.revoke(revoked.account_id, revoked.id, at(100))
        assert.strictEqual(revokedRecord?.revoked_at, at(100))

        type Ids = { readonly account_id?: string; readonly key_id?: string }
        const cases: ReadonlyArray<readonly [string, KeyRecord, Ids]> = [
          ["revoked key", revoked, {}],
          ["unknown key id", key, { key_id: yield* generateId("key") }],
          ["another account's key", key, { account_id: other.id }]
        ]
        for (const [what, bucketKey, ids] of cases) {
          const accountId = ids.account_id ?? bucketKey.account_id
          const before = yield* snapshot(accountId)
          const keyBefore = yield* keys.get(bucketKey.account_id, bucketKey.id)
          const window = thisMinute()
          const bucket = `rpm:${yield* generateId("key")}`
          const reservation = yield* ordered(accountId, null, credits(1))
          const result = yield* admitOne(gateway, 
            admissionOf(bucketKey, { ...ids, reservation, touch_at: at(5_000), bucket, window_start: window })
          )
          assert.deepStrictEqual(result, { _tag: "KeyRevoked" }, what)
          assert.strictEqual(yield* rateLimits.hit(bucket, window, MINUTE), 1, `${what}: counted`)
          assert.isUndefined(yield* ledger.reservation(reservation.ref), `${what}: reserved`)
          assert.deepStrictEqual(yield* snapshot(accountId), before, `${what}: ledger changed`)
          assert.deepStrictEqual(yield* keys.get(bucketKey.account_id, bucketKey.id), keyBefore, `${what}: touched`)
        }
      }))
  })
}
