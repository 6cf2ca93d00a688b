/**
 * The credit totals part of the ledger store contract (core/src/ledger/LedgerStore.ts
 * `creditTotals`, statements: docs/billing.md "Statements"), run by `ledgerStoreContract` on every
 * store: credits summed per UTC month of created_at and type, usage entries left out, a duplicate
 * ref counted once, months cut at the UTC instant, accounts apart; equal to `creditTotalsOf`.
 */
import { assert, describe, type Vitest } from "@effect/vitest"
import { Effect } from "effect"
import { type CreditEntryType, creditTotalsOf, type LedgerEntry, LedgerStore, usageEntries } from "@model-platform/core/ledger"
import { generateId } from "@model-platform/core/kernel"
import type { Timestamp } from "@model-platform/core/kernel"

const NEVER = "2100-01-01T00:00:00.000Z" as Timestamp

const credit = Effect.fnUntraced(function*(
  accountId: string,
  amount: bigint,
  createdAt: string,
  type: CreditEntryType = "credit_added",
  ref?: string
) {
  const entry: LedgerEntry = {
    id: yield* generateId("led"),
    account_id: accountId,
    machine_id: null,
    amount,
    type,
    ref: ref ?? (yield* generateId("order")),
    created_at: createdAt as Timestamp
  }
  return entry
})

export const creditTotalsTests = (it: Vitest.MethodsNonLive<LedgerStore>) => {
  describe("creditTotals", () => {
    it.effect("sums credits per UTC month and type, leaves usage out, counts a duplicate once", () =>
      Effect.gen(function*() {
        const store = yield* LedgerStore
        const account = yield* generateId("acct")
        const other = yield* generateId("acct")
        const posted = [
          yield* credit(account, 5_000_000n, "2025-12-31T23:59:59.999Z"),
          yield* credit(account, 7n, "2026-01-01T00:00:00.000Z"),
          yield* credit(account, 2n ** 62n, "2026-01-31T12:00:00.000Z"),
          yield* credit(account, 3_000_000n, "2026-01-15T00:00:00.000Z", "plan_credit_granted"),
          yield* credit(account, 1n, "2026-03-02T00:00:00.000Z", "plan_credit_granted")
        ]
        for (const entry of posted) assert.strictEqual(yield* store.post(entry), "posted")
        // A replay of a ref, whatever it carries, adds nothing.
        const replay = yield* credit(account, 999n, "2026-02-01T00:00:00.000Z", "credit_added", posted[0]!.ref)
        assert.strictEqual(yield* store.post(replay), "duplicate")
        yield* store.post(yield* credit(other, 11n, "2026-01-02T00:00:00.000Z"))
        // A settled call's usage entry is not a credit.
        const ref = yield* generateId("usage")
        const at = "2026-01-20T00:00:00.000Z" as Timestamp
        const allocations = [{ machine_id: null, amount: 1_000n }]
        assert.strictEqual(
          yield* store.reserve({ ref, account_id: account, machine_id: null, allocations, created_at: at, expires_at: NEVER }),
          "reserved"
        )
        const entries = yield* usageEntries(account, ref, allocations, at)
        assert.strictEqual(yield* store.settle({ ref, at, charged: 1_000n, excess: 0n, entries }), "settled")

        const totals = yield* store.creditTotals(account)
        assert.deepStrictEqual(totals, [
          { month: "2025-12", type: "credit_added", amount: 5_000_000n },
          { month: "2026-01", type: "credit_added", amount: 2n ** 62n + 7n },
          { month: "2026-01", type: "plan_credit_granted", amount: 3_000_000n },
          { month: "2026-03", type: "plan_credit_granted", amount: 1n }
        ])
        assert.deepStrictEqual(totals, creditTotalsOf(yield* store.entries(account)))
        assert.deepStrictEqual(yield* store.creditTotals(other), [{ month: "2026-01", type: "credit_added", amount: 11n }])
        assert.deepStrictEqual(yield* store.creditTotals(yield* generateId("acct")), [])
      }))

    it.effect("concurrent posts to one month lose no credit", () =>
      Effect.gen(function*() {
        const store = yield* LedgerStore
        const account = yield* generateId("acct")
        const entries = yield* Effect.forEach(
          Array.from({ length: 12 }, (_, i) => i),
          (i) => credit(account, BigInt(i + 1), `2026-05-0${1 + (i % 9)}T00:00:00.000Z`)
        )
        yield* Effect.forEach(entries, store.post, { concurrency: "unbounded" })
        assert.deepStrictEqual(yield* store.creditTotals(account), [{ month: "2026-05", type: "credit_added", amount: 78n }])
      }))
  })
}
