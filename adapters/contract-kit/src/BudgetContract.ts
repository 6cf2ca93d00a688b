/**
 * The budget part of the ledger store contract (core/src/ledger/LedgerStore.ts `BudgetClaim`,
 * docs/billing.md "Monthly limits"), run by `ledgerStoreContract` on every store: limits set,
 * removed and defaulted; a refusal changes nothing; settle moves held to spent, void and expiry
 * release; months, keys and accounts are independent; concurrent reserves never pass a limit.
 * The interleaving property is in BudgetProperty.ts.
 *
 * As in LedgerContract.ts, every test works on fresh accounts and never assumes an empty store;
 * reservations that must stay pending expire in 2100, the expiry test works in 2000 (y2k).
 */
import { assert, describe, type Vitest } from "@effect/vitest"
import { Effect } from "effect"
import {
  type BudgetClaim,
  type BudgetState,
  LedgerStore,
  type NewReservation,
  type OrderedReservation,
  reservedAmount,
  reserveOrdered,
  usageEntries
} from "@model-platform/core/ledger"
import { generateId, type Timestamp, toTimestamp } from "@model-platform/core/kernel"
import { assertDies, fundedAccount as fundedAt } from "./ContractSupport.ts"
import { at } from "./SampleRecords.ts"

const NEVER = toTimestamp(Date.UTC(2100, 0, 1))
const y2k = (ms: number): Timestamp => toTimestamp(Date.UTC(2000, 0, 1) + ms)
const MONTH = "2026-01"
const unbounded = { concurrency: "unbounded" } as const

const claim = (budget: string, default_limit: bigint | null = null, month = MONTH): BudgetClaim => ({
  budget,
  month,
  default_limit
})

/** A fresh account with `amount` account-wide credits. */
const fundedAccount = (amount: bigint) => fundedAt(amount, at(0))

/** An account-wide reservation of `amount` claiming `claims`. */
const budgeted = Effect.fnUntraced(function*(
  account: string,
  amount: bigint,
  claims: ReadonlyArray<BudgetClaim>,
  expiresAt: Timestamp = NEVER
) {
  const reservation: NewReservation = {
    ref: yield* generateId("usage"),
    account_id: account,
    machine_id: null,
    allocations: amount === 0n ? [] : [{ machine_id: null, amount }],
    created_at: at(1),
    expires_at: expiresAt,
    budgets: claims
  }
  return reservation
})

const reserveBudgeted = Effect.fnUntraced(function*(
  account: string,
  amount: bigint,
  claims: ReadonlyArray<BudgetClaim>,
  expiresAt: Timestamp = NEVER
) {
  const reservation = yield* budgeted(account, amount, claims, expiresAt)
  return { reservation, result: yield* (yield* LedgerStore).reserve(reservation) }
})

/** Reserves and checks it was accepted. */
const hold = Effect.fnUntraced(function*(
  account: string,
  amount: bigint,
  claims: ReadonlyArray<BudgetClaim>,
  expiresAt: Timestamp = NEVER
) {
  const { reservation, result } = yield* reserveBudgeted(account, amount, claims, expiresAt)
  assert.strictEqual(result, "reserved")
  return reservation
})

/** Settles an account-wide reservation at `charged` (above its amount: the rest is excess). */
const settle = Effect.fnUntraced(function*(reservation: NewReservation, charged: bigint) {
  const amount = reservedAmount(reservation.allocations)
  const entries = yield* usageEntries(
    reservation.account_id,
    reservation.ref,
    charged === 0n ? [] : [{ machine_id: null, amount: charged }],
    at(2)
  )
  const excess = charged > amount ? charged - amount : 0n
  return yield* (yield* LedgerStore).settle({ ref: reservation.ref, at: at(2), charged, excess, entries })
})

const state = (budget: string, limit: bigint | null, spent: bigint, held: bigint): BudgetState => ({
  budget,
  limit,
  spent,
  held
})

const assertBudgets = Effect.fnUntraced(function*(
  account: string,
  expected: ReadonlyArray<BudgetState>,
  month = MONTH
) {
  assert.deepStrictEqual(yield* (yield* LedgerStore).budgets(account, month), expected)
})

const everything = Effect.fnUntraced(function*(account: string, months: ReadonlyArray<string> = [MONTH]) {
  const store = yield* LedgerStore
  return {
    balances: yield* store.balances(account),
    pending: yield* store.pending(account),
    entries: yield* store.entries(account),
    budgets: yield* Effect.forEach(months, (month) => store.budgets(account, month))
  }
})


export const budgetTests = (it: Vitest.MethodsNonLive<LedgerStore>) => {
  describe("budgets", () => {
    it.effect("no limit set: the claim's default applies (null: none); spent and held are listed", () =>
      Effect.gen(function*() {
        const store = yield* LedgerStore
        const account = yield* fundedAccount(100n)
        const claims = [claim("account", 10n), claim("key:k")]
        yield* hold(account, 6n, claims)
        const { reservation: over, result } = yield* reserveBudgeted(account, 5n, claims)
        assert.strictEqual(result, "over_budget")
        assert.isUndefined(yield* store.reservation(over.ref))
        yield* hold(account, 4n, claims) // exactly the limit
        yield* assertBudgets(account, [state("account", null, 0n, 10n), state("key:k", null, 0n, 10n)])
        // The key's budget has no limit: only the account's refuses.
        assert.strictEqual((yield* reserveBudgeted(account, 1n, [claim("key:k")])).result, "reserved")
        assert.strictEqual((yield* reserveBudgeted(account, 1n, claims)).result, "over_budget")
        // A limit of 0 refuses any amount but 0 (nothing spent or held yet).
        const fresh = yield* fundedAccount(100n)
        assert.strictEqual((yield* reserveBudgeted(fresh, 1n, [claim("account", 0n)])).result, "over_budget")
        yield* hold(fresh, 0n, [claim("account", 0n)])
      }))

    it.effect("a limit set overrides the default, lower or higher; null removes it", () =>
      Effect.gen(function*() {
        const store = yield* LedgerStore
        const account = yield* fundedAccount(100n)
        const claims = [claim("account", 10n)]
        yield* store.setBudgetLimit(account, "account", 3n)
        yield* assertBudgets(account, [state("account", 3n, 0n, 0n)])
        assert.strictEqual((yield* reserveBudgeted(account, 4n, claims)).result, "over_budget")
        yield* hold(account, 3n, claims)
        yield* store.setBudgetLimit(account, "account", 20n)
        yield* hold(account, 17n, claims)
        assert.strictEqual((yield* reserveBudgeted(account, 1n, claims)).result, "over_budget")
        yield* assertBudgets(account, [state("account", 20n, 0n, 20n)])
        // Removed: the default (10) applies again, and 20 is held already.
        yield* store.setBudgetLimit(account, "account", null)
        yield* assertBudgets(account, [state("account", null, 0n, 20n)])
        assert.strictEqual((yield* reserveBudgeted(account, 0n, claims)).result, "over_budget")
        // Setting a limit on a budget nothing claimed yet lists it, removing it unlists it.
        yield* store.setBudgetLimit(account, "key:k1", 5n)
        yield* assertBudgets(account, [state("account", null, 0n, 20n), state("key:k1", 5n, 0n, 0n)])
        yield* store.setBudgetLimit(account, "key:k1", null)
        yield* assertBudgets(account, [state("account", null, 0n, 20n)])
      }))

    it.effect("over_budget changes nothing, and comes before the balance", () =>
      Effect.gen(function*() {
        const store = yield* LedgerStore
        const account = yield* fundedAccount(5n)
        yield* hold(account, 2n, [claim("account", 4n), claim("key:k", 4n)])
        const before = yield* everything(account)
        // Over the key's limit while the account's still fits: refused all the same, nothing held.
        yield* store.setBudgetLimit(account, "key:k", 2n)
        const afterLimit = yield* everything(account)
        const { reservation, result } = yield* reserveBudgeted(account, 1n, [claim("account", 4n), claim("key:k", 4n)])
        assert.strictEqual(result, "over_budget")
        assert.isUndefined(yield* store.reservation(reservation.ref))
        assert.deepStrictEqual(yield* everything(account), afterLimit)
        // Short of credits (3 left) and over the limit: over_budget.
        yield* store.setBudgetLimit(account, "key:k", null)
        assert.deepStrictEqual(yield* everything(account), before)
        assert.strictEqual((yield* reserveBudgeted(account, 4n, [claim("account", 4n)])).result, "over_budget")
        assert.strictEqual((yield* reserveBudgeted(account, 4n, [claim("account", 10n)])).result, "insufficient")
        assert.deepStrictEqual(yield* everything(account), before)
      }))

    it.effect("the reservation keeps its budgets (budget and month, in claim order), finished too", () =>
      Effect.gen(function*() {
        const store = yield* LedgerStore
        const account = yield* fundedAccount(10n)
        const r = yield* hold(account, 2n, [claim("key:k", 5n), claim("account", null)])
        const budgets = [{ budget: "key:k", month: MONTH }, { budget: "account", month: MONTH }]
        assert.deepStrictEqual((yield* store.reservation(r.ref))?.budgets, budgets)
        assert.deepStrictEqual((yield* store.pending(account))[0]?.budgets, budgets)
        assert.strictEqual(yield* settle(r, 1n), "settled")
        assert.deepStrictEqual((yield* store.reservation(r.ref))?.budgets, budgets)
        // None claimed: no `budgets` at all.
        const plain = yield* hold(account, 1n, [])
        assert.isFalse("budgets" in ((yield* store.reservation(plain.ref)) ?? {}))
      }))

    it.effect("settle moves the amount from held to what was charged (excess too); void and expiry release", () =>
      Effect.gen(function*() {
        const store = yield* LedgerStore
        const account = yield* fundedAccount(100n)
        const claims = [claim("account", 50n), claim("key:k", 20n)]
        const a = yield* hold(account, 5n, claims)
        const b = yield* hold(account, 5n, claims)
        const c = yield* hold(account, 4n, claims)
        const d = yield* hold(account, 3n, claims, y2k(1_000))
        yield* assertBudgets(account, [state("account", null, 0n, 17n), state("key:k", null, 0n, 17n)])
        assert.strictEqual(yield* settle(a, 3n), "settled")
        yield* assertBudgets(account, [state("account", null, 3n, 12n), state("key:k", null, 3n, 12n)])
        assert.strictEqual(yield* settle(b, 7n), "settled") // 2 of excess
        yield* assertBudgets(account, [state("account", null, 10n, 7n), state("key:k", null, 10n, 7n)])
        assert.strictEqual(yield* store.void(c.ref, at(3)), "voided")
        yield* assertBudgets(account, [state("account", null, 10n, 3n), state("key:k", null, 10n, 3n)])
        assert.include(yield* store.expire(y2k(1_000)), d.ref)
        yield* assertBudgets(account, [state("account", null, 10n, 0n), state("key:k", null, 10n, 0n)])
        // Finished once: a second settle, void or expiry changes no budget.
        const before = yield* everything(account)
        assert.strictEqual(yield* settle(a, 9n), "not_pending")
        assert.strictEqual(yield* store.void(b.ref, at(4)), "not_pending")
        assert.strictEqual(yield* settle(c, 1n), "not_pending")
        assert.notInclude(yield* store.expire(y2k(1_000)), d.ref)
        assert.deepStrictEqual(yield* everything(account), before)
        // A settlement charging 0 spends nothing.
        const e = yield* hold(account, 2n, claims)
        assert.strictEqual(yield* settle(e, 0n), "settled")
        yield* assertBudgets(account, [state("account", null, 10n, 0n), state("key:k", null, 10n, 0n)])
        // 10 spent of the key's 20: 10 more fit, 11 do not.
        assert.strictEqual((yield* reserveBudgeted(account, 11n, claims)).result, "over_budget")
        yield* hold(account, 10n, claims)
      }))

    it.effect("a lowered limit takes nothing back; it stops the month's later calls", () =>
      Effect.gen(function*() {
        const store = yield* LedgerStore
        const account = yield* fundedAccount(100n)
        const claims = [claim("account", null)]
        const a = yield* hold(account, 8n, claims)
        const b = yield* hold(account, 4n, claims)
        assert.strictEqual(yield* settle(a, 8n), "settled")
        yield* store.setBudgetLimit(account, "account", 5n)
        yield* assertBudgets(account, [state("account", 5n, 8n, 4n)])
        assert.deepStrictEqual(yield* store.balances(account), [{ machine_id: null, posted: 92n, held: 4n }])
        assert.strictEqual(yield* settle(b, 4n), "settled") // a settlement is never refused
        yield* assertBudgets(account, [state("account", 5n, 12n, 0n)])
        assert.strictEqual((yield* reserveBudgeted(account, 0n, claims)).result, "over_budget")
        yield* store.setBudgetLimit(account, "account", 13n)
        yield* hold(account, 1n, claims)
      }))

    it.effect("months, keys and accounts are independent", () =>
      Effect.gen(function*() {
        const store = yield* LedgerStore
        const account = yield* fundedAccount(100n)
        const other = yield* fundedAccount(100n)
        yield* store.setBudgetLimit(account, "key:a", 5n)
        const jan = yield* hold(account, 5n, [claim("account", 6n), claim("key:a")])
        // January's key:a is full; February's, key:b's and another account's are not.
        assert.strictEqual((yield* reserveBudgeted(account, 1n, [claim("key:a")])).result, "over_budget")
        yield* hold(account, 5n, [claim("account", 6n, "2026-02"), claim("key:a", null, "2026-02")])
        yield* hold(account, 1n, [claim("account", 6n), claim("key:b", 1n)])
        yield* hold(other, 5n, [claim("account", 6n), claim("key:a")])
        assert.strictEqual(yield* settle(jan, 2n), "settled")
        yield* assertBudgets(account, [
          state("account", null, 2n, 1n),
          state("key:a", 5n, 2n, 0n),
          state("key:b", null, 0n, 1n)
        ])
        yield* assertBudgets(account, [state("account", null, 0n, 5n), state("key:a", 5n, 0n, 5n)], "2026-02")
        yield* assertBudgets(account, [state("key:a", 5n, 0n, 0n)], "2025-12")
        yield* assertBudgets(other, [state("account", null, 0n, 5n), state("key:a", null, 0n, 5n)])
        // A limit is the budget's, whatever the month: set in one, it holds in the others.
        yield* store.setBudgetLimit(account, "key:a", 6n)
        yield* assertBudgets(account, [state("account", null, 0n, 5n), state("key:a", 6n, 0n, 5n)], "2026-02")
      }))

    it.effect("reserveOrdered (and reserveInOrder where the store has it) answers the first claim over, with its limit and use", () =>
      Effect.gen(function*() {
        const store = yield* LedgerStore
        const account = yield* fundedAccount(3n)
        yield* store.setBudgetLimit(account, "key:k", 4n)
        yield* hold(account, 2n, [claim("account", 10n), claim("key:k")])
        const request = (amount: bigint, budgets: ReadonlyArray<BudgetClaim>) =>
          Effect.map(generateId("usage"), (ref): OrderedReservation => ({
            ref,
            account_id: account,
            machine_id: null,
            scopes: [null],
            amount,
            created_at: at(1),
            expires_at: NEVER,
            budgets
          }))
        const paths = [reserveOrdered(store), ...(store.reserveInOrder === undefined ? [] : [store.reserveInOrder])]
        for (const reserve of paths) {
          const before = yield* everything(account)
          assert.deepStrictEqual(
            yield* reserve(yield* request(3n, [claim("account", 10n), claim("key:k")])),
            { _tag: "over_budget", budget: "key:k", limit: 4n, used: 2n }
          )
          // Both over: the first in claim order. Over and short of credits: over_budget.
          assert.deepStrictEqual(
            yield* reserve(yield* request(9n, [claim("account", 5n), claim("key:k")])),
            { _tag: "over_budget", budget: "account", limit: 5n, used: 2n }
          )
          assert.deepStrictEqual(
            yield* reserve(yield* request(2n, [claim("account", 10n), claim("key:k")])),
            { _tag: "insufficient", available: 1n }
          )
          assert.deepStrictEqual(yield* everything(account), before)
        }
        const fits = yield* request(1n, [claim("account", 10n), claim("key:k")])
        assert.deepStrictEqual(yield* reserveOrdered(store)(fits), {
          _tag: "reserved",
          allocations: [{ machine_id: null, amount: 1n }]
        })
        assert.deepStrictEqual((yield* store.reservation(fits.ref))?.budgets, [
          { budget: "account", month: MONTH },
          { budget: "key:k", month: MONTH }
        ])
        yield* assertBudgets(account, [state("account", null, 0n, 3n), state("key:k", 4n, 0n, 3n)])
      }))

    it.effect("claims and limits that break the rules are defects and change nothing", () =>
      Effect.gen(function*() {
        const store = yield* LedgerStore
        const account = yield* fundedAccount(10n)
        const before = yield* everything(account)
        const cases: ReadonlyArray<readonly [string, ReadonlyArray<BudgetClaim>]> = [
          ["an unknown budget", [claim("team")]],
          ["a key without an id", [claim("key:")]],
          ["a bad month", [claim("account", null, "2026-13")]],
          ["a month with a day", [claim("account", null, "2026-01-05")]],
          ["a negative default", [claim("account", -1n)]],
          ["a budget twice", [claim("account", 5n), claim("account", 6n)]]
        ]
        for (const [what, claims] of cases) {
          const r = yield* budgeted(account, 1n, claims)
          yield* assertDies(store.reserve(r), what)
          assert.isUndefined(yield* store.reservation(r.ref), what)
        }
        yield* assertDies(store.setBudgetLimit(account, "account", -1n), "a negative limit")
        yield* assertDies(store.setBudgetLimit(account, "acct", 1n), "an unknown budget's limit")
        assert.deepStrictEqual(yield* everything(account), before)
      }))

    it.effect("30 concurrent reserves against a limit of 10 never pass it", () =>
      Effect.gen(function*() {
        const store = yield* LedgerStore
        const account = yield* fundedAccount(1_000n)
        const claims = [claim("account", 10n), claim("key:k", 20n)]
        const reservations = yield* Effect.all(Array.from({ length: 30 }, () => budgeted(account, 1n, claims)))
        const results = yield* Effect.all(reservations.map(store.reserve), unbounded)
        assert.strictEqual(results.filter((r) => r === "reserved").length, 10)
        assert.strictEqual(results.filter((r) => r === "over_budget").length, 20)
        yield* assertBudgets(account, [state("account", null, 0n, 10n), state("key:k", null, 0n, 10n)])
      }))

    it.effect("concurrent reserves, settles, voids and limit changes: held is what is pending, spent what was charged", () =>
      Effect.gen(function*() {
        const store = yield* LedgerStore
        const account = yield* fundedAccount(1_000n)
        const claims = [claim("account", 30n), claim("key:k", null)]
        const limits = [25n, 8n, 40n, null, 12n]
        // Each call reserves 3, then settles at 0..5 (above 3: excess) or voids.
        const outcomes = yield* Effect.all(
          [
            ...Array.from({ length: 24 }, (_, i) =>
              Effect.gen(function*() {
                const { reservation, result } = yield* reserveBudgeted(account, 3n, claims)
                if (result !== "reserved") return { result, charged: 0n }
                if (i % 4 === 3) {
                  assert.strictEqual(yield* store.void(reservation.ref, at(3)), "voided")
                  return { result, charged: 0n }
                }
                const charged = BigInt(i % 6)
                assert.strictEqual(yield* settle(reservation, charged), "settled")
                return { result, charged }
              })),
            ...limits.map((limit) =>
              Effect.as(store.setBudgetLimit(account, "key:k", limit), { result: "limit" as const, charged: 0n })
            )
          ],
          unbounded
        )
        const charged = outcomes.reduce((sum, o) => sum + o.charged, 0n)
        const budgets = yield* store.budgets(account, MONTH)
        const last = budgets.find((b) => b.budget === "key:k")
        // The last limit change to complete is not known: any of them may be the one in force.
        assert.include(limits, last?.limit ?? null)
        // A budget with no limit set and nothing spent or held is not listed (the port's rule): a
        // run whose admitted calls were all voided or charged 0 lists no "account".
        const usedOf = (name: string) => {
          const b = budgets.find((x) => x.budget === name)
          return [name, b?.spent ?? 0n, b?.held ?? 0n]
        }
        assert.deepStrictEqual([usedOf("account"), usedOf("key:k")], [
          ["account", charged, 0n],
          ["key:k", charged, 0n]
        ])
        // Each admission held 3 within a limit of at most 30 (the account's): at most 10 at once,
        // and the excess is at most 2 per settlement.
        const admitted = outcomes.filter((o) => o.result === "reserved").length
        assert.isAtLeast(admitted, 1)
        assert.isTrue(charged <= 30n + 2n * BigInt(admitted), `charged ${charged}`)
        assert.deepStrictEqual(yield* store.pending(account), [])
      }))
  })
}
