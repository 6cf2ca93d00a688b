/**
 * The metering part of the gateway store contract (GatewayStoreContract.ts): `GatewayStore.commit`
 * settles each call's reservation and writes its usage record, as the ledger and the usage store
 * show afterwards; a call whose reservation is no longer pending is recorded as charging nothing;
 * a call replayed or twice in a batch is charged and recorded once; concurrent batches lose no
 * update; a batch breaking the port's rules is a defect and meters nothing.
 *
 * The expiry test's reservation expires in 1990, before every other suite's era, so `expire`
 * here never touches another test's reservations.
 */
import { assert, describe, type Vitest } from "@effect/vitest"
import { Effect } from "effect"
import { reportOf, type UsageDays, UsageStore } from "@model-platform/core/billing"
import { GatewayStore, type Metered, type MeteredResult } from "@model-platform/core/gateway"
import { type Timestamp, toTimestamp } from "@model-platform/core/kernel"
import {
  type Allocation,
  type LedgerEntry,
  LedgerStore,
  type OrderedReservation,
  type Reservation,
  type Settlement
} from "@model-platform/core/ledger"
import { assertDies } from "./ContractSupport.ts"
import {
  accountWithKey,
  admissionOf,
  admitOne,
  admitReserved,
  assertConsistent,
  at,
  credits,
  freshMachine,
  freshRef,
  fund,
  jsonBigint,
  meteredCall,
  ordered,
  pendingReservation,
  snapshot,
  unbounded,
  usageRecord
} from "./GatewayContractFixtures.ts"
import type { GatewayContractStores } from "./GatewayStoreContract.ts"

/** The expiry test's own era, before every other suite's reservations expire. */
const y1990 = (ms: number): Timestamp => toTimestamp(Date.UTC(1990, 0, 1) + ms)

/** Every day a test's records can fall on: the usage store's report over them. */
const allDays = (accountId: string): UsageDays => ({ account_id: accountId, from: "2000-01-01", to: "2099-12-31" })

const byId = (a: LedgerEntry, b: LedgerEntry) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)

export const gatewayCommitTests = (it: Vitest.MethodsNonLive<GatewayContractStores>) => {
  describe("commit", () => {
    it.effect("a batch across two accounts: answers in order, charges exactly, releases holds, writes the records", () =>
      Effect.gen(function*() {
        const gateway = yield* GatewayStore
        const ledger = yield* LedgerStore
        const usage = yield* UsageStore
        const { account: a, key: keyA } = yield* accountWithKey()
        const { account: b, key: keyB } = yield* accountWithKey({ agent_id: "agent_1" })
        const m = yield* freshMachine
        const m2 = yield* freshMachine
        yield* fund(a.id, m, credits(2))
        yield* fund(a.id, null, credits(10))
        yield* fund(b.id, null, credits(5))

        // a1: 3 held (2 pinned, 1 account-wide), 2.5 charged.
        const a1 = yield* ordered(a.id, m, credits(3))
        const a1Call = yield* meteredCall(keyA, a1, yield* admitReserved(keyA, a1), credits(2.5))
        // a2: unpriced, no reservation.
        const a2Call: Metered = {
          settlement: undefined,
          record: usageRecord(keyA, yield* freshRef, m, { credits: 0n, list_credits: 0n, quantity: 7n })
        }
        // b1: 1 held, 1.5 charged: 0.5 above the reservation.
        const b1 = yield* ordered(b.id, m2, credits(1))
        const b1Call = yield* meteredCall(keyB, b1, yield* admitReserved(keyB, b1), credits(1.5), { agent_id: "agent_1" })
        // b2: voided before it is metered.
        const b2 = yield* ordered(b.id, m2, credits(1))
        const b2Call = yield* meteredCall(keyB, b2, yield* admitReserved(keyB, b2), credits(0.7))
        assert.strictEqual(yield* ledger.void(b2.ref, at(3)), "voided")
        // a3: free in the end.
        const a3 = yield* ordered(a.id, m, credits(1))
        const a3Call = yield* meteredCall(keyA, a3, yield* admitReserved(keyA, a3), 0n)
        // a4: expired before it is metered.
        const a4 = yield* ordered(a.id, m, credits(1), y1990(60_000))
        const a4Call = yield* meteredCall(keyA, a4, yield* admitReserved(keyA, a4), credits(0.25))
        yield* ledger.expire(y1990(120_000))
        assert.strictEqual((yield* ledger.reservation(a4.ref))?.status, "expired")

        assert.deepStrictEqual(yield* ledger.balances(a.id), [
          { machine_id: null, posted: credits(10), held: credits(2) },
          { machine_id: m, posted: credits(2), held: credits(2) }
        ])
        const calls = [b1Call, a1Call, a2Call, b2Call, a3Call, a4Call]
        const refs = calls.map((c) => c.record.ref)
        const results = yield* gateway.commit(calls)
        assert.deepStrictEqual(results, [
          { settlement: "settled", record: "Recorded" },
          { settlement: "settled", record: "Recorded" },
          { settlement: "none", record: "Recorded" },
          { settlement: "not_pending", record: "Recorded" },
          { settlement: "settled", record: "Recorded" },
          { settlement: "not_pending", record: "Recorded" }
        ] satisfies ReadonlyArray<MeteredResult>)

        // Balances: posted down by the charges, every hold released.
        assert.deepStrictEqual(yield* ledger.balances(a.id), [
          { machine_id: null, posted: credits(9.5), held: 0n },
          { machine_id: m, posted: 0n, held: 0n }
        ])
        assert.deepStrictEqual(yield* ledger.balances(b.id), [{ machine_id: null, posted: credits(3.5), held: 0n }])
        // The usage entries are exactly the settlements'.
        const usageEntries = (accountId: string) =>
          Effect.map(ledger.entries(accountId), (entries) => entries.filter((e) => e.type === "usage").sort(byId))
        const entriesOf = (...settlements: ReadonlyArray<Settlement | undefined>) =>
          settlements.flatMap((s) => s?.entries ?? []).sort(byId)
        assert.deepStrictEqual(yield* usageEntries(a.id), entriesOf(a1Call.settlement, a3Call.settlement))
        assert.strictEqual(a1Call.settlement?.entries.length, 2)
        assert.strictEqual(a3Call.settlement?.entries.length, 0)
        assert.deepStrictEqual(yield* usageEntries(b.id), entriesOf(b1Call.settlement))
        // The reservations as they ended.
        const settledAs = (request: OrderedReservation, call: Metered, allocations: ReadonlyArray<Allocation>): Reservation => ({
          ...pendingReservation(request, allocations),
          status: "settled",
          finished_at: call.settlement!.at,
          charged: call.settlement!.charged,
          excess: call.settlement!.excess
        })
        assert.deepStrictEqual(
          yield* ledger.reservation(a1.ref),
          settledAs(a1, a1Call, [{ machine_id: m, amount: credits(2) }, { machine_id: null, amount: credits(1) }])
        )
        assert.deepStrictEqual(
          yield* ledger.reservation(b1.ref),
          settledAs(b1, b1Call, [{ machine_id: null, amount: credits(1) }])
        )
        assert.strictEqual(b1Call.settlement?.excess, credits(0.5))
        assert.deepStrictEqual(
          yield* ledger.reservation(a3.ref),
          settledAs(a3, a3Call, [{ machine_id: null, amount: credits(1) }])
        )
        assert.strictEqual((yield* ledger.reservation(b2.ref))?.status, "voided")
        assert.strictEqual((yield* ledger.reservation(a4.ref))?.status, "expired")
        // The records: as given, credits 0 where the reservation was no longer pending.
        const expectedRecords = calls.map((c, i) => (i === 3 || i === 5 ? { ...c.record, credits: 0n } : c.record))
        assert.deepStrictEqual(yield* Effect.forEach(refs, usage.byRef), expectedRecords)
        assert.strictEqual(
          yield* usage.spent({ account_id: a.id, from: at(0), to: at(10) }),
          credits(2.5)
        )
        yield* assertConsistent(a.id)
        yield* assertConsistent(b.id)

        // The same batch again changes nothing.
        const before = { a: yield* snapshot(a.id, refs), b: yield* snapshot(b.id, refs) }
        assert.deepStrictEqual(yield* gateway.commit(calls), [
          { settlement: "not_pending", record: "Duplicate" },
          { settlement: "not_pending", record: "Duplicate" },
          { settlement: "none", record: "Duplicate" },
          { settlement: "not_pending", record: "Duplicate" },
          { settlement: "not_pending", record: "Duplicate" },
          { settlement: "not_pending", record: "Duplicate" }
        ] satisfies ReadonlyArray<MeteredResult>)
        assert.deepStrictEqual({ a: yield* snapshot(a.id, refs), b: yield* snapshot(b.id, refs) }, before)
        assert.deepStrictEqual(yield* Effect.forEach(refs, usage.byRef), expectedRecords)
      }))

    it.effect("a charge above a reservation of pinned credits only goes account-wide, creating that scope", () =>
      Effect.gen(function*() {
        const gateway = yield* GatewayStore
        const ledger = yield* LedgerStore
        const { account, key } = yield* accountWithKey()
        const m = yield* freshMachine
        yield* fund(account.id, m, credits(3))
        const request = yield* ordered(account.id, m, credits(2))
        const hint = yield* admitReserved(key, request)
        assert.deepStrictEqual(hint.allocations, [{ machine_id: m, amount: credits(2) }])
        const call = yield* meteredCall(key, request, hint, credits(2.75))
        assert.deepStrictEqual(yield* gateway.commit([call]), [{ settlement: "settled", record: "Recorded" }])
        assert.deepStrictEqual(yield* ledger.balances(account.id), [
          { machine_id: null, posted: -credits(0.75), held: 0n },
          { machine_id: m, posted: credits(1), held: 0n }
        ])
        assert.strictEqual((yield* ledger.reservation(request.ref))?.excess, credits(0.75))
        yield* assertConsistent(account.id)
      }))

    it.effect("records keep every field exactly: amounts beyond 2^53, an agent, any text", () =>
      Effect.gen(function*() {
        const gateway = yield* GatewayStore
        const ledger = yield* LedgerStore
        const usage = yield* UsageStore
        const { account, key } = yield* accountWithKey({ agent_id: "agent_x" })
        const big = 2n ** 62n + 1n
        yield* fund(account.id, null, big)
        const request = yield* ordered(account.id, null, big - 5n)
        const hint = yield* admitReserved(key, request)
        const call = yield* meteredCall(key, request, hint, big - 7n, {
          agent_id: "agent_ünïcödé 'quoted' \"x\"",
          model: "m/with#odd:chars {\"json\": [1]}",
          service: "forecast",
          unit: "requests",
          quantity: big,
          input_tokens: 2n ** 53n + 1n,
          output_tokens: big - 1n,
          list_credits: big,
          from_allowance: 2n ** 60n,
          from_trial: 3n
        })
        const free: Metered = {
          settlement: undefined,
          record: usageRecord(key, yield* freshRef, "m_zero", {
            quantity: 0n,
            input_tokens: 0n,
            output_tokens: 0n,
            list_credits: 0n,
            credits: 0n
          })
        }
        assert.deepStrictEqual(yield* gateway.commit([call, free]), [
          { settlement: "settled", record: "Recorded" },
          { settlement: "none", record: "Recorded" }
        ])
        assert.deepStrictEqual(yield* usage.byRef(call.record.ref), call.record)
        assert.deepStrictEqual(yield* usage.byRef(free.record.ref), free.record)
        assert.deepStrictEqual(yield* ledger.balances(account.id), [{ machine_id: null, posted: 7n, held: 0n }])
        yield* assertConsistent(account.id)
      }))

    it.effect("one call twice in a batch: settled and recorded once, the second answers not_pending and Duplicate", () =>
      Effect.gen(function*() {
        const gateway = yield* GatewayStore
        const ledger = yield* LedgerStore
        const usage = yield* UsageStore
        const { account, key } = yield* accountWithKey()
        yield* fund(account.id, null, credits(10))
        const request = yield* ordered(account.id, null, credits(2))
        const call = yield* meteredCall(key, request, yield* admitReserved(key, request), credits(1))
        const replay: Metered = { ...call, record: { ...call.record, credits: credits(9), at: at(9) } }
        assert.deepStrictEqual(yield* gateway.commit([call, replay]), [
          { settlement: "settled", record: "Recorded" },
          { settlement: "not_pending", record: "Duplicate" }
        ])
        assert.deepStrictEqual(yield* ledger.balances(account.id), [{ machine_id: null, posted: credits(9), held: 0n }])
        assert.deepStrictEqual(yield* usage.byRef(request.ref), call.record)
        // the per-day rollups count the call once
        assert.deepStrictEqual(yield* usage.report(allDays(account.id), "model"), reportOf([call.record], allDays(account.id), "model"))
        yield* assertConsistent(account.id)
      }))

    it.effect("a record of a ref that exists is Duplicate, and its settlement still applies once", () =>
      Effect.gen(function*() {
        const gateway = yield* GatewayStore
        const ledger = yield* LedgerStore
        const usage = yield* UsageStore
        const { account, key } = yield* accountWithKey()
        yield* fund(account.id, null, credits(10))
        const request = yield* ordered(account.id, null, credits(2))
        const call = yield* meteredCall(key, request, yield* admitReserved(key, request), credits(1.25))
        const earlier = { ...call.record, credits: 1n, at: at(1) }
        assert.strictEqual(yield* usage.record(earlier), "Recorded")
        assert.deepStrictEqual(yield* gateway.commit([call]), [{ settlement: "settled", record: "Duplicate" }])
        assert.deepStrictEqual(yield* usage.byRef(request.ref), earlier)
        assert.deepStrictEqual(yield* ledger.balances(account.id), [
          { machine_id: null, posted: credits(8.75), held: 0n }
        ])
        yield* assertConsistent(account.id)
      }))

    it.effect("concurrent batches of distinct calls on the same accounts, with admits racing them: no update lost", () =>
      Effect.gen(function*() {
        const gateway = yield* GatewayStore
        const ledger = yield* LedgerStore
        const usage = yield* UsageStore
        // A few rounds: lock-order faults between batches (and admits) show up as deadlocks only
        // now and then.
        for (let round = 0; round < 3; round++) {
          const m = yield* freshMachine
          const owners = [yield* accountWithKey(), yield* accountWithKey()]
          for (const { account } of owners) {
            yield* fund(account.id, m, credits(5))
            yield* fund(account.id, null, credits(20))
          }
          // 8 calls per account, 1 credit each: 5 held on m, then 3 account-wide.
          const calls: Array<Metered> = []
          for (let i = 0; i < 16; i++) {
            const { key } = owners[i % 2]!
            const request = yield* ordered(key.account_id, m, credits(1))
            calls.push(yield* meteredCall(key, request, yield* admitReserved(key, request), credits(0.5) + BigInt(i)))
          }
          const batches = [0, 1, 2, 3].map((b) => calls.filter((_, i) => i % 4 === b).reverse())
          const admits = yield* Effect.all(
            Array.from({ length: 16 }, (_, i) => ordered(owners[i % 2]!.key.account_id, m, credits(1)))
          )
          const [committed, admitted] = yield* Effect.all([
            Effect.all(batches.map((batch) => gateway.commit(batch)), unbounded),
            Effect.all(admits.map((reservation) => {
              const { key } = owners.find((o) => o.account.id === reservation.account_id)!
              return admitOne(gateway, admissionOf(key, { reservation }))
            }), unbounded)
          ], unbounded)
          for (const r of committed.flat()) assert.deepStrictEqual(r, { settlement: "settled", record: "Recorded" })
          for (const [o, { account }] of owners.entries()) {
            const charged = calls.filter((_, i) => i % 2 === o).reduce((sum, c) => sum + c.settlement!.charged, 0n)
            const reserved = admits.filter((r, i) => {
              const result = admitted[i]!
              return r.account_id === account.id && result._tag === "Admitted" && result.reserved?._tag === "reserved"
            })
            const balances = yield* ledger.balances(account.id)
            assert.strictEqual(balances.reduce((sum, x) => sum + x.posted, 0n), credits(25) - charged)
            assert.strictEqual(balances.reduce((sum, x) => sum + x.held, 0n), credits(reserved.length))
            for (const b of balances) assert.isTrue(b.held <= b.posted, `overspent: ${JSON.stringify(b, jsonBigint)}`)
            assert.deepStrictEqual(
              (yield* ledger.pending(account.id)).map((r) => r.ref).sort(),
              reserved.map((r) => r.ref).sort()
            )
            yield* assertConsistent(account.id)
          }
          for (const result of admitted) assert.strictEqual(result._tag, "Admitted")
          assert.deepStrictEqual(yield* Effect.forEach(calls, (c) => usage.byRef(c.record.ref)), calls.map((c) => c.record))
          // the rollups of concurrent batches of one account's key, model and day: none lost
          for (const { account } of owners) {
            const records = calls.map((c) => c.record)
            assert.deepStrictEqual(yield* usage.report(allDays(account.id), "key"), reportOf(records, allDays(account.id), "key"))
          }
        }
      }))

    it.effect("an empty batch answers []", () =>
      Effect.gen(function*() {
        assert.deepStrictEqual(yield* (yield* GatewayStore).commit([]), [])
      }))

    it.effect("a batch holding a record that breaks the rules is a defect and meters nothing", () =>
      Effect.gen(function*() {
        const gateway = yield* GatewayStore
        const usage = yield* UsageStore
        const { account, key } = yield* accountWithKey()
        yield* fund(account.id, null, credits(10))
        const good = yield* ordered(account.id, null, credits(2))
        const goodCall = yield* meteredCall(key, good, yield* admitReserved(key, good), credits(1))
        const bad = yield* ordered(account.id, null, credits(2))
        const badHint = yield* admitReserved(key, bad)
        const badCall = yield* meteredCall(key, bad, badHint, credits(1), { quantity: -1n })
        const refs = [good.ref, bad.ref]
        const before = yield* snapshot(account.id, refs)
        yield* assertDies(gateway.commit([badCall]), "negative quantity")
        yield* assertDies(gateway.commit([goodCall, badCall]), "negative quantity after a good call")
        yield* assertDies(
          gateway.commit([{ settlement: undefined, record: { ...badCall.record, quantity: 1n, credits: -1n } }]),
          "negative credits"
        )
        assert.deepStrictEqual(yield* snapshot(account.id, refs), before)
        // Each call is still pending and meters as usual afterwards.
        const fixed = yield* meteredCall(key, bad, badHint, credits(1))
        assert.deepStrictEqual(yield* gateway.commit([goodCall, fixed]), [
          { settlement: "settled", record: "Recorded" },
          { settlement: "settled", record: "Recorded" }
        ])
        assert.deepStrictEqual(yield* usage.byRef(bad.ref), fixed.record)
        yield* assertConsistent(account.id)
      }))

    it.effect("a settlement charging another account is a defect and charges nothing", () =>
      Effect.gen(function*() {
        const gateway = yield* GatewayStore
        const { account, key } = yield* accountWithKey()
        const { account: other } = yield* accountWithKey()
        yield* fund(account.id, null, credits(10))
        yield* fund(other.id, null, credits(10))
        const request = yield* ordered(account.id, null, credits(2))
        yield* admitReserved(key, request)
        const call = yield* meteredCall(key, request, { account_id: other.id, allocations: [{ machine_id: null, amount: credits(2) }] }, credits(1))
        const before = { mine: yield* snapshot(account.id, [request.ref]), theirs: yield* snapshot(other.id) }
        yield* assertDies(gateway.commit([call]), "entry of another account")
        assert.deepStrictEqual({ mine: yield* snapshot(account.id, [request.ref]), theirs: yield* snapshot(other.id) }, before)
      }))
  })
}
