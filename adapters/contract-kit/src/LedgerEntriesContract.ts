/**
 * The ledger store contract (LedgerContract.ts): entries and balances, and credits pinned to a
 * machine kept apart from other machines' and the account-wide scope.
 */
import { assert, describe, type Vitest } from "@effect/vitest"
import { Effect } from "effect"
import { LedgerStore } from "@model-platform/core/ledger"
import { generateId } from "@model-platform/core/kernel"
import {
  credits,
  unbounded,
  freshAccount,
  freshMachine,
  creditEntry,
  fund,
  newReservation,
  hold,
  usage,
  scope,
  snapshot,
  assertConsistent,
  expectedReservation
} from "./LedgerContractSupport.ts"
import { assertDies } from "./ContractSupport.ts"
import { at } from "./SampleRecords.ts"

export const entriesTests = (it: Vitest.MethodsNonLive<LedgerStore>) => {
  describe("entries and balances", () => {
    it.effect("post then entries and balances return every field, exactly (beyond 2^53 too)", () =>
      Effect.gen(function*() {
        const store = yield* LedgerStore
        const account = yield* freshAccount
        const machine = yield* freshMachine
        const big = 2n ** 62n + 1n
        const a = yield* creditEntry(account, { amount: 1n, created_at: at(1) })
        const b = yield* creditEntry(account, {
          machine_id: machine,
          amount: big,
          type: "plan_credit_granted",
          ref: "plan:ünïcödé 'quoted' \"ref\"",
          created_at: at(2)
        })
        assert.strictEqual(yield* store.post(a), "posted")
        assert.strictEqual(yield* store.post(b), "posted")
        assert.deepStrictEqual(yield* store.entries(account), [b, a])
        assert.deepStrictEqual(yield* store.balances(account), [
          { machine_id: null, posted: 1n, held: 0n },
          { machine_id: machine, posted: big, held: 0n }
        ])
      }))

    it.effect("an unknown account has no scopes, entries or pending reservations", () =>
      Effect.gen(function*() {
        const store = yield* LedgerStore
        const account = yield* freshAccount
        assert.deepStrictEqual(yield* snapshot(account), { balances: [], entries: [], pending: [], reservations: [] })
        assert.isUndefined(yield* store.reservation(yield* generateId("usage")))
      }))

    it.effect("balances list account-wide first, then pinned scopes by machine id", () =>
      Effect.gen(function*() {
        const store = yield* LedgerStore
        const account = yield* freshAccount
        for (const machine of ["m_c", "m_a", null, "m_b"]) yield* fund(account, machine, credits(1))
        assert.deepStrictEqual((yield* store.balances(account)).map((b) => b.machine_id), [null, "m_a", "m_b", "m_c"])
      }))

    it.effect("a ref already posted changes nothing, whatever the replay carries", () =>
      Effect.gen(function*() {
        const store = yield* LedgerStore
        const account = yield* freshAccount
        const first = yield* fund(account, null, credits(5))
        const before = yield* snapshot(account)
        for (
          const replay of [
            { ...first },
            { ...first, id: yield* generateId("led") },
            { ...first, id: yield* generateId("led"), amount: credits(500), machine_id: "m_other" },
            { ...first, id: yield* generateId("led"), type: "plan_credit_granted" as const, created_at: at(9) }
          ]
        ) {
          assert.strictEqual(yield* store.post(replay), "duplicate")
        }
        assert.deepStrictEqual(yield* snapshot(account), before)
        // Refs are unique per account: another account may use the same one.
        const other = yield* freshAccount
        assert.strictEqual(yield* store.post({ ...first, id: yield* generateId("led"), account_id: other }), "posted")
        assert.deepStrictEqual(yield* snapshot(account), before)
      }))

    it.effect("concurrent posts of one ref: exactly one is posted", () =>
      Effect.gen(function*() {
        const store = yield* LedgerStore
        const account = yield* freshAccount
        const ref = yield* generateId("order")
        const attempts = yield* Effect.all(
          Array.from({ length: 20 }, (_, i) => creditEntry(account, { ref, amount: credits(i + 1) }))
        )
        const results = yield* Effect.all(attempts.map(store.post), unbounded)
        assert.strictEqual(results.filter((r) => r === "posted").length, 1)
        const winner = attempts[results.indexOf("posted")]!
        assert.deepStrictEqual(yield* store.entries(account), [winner])
        assert.deepStrictEqual(yield* store.balances(account), [{ machine_id: null, posted: winner.amount, held: 0n }])
      }))

    it.effect("concurrent posts to one scope lose no update", () =>
      Effect.gen(function*() {
        const store = yield* LedgerStore
        const account = yield* freshAccount
        const entries = yield* Effect.all(
          Array.from({ length: 25 }, (_, i) => creditEntry(account, { amount: BigInt(i + 1) * 1_000_001n }))
        )
        yield* Effect.all(entries.map(store.post), unbounded)
        assert.strictEqual(scope(yield* store.balances(account), null).posted, 325n * 1_000_001n)
        yield* assertConsistent(account)
      }))

    it.effect("entries are newest first; equal times put the last inserted first; limit cuts", () =>
      Effect.gen(function*() {
        const store = yield* LedgerStore
        const account = yield* freshAccount
        const e1 = yield* fund(account, null, 1n, at(1_000))
        const e3 = yield* fund(account, null, 3n, at(3_000))
        const e2a = yield* fund(account, null, 2n, at(2_000))
        const e2b = yield* fund(account, "m_x", 4n, at(2_000))
        assert.deepStrictEqual(yield* store.entries(account), [e3, e2b, e2a, e1])
        assert.deepStrictEqual(yield* store.entries(account, 2), [e3, e2b])
        assert.deepStrictEqual(yield* store.entries(account, 1), [e3])
      }))

    it.effect("posting usage, a zero or negative credit, or an empty machine id is a defect", () =>
      Effect.gen(function*() {
        const store = yield* LedgerStore
        const account = yield* freshAccount
        yield* fund(account, null, credits(1))
        const before = yield* snapshot(account)
        yield* assertDies(store.post(yield* creditEntry(account, { amount: 0n })), "zero credit")
        yield* assertDies(store.post(yield* creditEntry(account, { amount: -5n })), "negative credit")
        yield* assertDies(store.post(yield* creditEntry(account, { amount: 5n, machine_id: "" })), "empty machine id")
        const usageEntry = { ...(yield* creditEntry(account, { amount: 5n })), type: "usage" as const, amount: -5n }
        yield* assertDies(store.post(usageEntry), "usage posted as a credit")
        assert.deepStrictEqual(yield* snapshot(account), before)
      }))

    it.effect("a reversal (credit_reversed, negative) takes credits back once per ref and may take its scope below zero", () =>
      Effect.gen(function*() {
        const store = yield* LedgerStore
        const account = yield* freshAccount
        yield* fund(account, "m1", credits(3))
        const reversal = { ...(yield* creditEntry(account, { amount: -credits(5), machine_id: "m1" })), type: "credit_reversed" as const }
        assert.strictEqual(yield* store.post(reversal), "posted")
        assert.strictEqual(yield* store.post({ ...reversal, id: yield* generateId("led") }), "duplicate")
        assert.deepStrictEqual(scope(yield* store.balances(account), "m1"), { machine_id: "m1", posted: -credits(2), held: 0n })
        assert.deepStrictEqual((yield* store.entries(account, 1))[0], reversal)
        // Nothing can be held from a scope below zero.
        const refused = yield* store.reserve({
          ref: yield* generateId("usage"), account_id: account, machine_id: "m1",
          allocations: [{ machine_id: "m1", amount: 1n }], created_at: at(3), expires_at: at(60)
        })
        assert.strictEqual(refused, "insufficient")
        assert.deepStrictEqual(
          (yield* store.creditTotals(account)).find((t) => t.type === "credit_reversed")?.amount,
          -credits(5)
        )
        yield* assertDies(store.post({ ...reversal, id: yield* generateId("led"), ref: yield* generateId("re"), amount: credits(1) }), "positive reversal")
        yield* assertConsistent(account)
      }))

    it.effect("a duplicate entry id is a defect", () =>
      Effect.gen(function*() {
        const store = yield* LedgerStore
        const account = yield* freshAccount
        const entry = yield* fund(account, null, credits(1))
        yield* assertDies(store.post({ ...entry, ref: yield* generateId("order") }), "duplicate id")
        assert.deepStrictEqual(yield* store.entries(account), [entry])
      }))
  })

  describe("scopes", () => {
    it.effect("credits pinned to one machine are isolated from other machines", () =>
      Effect.gen(function*() {
        const store = yield* LedgerStore
        const account = yield* freshAccount
        const m1 = yield* freshMachine
        const m2 = yield* freshMachine
        yield* fund(account, m1, credits(5))
        yield* fund(account, m2, credits(7))
        // A call on m2 cannot reach m1's credits (and the store refuses even to try).
        yield* assertDies(store.reserve(yield* newReservation(account, m2, [{ machine_id: m1, amount: 1n }])), "m1 for m2")
        // m2's own scope: its 7 credits, no more.
        const tooMuch = yield* newReservation(account, m2, [{ machine_id: m2, amount: credits(8) }])
        assert.strictEqual(yield* store.reserve(tooMuch), "insufficient")
        const r = yield* hold(account, m2, [{ machine_id: m2, amount: credits(7) }])
        const entries = yield* usage(r, [{ machine_id: m2, amount: credits(6) }])
        assert.strictEqual(yield* store.settle({ ref: r.ref, at: at(2), charged: credits(6), excess: 0n, entries }), "settled")
        const balances = yield* store.balances(account)
        assert.deepStrictEqual(scope(balances, m1), { machine_id: m1, posted: credits(5), held: 0n })
        assert.deepStrictEqual(scope(balances, m2), { machine_id: m2, posted: credits(1), held: 0n })
        assert.isUndefined(balances.find((b) => b.machine_id === null))
        yield* assertConsistent(account)
      }))

    it.effect("accounts are isolated: one account's reservations never touch another's credits", () =>
      Effect.gen(function*() {
        const store = yield* LedgerStore
        const a = yield* freshAccount
        const b = yield* freshAccount
        yield* fund(a, null, credits(1))
        const before = yield* snapshot(a)
        const r = yield* newReservation(b, null, [{ machine_id: null, amount: credits(1) }])
        assert.strictEqual(yield* store.reserve(r), "insufficient")
        assert.deepStrictEqual(yield* snapshot(a), before)
        assert.deepStrictEqual(yield* store.pending(b), [])
      }))

    it.effect("pending lists the account's pending reservations, oldest first", () =>
      Effect.gen(function*() {
        const store = yield* LedgerStore
        const account = yield* freshAccount
        yield* fund(account, null, credits(10))
        const r1 = yield* hold(account, null, [{ machine_id: null, amount: 1n }])
        const r2 = yield* hold(account, null, [{ machine_id: null, amount: 2n }])
        const r3 = yield* hold(account, null, [{ machine_id: null, amount: 3n }])
        yield* store.void(r2.ref, at(4))
        assert.deepStrictEqual(yield* store.pending(account), [expectedReservation(r1), expectedReservation(r3)])
      }))
  })
}
