/**
 * The reservation part of the gateway store contract (GatewayStoreContract.ts): an admission
 * reserves its call's cost bound as core's `allocate` over `spendingSources` takes it (the call's
 * machine first, then account-wide); it answers insufficient (what the call's scopes have
 * available) or duplicate (a ref that exists) holding nothing, while still counting the call;
 * concurrent admits never overspend; an admission breaking the port's rules is a defect.
 */
import { assert, describe, type Vitest } from "@effect/vitest"
import { Effect } from "effect"
import { GatewayStore } from "@model-platform/core/gateway"
import { generateId } from "@model-platform/core/kernel"
import {
  allocate,
  type Allocation,
  LedgerStore,
  type OrderedReservation,
  type ScopeBalance,
  spendingSources
} from "@model-platform/core/ledger"
import { assertDies } from "./ContractSupport.ts"
import {
  accountWithKey,
  admissionOf,
  admitOne,
  admitReserved,
  assertConsistent,
  credits,
  freshMachine,
  fund,
  jsonBigint,
  oneTo,
  ordered,
  pendingReservation,
  snapshot,
  sorted,
  thisMinute,
  unbounded
} from "./GatewayContractFixtures.ts"
import type { GatewayContractStores } from "./GatewayStoreContract.ts"

const scope = (balances: ReadonlyArray<ScopeBalance>, machineId: string | null): ScopeBalance =>
  balances.find((b) => b.machine_id === machineId) ?? { machine_id: machineId, posted: 0n, held: 0n }

export const gatewayReservationTests = (it: Vitest.MethodsNonLive<GatewayContractStores>) => {
  describe("admit: the reservation", () => {
    it.effect("reserves as allocate over spendingSources takes it (pinned to the call's machine first, then account-wide)", () =>
      Effect.gen(function*() {
        const gateway = yield* GatewayStore
        const ledger = yield* LedgerStore
        const { account, key } = yield* accountWithKey()
        const m = yield* freshMachine
        const m2 = yield* freshMachine
        yield* fund(account.id, m, credits(3))
        yield* fund(account.id, m2, credits(7))
        yield* fund(account.id, null, credits(5))

        /** Admits the request and checks it reserved what core's allocation takes from the balances before. */
        const reserves = Effect.fnUntraced(function*(request: OrderedReservation, literal: ReadonlyArray<Allocation>) {
          const before = yield* ledger.balances(account.id)
          const expected = allocate(spendingSources(before, request.machine_id), request.amount)
          assert.deepStrictEqual(expected, { _tag: "Allocated", allocations: literal })
          const result = yield* admitOne(gateway, admissionOf(key, { reservation: request }))
          assert.strictEqual(result._tag, "Admitted")
          assert.deepStrictEqual(result._tag === "Admitted" ? result.reserved : undefined, {
            _tag: "reserved",
            allocations: literal
          })
          assert.deepStrictEqual(yield* ledger.reservation(request.ref), pendingReservation(request, literal))
          const after = yield* ledger.balances(account.id)
          for (const scopeId of [null, m, m2]) {
            const held = literal.find((a) => a.machine_id === scopeId)?.amount ?? 0n
            assert.deepStrictEqual(scope(after, scopeId), {
              ...scope(before, scopeId),
              held: scope(before, scopeId).held + held
            }, `scope ${scopeId}`)
          }
        })

        // A call on m: its pinned 3 first, then 1 account-wide; m2's credits are never taken.
        yield* reserves(yield* ordered(account.id, m, credits(4)), [
          { machine_id: m, amount: credits(3) },
          { machine_id: null, amount: credits(1) }
        ])
        // A call on no machine: account-wide only.
        yield* reserves(yield* ordered(account.id, null, credits(2)), [{ machine_id: null, amount: credits(2) }])
        // A call on m2: 7 pinned then the 2 account-wide left, exactly.
        yield* reserves(yield* ordered(account.id, m2, credits(9)), [
          { machine_id: m2, amount: credits(7) },
          { machine_id: null, amount: credits(2) }
        ])
        // Nothing left anywhere, but an amount of 0 needs no allocation.
        yield* reserves(yield* ordered(account.id, m, 0n), [])
        const pinned = [
          { machine_id: m, posted: credits(3), held: credits(3) },
          { machine_id: m2, posted: credits(7), held: credits(7) }
        ]
        assert.deepStrictEqual(yield* ledger.balances(account.id), [
          { machine_id: null, posted: credits(5), held: credits(5) },
          ...(m < m2 ? pinned : pinned.reverse())
        ])
        yield* assertConsistent(account.id)
      }))

    it.effect("insufficient: the total available in the call's scopes, nothing held; the call is still counted", () =>
      Effect.gen(function*() {
        const gateway = yield* GatewayStore
        const ledger = yield* LedgerStore
        const { account, key } = yield* accountWithKey()
        const m = yield* freshMachine
        const m2 = yield* freshMachine
        yield* fund(account.id, m, credits(1.5))
        yield* fund(account.id, m2, credits(40))
        yield* fund(account.id, null, credits(2))
        // Hold some account-wide credits so that available differs from posted.
        yield* admitReserved(key, yield* ordered(account.id, null, credits(0.5)))
        const window = thisMinute()
        const bucket = `rpm:${yield* generateId("key")}`
        let count = 0
        for (
          const [machineId, amount, available] of [
            [m, credits(3.5), credits(3)],
            [null, credits(1.6), credits(1.5)],
            [m, credits(100), credits(3)]
          ] as const
        ) {
          const before = yield* snapshot(account.id)
          const request = yield* ordered(account.id, machineId, amount)
          assert.deepStrictEqual(allocate(spendingSources(before.balances, machineId), amount), {
            _tag: "Insufficient",
            available
          })
          count++
          assert.deepStrictEqual(yield* admitOne(gateway, admissionOf(key, { reservation: request, bucket, window_start: window })), {
            _tag: "Admitted",
            count,
            reserved: { _tag: "insufficient", available }
          })
          assert.isUndefined(yield* ledger.reservation(request.ref))
          assert.deepStrictEqual(yield* snapshot(account.id), before)
        }
        // An account with no credits at all.
        const { account: empty, key: emptyKey } = yield* accountWithKey()
        const request = yield* ordered(empty.id, yield* freshMachine, credits(1))
        assert.deepStrictEqual(yield* admitOne(gateway, admissionOf(emptyKey, { reservation: request })), {
          _tag: "Admitted",
          count: 1,
          reserved: { _tag: "insufficient", available: 0n }
        })
        assert.isUndefined(yield* ledger.reservation(request.ref))
        assert.deepStrictEqual(yield* snapshot(empty.id), { balances: [], entries: [], pending: [], reservations: [], records: [] })
        yield* assertConsistent(account.id)
      }))

    it.effect("a ref that exists: duplicate, nothing changes, the call still counted", () =>
      Effect.gen(function*() {
        const gateway = yield* GatewayStore
        const ledger = yield* LedgerStore
        const { account, key } = yield* accountWithKey()
        yield* fund(account.id, null, credits(10))
        const window = thisMinute()
        const first = yield* ordered(account.id, null, credits(3))
        yield* admitReserved(key, first)
        const before = yield* snapshot(account.id, [first.ref])
        for (const replay of [first, { ...first, amount: credits(1) }, { ...first, amount: 0n }]) {
          const result = yield* admitOne(gateway, admissionOf(key, { reservation: replay, window_start: window }))
          assert.strictEqual(result._tag, "Admitted")
          assert.deepStrictEqual(result._tag === "Admitted" ? result.reserved : undefined, { _tag: "duplicate" })
        }
        assert.deepStrictEqual(yield* snapshot(account.id, [first.ref]), before)
        assert.deepStrictEqual(yield* ledger.reservation(first.ref), pendingReservation(first, [{ machine_id: null, amount: credits(3) }]))
      }))

    it.effect("N concurrent admits reserving more than the balance covers: no overspend, counts 1..N once", () =>
      Effect.gen(function*() {
        const gateway = yield* GatewayStore
        const ledger = yield* LedgerStore
        const { account, key } = yield* accountWithKey()
        const m = yield* freshMachine
        yield* fund(account.id, m, credits(4))
        yield* fund(account.id, null, credits(6))
        const window = thisMinute()
        const requests = yield* Effect.all(Array.from({ length: 30 }, () => ordered(account.id, m, credits(1))))
        const results = yield* Effect.all(
          requests.map((reservation) => admitOne(gateway, admissionOf(key, { reservation, window_start: window }))),
          unbounded
        )
        assert.deepStrictEqual(sorted(results.map((r) => (r._tag === "KeyRevoked" ? 0 : r.count))), oneTo(30))
        const reservedRefs: Array<string> = []
        results.forEach((r, i) => {
          assert.strictEqual(r._tag, "Admitted")
          const reserved = r._tag === "Admitted" ? r.reserved : undefined
          assert.isTrue(reserved?._tag === "reserved" || reserved?._tag === "insufficient", JSON.stringify(reserved, jsonBigint))
          if (reserved?._tag === "reserved") {
            assert.strictEqual(reserved.allocations.reduce((s, a) => s + a.amount, 0n), credits(1))
            reservedRefs.push(requests[i]!.ref)
          }
        })
        // The balance covers 10; a store may refuse some it could have taken, never more.
        assert.isAtLeast(reservedRefs.length, 1)
        assert.isAtMost(reservedRefs.length, 10)
        const balances = yield* ledger.balances(account.id)
        for (const b of balances) assert.isTrue(b.held <= b.posted, `overspent: ${JSON.stringify(b, jsonBigint)}`)
        assert.strictEqual(balances.reduce((s, b) => s + b.held, 0n), credits(reservedRefs.length))
        // Pinned credits first: the account-wide ones are only held once the pinned ones are.
        if (scope(balances, null).held > 0n) assert.strictEqual(scope(balances, m).held, credits(4))
        assert.deepStrictEqual((yield* ledger.pending(account.id)).map((r) => r.ref).sort(), reservedRefs.sort())
        yield* assertConsistent(account.id)
      }))

    it.effect("an admission that breaks the rules is a defect", () =>
      Effect.gen(function*() {
        const gateway = yield* GatewayStore
        const { account, key } = yield* accountWithKey()
        const m = yield* freshMachine
        yield* fund(account.id, m, credits(5))
        yield* fund(account.id, null, credits(5))
        const good = admissionOf(key)
        yield* assertDies(admitOne(gateway, { ...good, rate: { ...good.rate, bucket: "" } }), "empty bucket")
        yield* assertDies(
          admitOne(gateway, { ...good, rate: { ...good.rate, window_start: good.rate.window_start + 1 } }),
          "window not aligned"
        )
        yield* assertDies(
          admitOne(gateway, admissionOf(key, { reservation: yield* ordered(account.id, null, -1n) })),
          "negative amount"
        )
        const otherMachine = { ...(yield* ordered(account.id, yield* freshMachine, credits(1))), scopes: [m, null] }
        yield* assertDies(admitOne(gateway, admissionOf(key, { reservation: otherMachine })), "another machine's credits")
        yield* assertConsistent(account.id)
        assert.deepStrictEqual(yield* (yield* LedgerStore).pending(account.id), [])
      }))
  })
}
