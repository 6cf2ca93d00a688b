/**
 * The budget part of the gateway store contract (GatewayStoreContract.ts; docs/billing.md
 * "Monthly limits"): admissions claiming the account's and the key's budgets are checked and held
 * in the same step as their reservation (`GatewayStore.admit`), metering charges them
 * (`commit`), and batches racing each other never pass a limit nor deadlock.
 *
 * As in that suite: fresh accounts and keys per test, reservations pending until 2100, the current
 * minute's rate window.
 */
import { assert, describe, type Vitest } from "@effect/vitest"
import { Effect } from "effect"
import { type Admission, GatewayStore } from "@model-platform/core/gateway"
import type { KeyRecord } from "@model-platform/core/keys"
import { generateId } from "@model-platform/core/kernel"
import { type BudgetClaim, type BudgetState, LedgerStore } from "@model-platform/core/ledger"
import {
  accountWithKeys,
  admissionOf,
  assertConsistent,
  at,
  fund,
  meteredCall,
  MONTH,
  ordered,
  unbounded
} from "./GatewayContractFixtures.ts"
import type { GatewayContractStores } from "./GatewayStoreContract.ts"

/** A new account with `keys` keys and 1000 micro-credits account-wide. */
const fundedAccountWithKeys = Effect.fnUntraced(function*(keys: number) {
  const owner = yield* accountWithKeys(keys)
  yield* fund(owner.account.id, null, 1_000n)
  return owner
})

/** The claims of a call of `key`, as Admission makes them: the account's, then the key's. */
const claimsOf = (key: KeyRecord, accountDefault: bigint | null): ReadonlyArray<BudgetClaim> => [
  { budget: "account", month: MONTH, default_limit: accountDefault },
  { budget: `key:${key.id}`, month: MONTH, default_limit: null }
]

/** An admission of a priced call of `key` on no machine, reserving `amount`, with `extra` claims after the key's. */
const admission = Effect.fnUntraced(function*(
  key: KeyRecord,
  amount: bigint,
  accountDefault: bigint | null = null,
  extra: ReadonlyArray<BudgetClaim> = []
) {
  const reservation = yield* ordered(key.account_id, null, amount)
  return admissionOf(key, { reservation: { ...reservation, budgets: [...claimsOf(key, accountDefault), ...extra] } })
})

/** The call metered at `actual`, as the gateway commits it. */
const metered = (a: Admission, actual: bigint) => {
  const r = a.reservation!
  const allocations = r.amount === 0n ? [] : [{ machine_id: null, amount: r.amount }]
  return meteredCall({ id: a.key_id, account_id: r.account_id }, r, { account_id: r.account_id, allocations }, actual)
}

const reservedTag = (result: { readonly _tag: string; readonly reserved?: { readonly _tag: string } | undefined }) =>
  result._tag === "Admitted" ? result.reserved?._tag : result._tag

const state = (budget: string, limit: bigint | null, spent: bigint, held: bigint): BudgetState => ({
  budget,
  limit,
  spent,
  held
})

export const gatewayBudgetTests = (it: Vitest.MethodsNonLive<GatewayContractStores>) => {
  describe("admit and commit: budgets", () => {
    it.effect("over a limit: over_budget with the first claim over, the call counted, nothing held", () =>
      Effect.gen(function*() {
        const gateway = yield* GatewayStore
        const ledger = yield* LedgerStore
        const { account, keys: [key] } = yield* fundedAccountWithKeys(1)
        const budget = `key:${key!.id}`
        yield* ledger.setBudgetLimit(account.id, budget, 5n)
        const first = yield* admission(key!, 4n, 100n)
        assert.deepStrictEqual(yield* gateway.admit([first]), [{
          _tag: "Admitted",
          count: 1,
          reserved: { _tag: "reserved", allocations: [{ machine_id: null, amount: 4n }] }
        }])
        assert.deepStrictEqual(yield* ledger.budgets(account.id, MONTH), [
          state("account", null, 0n, 4n),
          state(budget, 5n, 0n, 4n)
        ])
        const before = yield* ledger.budgets(account.id, MONTH)
        // The key's limit: 4 + 2 > 5.
        assert.deepStrictEqual(yield* gateway.admit([yield* admission(key!, 2n, 100n)]), [{
          _tag: "Admitted",
          count: 2,
          reserved: { _tag: "over_budget", budget, limit: 5n, used: 4n }
        }])
        // The account's (its default here), checked first: 4 + 2 > 3.
        assert.deepStrictEqual(yield* gateway.admit([yield* admission(key!, 2n, 3n)]), [{
          _tag: "Admitted",
          count: 3,
          reserved: { _tag: "over_budget", budget: "account", limit: 3n, used: 4n }
        }])
        assert.deepStrictEqual(yield* ledger.budgets(account.id, MONTH), before)
        assert.strictEqual((yield* ledger.pending(account.id)).length, 1)
      }))

    it.effect("one key's admissions in one batch count one after the other; commit charges the budgets", () =>
      Effect.gen(function*() {
        const gateway = yield* GatewayStore
        const ledger = yield* LedgerStore
        const { account, keys: [k1, k2] } = yield* fundedAccountWithKeys(2)
        yield* ledger.setBudgetLimit(account.id, `key:${k1!.id}`, 6n)
        // k1: 2, 4, 6, then its limit. (Calls of two keys in one batch may be admitted in either
        // order: a store takes a batch's keys in its lock order.)
        const batch = yield* Effect.all(Array.from({ length: 4 }, () => admission(k1!, 2n, 9n)))
        const results = yield* gateway.admit(batch)
        assert.deepStrictEqual(results.map(reservedTag), ["reserved", "reserved", "reserved", "over_budget"])
        // k2: 8, then the account's 9.
        const second = [yield* admission(k2!, 2n, 9n), yield* admission(k2!, 2n, 9n)]
        const results2 = yield* gateway.admit(second)
        assert.strictEqual(reservedTag(results2[0]!), "reserved")
        assert.deepStrictEqual(results2[1], {
          _tag: "Admitted",
          count: 2,
          reserved: { _tag: "over_budget", budget: "account", limit: 9n, used: 8n }
        })
        const budgets = (spentK1: bigint, heldK1: bigint, spentK2: bigint, heldK2: bigint) =>
          [
            state("account", null, spentK1 + spentK2, heldK1 + heldK2),
            state(`key:${k1!.id}`, 6n, spentK1, heldK1),
            state(`key:${k2!.id}`, null, spentK2, heldK2)
          ].sort((a, b) => a.budget < b.budget ? -1 : 1)
        assert.deepStrictEqual(yield* ledger.budgets(account.id, MONTH), budgets(0n, 6n, 0n, 2n))
        // Metering: 1 and 3 (1 above its reservation) of k1's, 2 of k2's; one of k1's is voided.
        const calls = [yield* metered(batch[0]!, 1n), yield* metered(batch[1]!, 3n), yield* metered(second[0]!, 2n)]
        assert.deepStrictEqual((yield* gateway.commit(calls)).map((r) => r.settlement), ["settled", "settled", "settled"])
        assert.strictEqual(yield* ledger.void(batch[2]!.reservation!.ref, at(6)), "voided")
        assert.deepStrictEqual(yield* ledger.budgets(account.id, MONTH), budgets(4n, 0n, 2n, 0n))
        // A replay charges nothing twice.
        yield* gateway.commit(calls)
        assert.deepStrictEqual(yield* ledger.budgets(account.id, MONTH), budgets(4n, 0n, 2n, 0n))
      }))

    it.effect("an agent's day and total budgets (agents/Limits.ts): counted in their own periods; 32 concurrent admissions stop exactly at the limit", () =>
      Effect.gen(function*() {
        const gateway = yield* GatewayStore
        const ledger = yield* LedgerStore
        const { account, keys: [key] } = yield* fundedAccountWithKeys(1)
        const agent = yield* generateId("agt")
        const day = (limit: bigint, period = "2026-01-15"): BudgetClaim => ({ budget: `agent:${agent}:day`, month: period, default_limit: limit })
        const total = (limit: bigint): BudgetClaim => ({ budget: `agent:${agent}:total`, month: "total", default_limit: limit })
        // 32 calls of 1 at once against a day limit of 10 (the total's 25): exactly 10 admitted.
        const racing = yield* Effect.forEach(Array.from({ length: 32 }, (_, i) => i), () => admission(key!, 1n, null, [day(10n), total(25n)]))
        const answers = (yield* Effect.forEach(racing, (a) => gateway.admit([a]), unbounded)).flat()
        assert.strictEqual(answers.filter((r) => reservedTag(r) === "reserved").length, 10)
        for (const refused of answers.filter((r) => reservedTag(r) !== "reserved")) {
          assert.deepStrictEqual(refused._tag === "Admitted" ? refused.reserved : refused, {
            _tag: "over_budget", budget: `agent:${agent}:day`, limit: 10n, used: 10n
          })
        }
        assert.deepStrictEqual((yield* ledger.budgets(account.id, "2026-01-15")).find((b) => b.budget === `agent:${agent}:day`), state(`agent:${agent}:day`, null, 0n, 10n))
        assert.deepStrictEqual((yield* ledger.budgets(account.id, "total")).find((b) => b.budget === `agent:${agent}:total`), state(`agent:${agent}:total`, null, 0n, 10n))
        // The next day has its own count; the total goes on: 10 + 15 = 25, then it refuses.
        const nextDay = yield* Effect.forEach(Array.from({ length: 16 }, (_, i) => i), () => admission(key!, 1n, null, [day(20n, "2026-01-16"), total(25n)]))
        const results = yield* gateway.admit(nextDay)
        assert.deepStrictEqual(results.map(reservedTag), [...Array(15).fill("reserved"), "over_budget"])
        assert.deepStrictEqual(results[15]!._tag === "Admitted" ? results[15]!.reserved : undefined, {
          _tag: "over_budget", budget: `agent:${agent}:total`, limit: 25n, used: 25n
        })
        // Metered below their reservations: the day and the total are charged what was spent.
        yield* gateway.commit([yield* metered(racing.find((_, i) => reservedTag(answers[i]!) === "reserved")!, 0n)])
        assert.deepStrictEqual((yield* ledger.budgets(account.id, "total")).find((b) => b.budget === `agent:${agent}:total`), state(`agent:${agent}:total`, null, 0n, 24n))
      }))

    it.effect("concurrent batches of two accounts' keys, with commits racing them: no limit passed, no deadlock", () =>
      Effect.gen(function*() {
        const gateway = yield* GatewayStore
        const ledger = yield* LedgerStore
        // A few rounds: lock-order faults show up as deadlocks only now and then.
        for (let round = 0; round < 3; round++) {
          const owners = [yield* fundedAccountWithKeys(2), yield* fundedAccountWithKeys(2)]
          const keys = owners.flatMap((o) => o.keys)
          for (const key of keys) yield* ledger.setBudgetLimit(key.account_id, `key:${key.id}`, 6n)
          // Calls already admitted, metered while the new ones are admitted.
          const earlier = yield* Effect.forEach(keys, (key) => admission(key, 1n, 10n))
          yield* gateway.admit(earlier)
          const commits = yield* Effect.forEach(earlier, (a) => metered(a, 1n))
          // 4 batches of 6 admissions of 1, across the 4 keys in shuffled orders.
          const batches = yield* Effect.forEach([0, 1, 2, 3], (b) =>
            Effect.forEach(Array.from({ length: 6 }, (_, i) => keys[(i * (b + 1) + b) % 4]!), (key) => admission(key, 1n, 10n)))
          const [admitted] = yield* Effect.all([
            Effect.all(batches.map((batch) => gateway.admit(batch)), unbounded),
            Effect.all([gateway.commit(commits.slice(0, 2).reverse()), gateway.commit(commits.slice(2))], unbounded)
          ], unbounded)
          for (const { account } of owners) {
            const budgets = yield* ledger.budgets(account.id, MONTH)
            const pending = yield* ledger.pending(account.id)
            const wide = budgets.find((b) => b.budget === "account")!
            assert.isTrue(wide.spent + wide.held <= 10n, `account: ${wide.spent} + ${wide.held}`)
            for (const b of budgets) {
              if (b.budget !== "account") assert.isTrue(b.spent + b.held <= 6n, `${b.budget}: ${b.spent} + ${b.held}`)
              const claiming = pending.filter((r) => r.budgets?.some((c) => c.budget === b.budget))
              assert.strictEqual(b.held, BigInt(claiming.length), b.budget)
            }
            assert.strictEqual(wide.spent, 2n)
            const fitted = admitted.flat().filter((r, i) =>
              reservedTag(r) === "reserved" && batches.flat()[i]!.account_id === account.id
            ).length
            assert.strictEqual(wide.held, BigInt(fitted))
            // The account's 10: 2 spent, so 8 held once the admissions are many enough.
            assert.strictEqual(wide.held, 8n)
            yield* assertConsistent(account.id)
          }
        }
      }))
  })
}
