/**
 * The rate-limit part of the gateway store contract (GatewayStoreContract.ts): an admission past
 * its rpm limit is RateLimited (with the window's count), reserves nothing and changes no balance;
 * any positive safe integer is a limit; of N concurrent admits over a limit of L, exactly L are
 * admitted, each counted once.
 */
import { assert, describe, type Vitest } from "@effect/vitest"
import { Effect } from "effect"
import { GatewayStore } from "@model-platform/core/gateway"
import { LedgerStore, type OrderedReservation } from "@model-platform/core/ledger"
import {
  accountWithKey,
  admissionOf,
  admitOne,
  assertConsistent,
  credits,
  fund,
  oneTo,
  ordered,
  snapshot,
  sorted,
  thisMinute,
  unbounded
} from "./GatewayContractFixtures.ts"
import type { GatewayContractStores } from "./GatewayStoreContract.ts"

export const gatewayRateLimitTests = (it: Vitest.MethodsNonLive<GatewayContractStores>) => {
  describe("admit: over the limit", () => {
    it.effect("past the limit: RateLimited with the count, nothing reserved, balances unchanged", () =>
      Effect.gen(function*() {
        const gateway = yield* GatewayStore
        const ledger = yield* LedgerStore
        const { account, key } = yield* accountWithKey()
        yield* fund(account.id, null, credits(10))
        const window = thisMinute()
        const first = yield* ordered(account.id, null, credits(2))
        const admit = (reservation: OrderedReservation | undefined, limit: number) =>
          admitOne(gateway, admissionOf(key, { reservation, limit, window_start: window }))
        assert.deepStrictEqual(yield* admit(first, 2), {
          _tag: "Admitted",
          count: 1,
          reserved: { _tag: "reserved", allocations: [{ machine_id: null, amount: credits(2) }] }
        })
        assert.deepStrictEqual(yield* admit(undefined, 2), { _tag: "Admitted", count: 2, reserved: undefined })
        const before = yield* snapshot(account.id, [first.ref])
        for (const [count, limit] of [[3, 2], [4, 2], [5, 0]] as const) {
          const refused = yield* ordered(account.id, null, credits(1))
          assert.deepStrictEqual(yield* admit(refused, limit), { _tag: "RateLimited", count })
          assert.isUndefined(yield* ledger.reservation(refused.ref))
        }
        assert.deepStrictEqual(yield* snapshot(account.id, [first.ref]), before)
        // A larger limit admits again, counting on.
        assert.deepStrictEqual(yield* admit(undefined, 6), { _tag: "Admitted", count: 6, reserved: undefined })
        yield* assertConsistent(account.id)
      }))

    it.effect("any positive safe integer is a limit (rpm has no upper bound in the catalogue)", () =>
      Effect.gen(function*() {
        const gateway = yield* GatewayStore
        const { key } = yield* accountWithKey()
        const window = thisMinute()
        for (
          const [count, limit] of [[1, 2 ** 31 - 1], [2, 2 ** 31], [3, 10_000_000_000], [4, Number.MAX_SAFE_INTEGER]] as const
        ) {
          assert.deepStrictEqual(
            yield* admitOne(gateway, admissionOf(key, { limit, window_start: window })),
            { _tag: "Admitted", count, reserved: undefined },
            `limit ${limit}`
          )
        }
      }))

    it.effect("N concurrent admits over a limit of L: L admitted and reserved, N - L rate limited; counts 1..N once", () =>
      Effect.gen(function*() {
        const gateway = yield* GatewayStore
        const ledger = yield* LedgerStore
        const { account, key } = yield* accountWithKey()
        yield* fund(account.id, null, credits(100))
        const window = thisMinute()
        const requests = yield* Effect.all(Array.from({ length: 30 }, () => ordered(account.id, null, credits(1))))
        const results = yield* Effect.all(
          requests.map((reservation) => admitOne(gateway, admissionOf(key, { reservation, limit: 10, window_start: window }))),
          unbounded
        )
        const counts = results.map((r) => (r._tag === "KeyRevoked" ? 0 : r.count))
        assert.deepStrictEqual(sorted(counts), oneTo(30))
        results.forEach((r, i) => {
          if (r._tag === "Admitted") {
            assert.isAtMost(r.count, 10)
            assert.deepStrictEqual(r.reserved, { _tag: "reserved", allocations: [{ machine_id: null, amount: credits(1) }] })
          } else {
            assert.deepStrictEqual(r._tag, "RateLimited", `admit ${i}`)
          }
        })
        assert.strictEqual(results.filter((r) => r._tag === "Admitted").length, 10)
        const pending = yield* ledger.pending(account.id)
        assert.deepStrictEqual(
          pending.map((r) => r.ref).sort(),
          requests.filter((_, i) => results[i]!._tag === "Admitted").map((r) => r.ref).sort()
        )
        assert.deepStrictEqual(yield* ledger.balances(account.id), [
          { machine_id: null, posted: credits(100), held: credits(10) }
        ])
        yield* assertConsistent(account.id)
      }))
  })
}
