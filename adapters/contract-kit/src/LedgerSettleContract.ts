/**
 * The ledger store contract (LedgerContract.ts): a reservation settled, voided or expired, each
 * once, its holds released and what it charged posted.
 */
import { assert, describe, type Vitest } from "@effect/vitest"
import { Effect } from "effect"
import { LedgerStore, usageEntries } from "@model-platform/core/ledger"
import { generateId } from "@model-platform/core/kernel"
import {
  y2k,
  credits,
  unbounded,
  freshAccount,
  freshMachine,
  fund,
  hold,
  usage,
  scope,
  snapshot,
  assertConsistent,
  expectedReservation
} from "./LedgerContractSupport.ts"
import { assertDies } from "./ContractSupport.ts"
import { at } from "./SampleRecords.ts"

export const settleTests = (it: Vitest.MethodsNonLive<LedgerStore>) => {
  describe("settle, void and expire", () => {
    it.effect("settle releases the holds, posts the usage and records the totals; once", () =>
      Effect.gen(function*() {
        const store = yield* LedgerStore
        const account = yield* freshAccount
        const machine = yield* freshMachine
        yield* fund(account, machine, credits(4))
        yield* fund(account, null, credits(10))
        const r = yield* hold(account, machine, [
          { machine_id: machine, amount: credits(4) },
          { machine_id: null, amount: credits(2) }
        ])
        const entries = yield* usage(r, [{ machine_id: machine, amount: credits(4) }, {
          machine_id: null,
          amount: 500_000n
        }])
        const settlement = { ref: r.ref, at: at(2), charged: 4_500_000n, excess: 0n, entries }
        assert.strictEqual(yield* store.settle(settlement), "settled")
        assert.deepStrictEqual(
          yield* store.reservation(r.ref),
          expectedReservation(r, { status: "settled", finished_at: at(2), charged: 4_500_000n, excess: 0n })
        )
        assert.deepStrictEqual(yield* store.balances(account), [
          { machine_id: null, posted: 9_500_000n, held: 0n },
          { machine_id: machine, posted: 0n, held: 0n }
        ])
        assert.deepStrictEqual((yield* store.entries(account)).slice(0, 2), [...entries].reverse())
        assert.deepStrictEqual(yield* store.pending(account), [])
        yield* assertConsistent(account)

        // Exactly once: a second settle (even with other charges) or a void changes nothing.
        const before = yield* snapshot(account, [r.ref])
        assert.strictEqual(yield* store.settle(settlement), "not_pending")
        const other = yield* usage(r, [{ machine_id: null, amount: credits(1) }])
        assert.strictEqual(yield* store.settle({ ...settlement, charged: credits(1), entries: other }), "not_pending")
        assert.strictEqual(yield* store.void(r.ref, at(3)), "not_pending")
        assert.deepStrictEqual(yield* snapshot(account, [r.ref]), before)
      }))

    it.effect("a settlement with excess takes the account-wide balance below zero and records it", () =>
      Effect.gen(function*() {
        const store = yield* LedgerStore
        const account = yield* freshAccount
        yield* fund(account, null, credits(1))
        const r = yield* hold(account, null, [{ machine_id: null, amount: credits(1) }])
        const entries = yield* usage(r, [{ machine_id: null, amount: credits(3) }])
        assert.strictEqual(
          yield* store.settle({ ref: r.ref, at: at(2), charged: credits(3), excess: credits(2), entries }),
          "settled"
        )
        assert.deepStrictEqual(yield* store.balances(account), [{ machine_id: null, posted: -credits(2), held: 0n }])
        assert.strictEqual((yield* store.reservation(r.ref))?.excess, credits(2))
        yield* assertConsistent(account)
      }))

    it.effect("a settlement charging nothing finishes the reservation and writes no entry", () =>
      Effect.gen(function*() {
        const store = yield* LedgerStore
        const account = yield* freshAccount
        yield* fund(account, null, credits(1))
        const r = yield* hold(account, null, [{ machine_id: null, amount: credits(1) }])
        assert.strictEqual(yield* store.settle({ ref: r.ref, at: at(2), charged: 0n, excess: 0n, entries: [] }), "settled")
        assert.deepStrictEqual(yield* store.balances(account), [{ machine_id: null, posted: credits(1), held: 0n }])
        assert.strictEqual((yield* store.entries(account)).length, 1)
      }))

    it.effect("void releases everything, once; a settle after it changes nothing", () =>
      Effect.gen(function*() {
        const store = yield* LedgerStore
        const account = yield* freshAccount
        const machine = yield* freshMachine
        yield* fund(account, machine, credits(2))
        yield* fund(account, null, credits(2))
        const initial = yield* snapshot(account)
        const r = yield* hold(account, machine, [
          { machine_id: machine, amount: credits(2) },
          { machine_id: null, amount: credits(1) }
        ])
        assert.strictEqual(yield* store.void(r.ref, at(5)), "voided")
        assert.deepStrictEqual(yield* snapshot(account), initial)
        assert.deepStrictEqual(yield* store.reservation(r.ref), expectedReservation(r, { status: "voided", finished_at: at(5) }))
        const before = yield* snapshot(account, [r.ref])
        assert.strictEqual(yield* store.void(r.ref, at(6)), "not_pending")
        const entries = yield* usage(r, [{ machine_id: null, amount: credits(1) }])
        assert.strictEqual(
          yield* store.settle({ ref: r.ref, at: at(6), charged: credits(1), excess: 0n, entries }),
          "not_pending"
        )
        assert.deepStrictEqual(yield* snapshot(account, [r.ref]), before)
      }))

    it.effect("settle and void of an unknown ref are not pending", () =>
      Effect.gen(function*() {
        const store = yield* LedgerStore
        const ref = yield* generateId("usage")
        assert.strictEqual(yield* store.void(ref, at(1)), "not_pending")
        assert.strictEqual(yield* store.settle({ ref, at: at(1), charged: 0n, excess: 0n, entries: [] }), "not_pending")
        assert.isUndefined(yield* store.reservation(ref))
      }))

    it.effect("a settlement breaking the rules is a defect and leaves the reservation pending", () =>
      Effect.gen(function*() {
        const store = yield* LedgerStore
        const account = yield* freshAccount
        yield* fund(account, "m_1", credits(2))
        yield* fund(account, "m_2", credits(2))
        yield* fund(account, null, credits(2))
        const r = yield* hold(account, "m_1", [{ machine_id: "m_1", amount: credits(1) }])
        const before = yield* snapshot(account, [r.ref])
        const otherMachine = yield* usage(r, [{ machine_id: "m_2", amount: credits(1) }])
        yield* assertDies(
          store.settle({ ref: r.ref, at: at(2), charged: credits(1), excess: 0n, entries: otherMachine }),
          "charging credits pinned to another machine"
        )
        const positive = (yield* usage(r, [{ machine_id: null, amount: credits(1) }])).map((e) => ({ ...e, amount: -e.amount }))
        yield* assertDies(
          store.settle({ ref: r.ref, at: at(2), charged: credits(1), excess: 0n, entries: positive }),
          "a positive usage entry"
        )
        const otherAccount = (yield* usage(r, [{ machine_id: null, amount: 1n }])).map((e) => ({ ...e, account_id: "acct_x" }))
        yield* assertDies(
          store.settle({ ref: r.ref, at: at(2), charged: 1n, excess: 0n, entries: otherAccount }),
          "an entry of another account"
        )
        assert.deepStrictEqual(yield* snapshot(account, [r.ref]), before)
      }))

    it.effect("expire finishes only pending reservations whose expires_at has passed, once", () =>
      Effect.gen(function*() {
        const store = yield* LedgerStore
        const account = yield* freshAccount
        yield* fund(account, null, credits(10))
        const before = yield* hold(account, null, [{ machine_id: null, amount: credits(1) }], y2k(1_000))
        const exactly = yield* hold(account, null, [{ machine_id: null, amount: credits(2) }], y2k(2_000))
        const later = yield* hold(account, null, [{ machine_id: null, amount: credits(3) }], y2k(2_001))
        const settled = yield* hold(account, null, [{ machine_id: null, amount: credits(4) }], y2k(500))
        const entries = yield* usage(settled, [{ machine_id: null, amount: credits(1) }])
        yield* store.settle({ ref: settled.ref, at: at(2), charged: credits(1), excess: 0n, entries })

        const expired = yield* store.expire(y2k(2_000))
        assert.includeMembers([...expired], [before.ref, exactly.ref])
        assert.notInclude(expired, later.ref)
        assert.notInclude(expired, settled.ref)
        assert.deepStrictEqual(
          yield* store.reservation(before.ref),
          expectedReservation(before, { status: "expired", finished_at: y2k(2_000) })
        )
        assert.strictEqual((yield* store.reservation(exactly.ref))?.status, "expired")
        assert.strictEqual((yield* store.reservation(later.ref))?.status, "pending")
        assert.strictEqual((yield* store.reservation(settled.ref))?.status, "settled")
        assert.deepStrictEqual(scope(yield* store.balances(account), null), {
          machine_id: null,
          posted: credits(9),
          held: credits(3)
        })
        yield* assertConsistent(account)

        // Once: a second expire or a late settle changes nothing.
        const snap = yield* snapshot(account, [before.ref, exactly.ref])
        const again = yield* store.expire(y2k(2_000))
        assert.notInclude(again, before.ref)
        assert.notInclude(again, exactly.ref)
        const late = yield* usage(before, [{ machine_id: null, amount: credits(1) }])
        assert.strictEqual(
          yield* store.settle({ ref: before.ref, at: at(3), charged: credits(1), excess: 0n, entries: late }),
          "not_pending"
        )
        assert.strictEqual(yield* store.void(exactly.ref, at(3)), "not_pending")
        assert.deepStrictEqual(yield* snapshot(account, [before.ref, exactly.ref]), snap)
      }))

    it.effect("concurrent settles and voids of one reservation: exactly one wins", () =>
      Effect.gen(function*() {
        const store = yield* LedgerStore
        const account = yield* freshAccount
        yield* fund(account, null, credits(10))
        const r = yield* hold(account, null, [{ machine_id: null, amount: credits(5) }])
        const attempts = yield* Effect.all(Array.from({ length: 10 }, (_, i) =>
          Effect.map(usage(r, [{ machine_id: null, amount: credits(i + 1) }]), (entries) =>
            i % 3 === 0
              ? store.void(r.ref, at(3))
              : store.settle({
                ref: r.ref,
                at: at(3),
                charged: credits(i + 1),
                excess: i + 1 > 5 ? credits(i + 1 - 5) : 0n,
                entries
              }))))
        const results = yield* Effect.all(attempts, unbounded)
        assert.strictEqual(results.filter((x) => x !== "not_pending").length, 1)
        const usageEntries = (yield* store.entries(account)).filter((e) => e.type === "usage")
        assert.isAtMost(usageEntries.length, 1)
        assert.strictEqual(scope(yield* store.balances(account), null).held, 0n)
        yield* assertConsistent(account)
      }))

    it.effect("expiry racing with settle: exactly one finishes the reservation", () =>
      Effect.gen(function*() {
        const store = yield* LedgerStore
        const account = yield* freshAccount
        yield* fund(account, null, credits(10))
        const reservations = yield* Effect.all(
          Array.from({ length: 8 }, () => hold(account, null, [{ machine_id: null, amount: credits(1) }], y2k(10)))
        )
        const settles = yield* Effect.forEach(reservations, (r) =>
          Effect.map(usage(r, [{ machine_id: null, amount: 500_000n }]), (entries) =>
            store.settle({ ref: r.ref, at: at(3), charged: 500_000n, excess: 0n, entries })))
        const [expired, settled] = yield* Effect.all([store.expire(y2k(20)), Effect.all(settles, unbounded)], unbounded)
        reservations.forEach((r, i) => {
          const wasExpired = expired.includes(r.ref)
          assert.notStrictEqual(wasExpired, settled[i] === "settled", `${r.ref}: expired and settled, or neither`)
        })
        const nSettled = settled.filter((s) => s === "settled").length
        assert.deepStrictEqual(scope(yield* store.balances(account), null), {
          machine_id: null,
          posted: credits(10) - BigInt(nSettled) * 500_000n,
          held: 0n
        })
        yield* assertConsistent(account)
      }))
  })
}
