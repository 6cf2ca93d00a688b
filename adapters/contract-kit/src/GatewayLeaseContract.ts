/**
 * The lease part of the gateway store contract (GatewayStoreContract.ts; docs/performance.md
 * "Credit leases"): an admission takes several rpm hits at once (a lease's calls', ahead), on
 * every store; and, on every gateway store whose ledger store has `draw`, a lease is admitted as
 * any reservation is (`GatewayStore.admit`), and metering (`commit`) charges a call that drew from
 * it (`Metered.drawn`) and writes its record: "settled" whether its lease is pending or not,
 * "not_pending" (and its record Duplicate) when replayed, in a batch with settlements too; what a
 * call was not charged of its draw stays with the lease.
 *
 * As in that suite: fresh accounts and keys per test, the current minute's rate window, leases
 * pending until 2100.
 */
import { assert, describe, type Vitest } from "@effect/vitest"
import { Effect } from "effect"
import { UsageStore } from "@model-platform/core/billing"
import { type AdmissionResult, GatewayStore, type Metered } from "@model-platform/core/gateway"
import type { KeyRecord } from "@model-platform/core/keys"
import { generateId, RateLimitStore, windowStartOf } from "@model-platform/core/kernel"
import { drawFrom, drawOf, type Holds, leaseHolds, LedgerStore } from "@model-platform/core/ledger"
import { assertDies } from "./ContractSupport.ts"
import {
  admissionOf,
  admitReserved,
  assertConsistent,
  at,
  keyWithCredits,
  meteredCall,
  MINUTE,
  ordered,
  usageRecord
} from "./GatewayContractFixtures.ts"
import type { GatewayContractStores } from "./GatewayStoreContract.ts"

/**
 * The current minute's window, with at least 5 s of it left (else, after waiting for the next):
 * a test's admissions all count in it.
 */
const roomyWindow = Effect.gen(function*() {
  const now = Date.now()
  const start = windowStartOf(now, MINUTE)
  if (start + MINUTE - now >= 5_000) return start
  yield* Effect.sleep(start + MINUTE - now + 10)
  return start + MINUTE
})

/** An admission of the key's call taking `hits` hits of `window`, limited to `limit`. */
const hitting = (key: KeyRecord, window: number, hits: number, limit: number) =>
  admissionOf(key, { window_start: window, limit, hits })

/** An admission's answer without its reservation: what the hits tests compare. */
const counted = (result: AdmissionResult) => result._tag === "KeyRevoked" ? result : { _tag: result._tag, count: result.count }

/** Admits a lease of `amount` for the key's calls on no machine: its ref. */
const admitLease = Effect.fnUntraced(function*(key: KeyRecord, amount: bigint) {
  const lease = yield* ordered(key.account_id, null, amount)
  yield* admitReserved(key, lease)
  return lease.ref
})

/** A call of `key` that drew `estimate` from the lease (as it holds now) and cost `actual`, to meter. */
const drawnCall = Effect.fnUntraced(function*(key: KeyRecord, lease: string, estimate: bigint, actual: bigint, left?: Holds) {
  const holds = left ?? leaseHolds((yield* (yield* LedgerStore).reservation(lease))!)
  const drawn = drawFrom(holds, estimate)!
  const { settlement, ...share } = yield* drawOf(lease, key.account_id, yield* generateId("usage"), drawn, actual)
  const record = usageRecord(key, settlement.ref, "m_lease", { list_credits: actual, credits: actual })
  const call: Metered = { settlement, drawn: share, record }
  return call
})

const wide = Effect.fnUntraced(function*(account: string) {
  const found = (yield* (yield* LedgerStore).balances(account)).find((b) => b.machine_id === null)
  return { posted: found?.posted ?? 0n, held: found?.held ?? 0n }
})

/** Whether the contract's ledger store can draw (the operation is optional); the tests end when not. */
const canDraw = Effect.gen(function*() {
  return (yield* LedgerStore).draw !== undefined
})

export const gatewayLeaseTests = (it: Vitest.MethodsNonLive<GatewayContractStores>) => {
  describe("rpm hits taken ahead (Admission.rate.hits)", () => {
    it.effect("every hit is counted; an admission is refused only when its first hit passes the limit", () =>
      Effect.gen(function*() {
        const gateway = yield* GatewayStore
        const key = yield* keyWithCredits(1n)
        const window = yield* roomyWindow
        const admit = (hits: number) => Effect.map(gateway.admit([hitting(key, window, hits, 7)]), ([r]) => counted(r!))
        assert.deepStrictEqual(yield* admit(5), { _tag: "Admitted", count: 5 })
        // Hits 6 to 10: the first is within 7, so admitted (two of its hits are).
        assert.deepStrictEqual(yield* admit(5), { _tag: "Admitted", count: 10 })
        assert.deepStrictEqual(yield* admit(1), { _tag: "RateLimited", count: 11 })
        // The window's count is shared with RateLimitStore.hit.
        assert.strictEqual(yield* (yield* RateLimitStore).hit(`rpm:${key.id}`, window, MINUTE), 12)
      }))

    it.effect("in one batch, each admission counts from the hits of the ones before it", () =>
      Effect.gen(function*() {
        const key = yield* keyWithCredits(1n)
        const window = yield* roomyWindow
        const results = yield* (yield* GatewayStore).admit(
          [[3, 4], [1, 4], [4, 4], [2, 9]].map(([hits, limit]) => hitting(key, window, hits!, limit!))
        )
        assert.deepStrictEqual(results.map(counted), [
          { _tag: "Admitted", count: 3 },
          { _tag: "Admitted", count: 4 },
          { _tag: "RateLimited", count: 8 },
          { _tag: "Admitted", count: 10 }
        ])
      }))

    it.effect("hits that are not an integer from 1 to 1000 are a defect, and count nothing", () =>
      Effect.gen(function*() {
        const gateway = yield* GatewayStore
        const key = yield* keyWithCredits(1n)
        const window = yield* roomyWindow
        for (const hits of [0, -1, 1.5, 1_001]) yield* assertDies(gateway.admit([hitting(key, window, hits, 100)]), `hits ${hits}`)
        const [first] = yield* gateway.admit([hitting(key, window, 1, 100)])
        assert.deepStrictEqual(counted(first!), { _tag: "Admitted", count: 1 })
      }))
  })

  describe("calls drawn from a lease (LedgerStore.draw)", () => {
    it.effect("a batch of calls drawn from one lease and a settled call: each charged and recorded once, the lease keeps the rest", () =>
      Effect.gen(function*() {
        if (!(yield* canDraw)) return
        const gateway = yield* GatewayStore
        const key = yield* keyWithCredits(100n)
        const lease = yield* admitLease(key, 30n)
        // The process draws in memory, call after call, from what the lease holds.
        let left: Holds = { allocations: [{ machine_id: null, amount: 30n }], grants: [] }
        const calls: Array<Metered> = []
        for (const [estimate, actual] of [[10n, 4n], [5n, 5n], [8n, 9n]] as const) {
          const call = yield* drawnCall(key, lease, estimate, actual, left)
          calls.push(call)
          left = { allocations: [{ machine_id: null, amount: left.allocations[0]!.amount - estimate }], grants: [] }
        }
        // An ordinary call of the same account, with a reservation of its own.
        const own = yield* ordered(key.account_id, null, 6n)
        yield* admitReserved(key, own)
        const settled = yield* meteredCall(key, own, { account_id: key.account_id, allocations: [{ machine_id: null, amount: 6n }] }, 2n)
        const results = yield* gateway.commit([...calls, settled, calls[0]!])
        assert.deepStrictEqual(results, [
          { settlement: "settled", record: "Recorded" },
          { settlement: "settled", record: "Recorded" },
          { settlement: "settled", record: "Recorded" },
          { settlement: "settled", record: "Recorded" },
          { settlement: "not_pending", record: "Duplicate" }
        ])
        // Charged 4 + 5 + 9 + 2 = 20. What the drawn calls were charged of their draws (4, 5, and 8
        // of 9: 1 is excess) came off the lease; it still holds 30 - 17 = 13.
        assert.deepStrictEqual(yield* wide(key.account_id), { posted: 80n, held: 13n })
        assert.deepStrictEqual((yield* (yield* LedgerStore).reservation(lease))?.allocations, [{ machine_id: null, amount: 13n }])
        const usage = yield* UsageStore
        for (const call of calls) assert.strictEqual((yield* usage.byRef(call.record.ref))?.credits, call.settlement!.charged)
        yield* assertConsistent(key.account_id)
      }))

    it.effect("a call drawn from a lease that finished meanwhile is still charged; replayed later, it is charged once", () =>
      Effect.gen(function*() {
        if (!(yield* canDraw)) return
        const gateway = yield* GatewayStore
        const ledger = yield* LedgerStore
        const key = yield* keyWithCredits(50n)
        const lease = yield* admitLease(key, 20n)
        const call = yield* drawnCall(key, lease, 6n, 5n)
        assert.strictEqual(yield* ledger.void(lease, at(3)), "voided")
        assert.deepStrictEqual(yield* gateway.commit([call]), [{ settlement: "settled", record: "Recorded" }])
        assert.deepStrictEqual(yield* wide(key.account_id), { posted: 45n, held: 0n })
        // The journal replayed: the call is known, its record says what it was charged.
        assert.deepStrictEqual(yield* gateway.commit([{ ...call, record: { ...call.record, credits: 0n } }]), [
          { settlement: "not_pending", record: "Duplicate" }
        ])
        assert.deepStrictEqual(yield* wide(key.account_id), { posted: 45n, held: 0n })
        assert.strictEqual((yield* (yield* UsageStore).byRef(call.record.ref))?.credits, 5n)
        yield* assertConsistent(key.account_id)
      }))
  })
}
