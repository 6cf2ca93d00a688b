/**
 * The grant part of the ledger store contract (core/src/ledger/LedgerStore.ts `GrantClaim`,
 * docs/billing.md "Allowances and the trial"), run by `ledgerStoreContract` on every store: a
 * reservation takes from its grants first, in order, then from credits; settlement charges the
 * grants first and releases the rest; void and expiry release; a hold past a grant's size is
 * refused and changes nothing; periods (months) are independent; budgets count only what credits
 * pay; concurrent reservations never pass a grant's size. The interleaving property is in
 * GrantProperty.ts.
 *
 * As in LedgerContract.ts, every test works on fresh accounts; reservations that must stay pending
 * expire in 2100, the expiry test works in 1990 (an era no other suite expires in).
 */
import { assert, describe, type Vitest } from "@effect/vitest"
import { Effect } from "effect"
import { generateId, type Timestamp, toTimestamp } from "@model-platform/core/kernel"
import {
  type BudgetClaim,
  type GrantClaim,
  type GrantState,
  LedgerStore,
  type NewReservation,
  type OrderedReservation,
  type ReserveInOrderResult,
  reserveOrdered,
  settlementOf
} from "@model-platform/core/ledger"
import { assertDies, fundedAccount as fundedAt } from "./ContractSupport.ts"
import { at } from "./SampleRecords.ts"

const NEVER = toTimestamp(Date.UTC(2100, 0, 1))
const y1990 = (ms: number): Timestamp => toTimestamp(Date.UTC(1990, 0, 1) + ms)
const JAN = "2026-01"
const FEB = "2026-02"
const unbounded = { concurrency: "unbounded" } as const

const allowance = (size: bigint, period = JAN): GrantClaim => ({ grant: "allowance:chat", period, size })
const trial = (size: bigint): GrantClaim => ({ grant: "trial:chat", period: "once", size })
const grantState = (grant: string, period: string, spent: bigint, held: bigint): GrantState => ({ grant, period, spent, held })

/** A fresh account with `amount` account-wide credits. */
const fundedAccount = (amount: bigint) => fundedAt(amount, at(0))

/** Reserves `amount` for a call on no machine: grants first, then account-wide credits. */
const reserve = Effect.fnUntraced(function*(
  account: string,
  amount: bigint,
  grants: ReadonlyArray<GrantClaim>,
  options: { readonly budgets?: ReadonlyArray<BudgetClaim>; readonly expiresAt?: Timestamp } = {}
) {
  const request: OrderedReservation = {
    ref: yield* generateId("usage"),
    account_id: account,
    machine_id: null,
    scopes: [null],
    amount,
    created_at: at(1),
    expires_at: options.expiresAt ?? NEVER,
    grants,
    ...(options.budgets === undefined ? {} : { budgets: options.budgets })
  }
  const result = yield* reserveOrdered(yield* LedgerStore)(request)
  return { ref: request.ref, account, result }
})

const reserved = (r: ReserveInOrderResult) => {
  assert.strictEqual(r._tag, "reserved")
  return r as Extract<ReserveInOrderResult, { readonly _tag: "reserved" }>
}

/** Settles a reservation (as the gateway does: Ledger.settlementOf) at `actual`. */
const settleAt = Effect.fnUntraced(function*(
  call: { readonly ref: string; readonly account: string; readonly result: ReserveInOrderResult },
  actual: bigint
) {
  const r = reserved(call.result)
  const settlement = yield* settlementOf(call.ref, actual, {
    account_id: call.account,
    allocations: r.allocations,
    grants: r.grants ?? []
  })
  assert.strictEqual(yield* (yield* LedgerStore).settle(settlement), "settled")
  return settlement
})

const wideBalance = Effect.fnUntraced(function*(account: string) {
  const wide = (yield* (yield* LedgerStore).balances(account)).find((b) => b.machine_id === null)
  return { posted: wide?.posted ?? 0n, held: wide?.held ?? 0n }
})


export const grantTests = (it: Vitest.MethodsNonLive<LedgerStore>) => {
  describe("grants (the allowance, the trial)", () => {
    it.effect("a reservation takes from its grants first, in order, then from credits", () =>
      Effect.gen(function*() {
        const store = yield* LedgerStore
        const account = yield* fundedAccount(10n)
        const grants = [allowance(3n), trial(4n)]
        const first = reserved((yield* reserve(account, 5n, grants)).result)
        assert.deepStrictEqual(first.grants, [
          { grant: "allowance:chat", period: JAN, amount: 3n },
          { grant: "trial:chat", period: "once", amount: 2n }
        ])
        assert.deepStrictEqual(first.allocations, [])
        const second = reserved((yield* reserve(account, 6n, grants)).result)
        assert.deepStrictEqual(second.grants, [{ grant: "trial:chat", period: "once", amount: 2n }])
        assert.deepStrictEqual(second.allocations, [{ machine_id: null, amount: 4n }])
        assert.deepStrictEqual(yield* store.grants(account), [
          grantState("allowance:chat", JAN, 0n, 3n),
          grantState("trial:chat", "once", 0n, 4n)
        ])
        assert.deepStrictEqual(yield* wideBalance(account), { posted: 10n, held: 4n })
        // Nothing is left of the grants; 6 credits are: 7 is too much.
        const refused = yield* reserve(account, 7n, grants)
        assert.deepStrictEqual(refused.result, { _tag: "insufficient", available: 6n })
        assert.isUndefined(yield* store.reservation(refused.ref))
      }))

    it.effect("an account without credits is served from its grants, up to their size", () =>
      Effect.gen(function*() {
        const account = yield* fundedAccount(0n)
        const grants = [allowance(2n), trial(1n)]
        reserved((yield* reserve(account, 3n, grants)).result)
        assert.deepStrictEqual((yield* reserve(account, 1n, grants)).result, { _tag: "insufficient", available: 0n })
        // A free call (0) needs nothing.
        reserved((yield* reserve(account, 0n, grants)).result)
      }))

    it.effect("settlement charges the grants first and releases the rest; credits pay only what is left", () =>
      Effect.gen(function*() {
        const store = yield* LedgerStore
        const account = yield* fundedAccount(10n)
        const grants = [allowance(3n), trial(4n)]
        // 9 reserved: allowance 3, trial 4, credits 2; the call costs 5: allowance 3, trial 2.
        const call = yield* reserve(account, 9n, grants)
        const settlement = yield* settleAt(call, 5n)
        assert.strictEqual(settlement.charged, 0n)
        assert.deepStrictEqual(settlement.entries, [])
        assert.deepStrictEqual(yield* store.grants(account), [
          grantState("allowance:chat", JAN, 3n, 0n),
          grantState("trial:chat", "once", 2n, 0n)
        ])
        assert.deepStrictEqual(yield* wideBalance(account), { posted: 10n, held: 0n })
        // The next call: 2 of the trial, then credits; it reports more than reserved (excess, credits).
        const next = yield* reserve(account, 4n, grants)
        const over = yield* settleAt(next, 6n)
        assert.strictEqual(over.charged, 4n)
        assert.strictEqual(over.excess, 2n)
        assert.deepStrictEqual(over.grants, [{ grant: "trial:chat", period: "once", amount: 2n }])
        assert.deepStrictEqual(yield* store.grants(account), [
          grantState("allowance:chat", JAN, 3n, 0n),
          grantState("trial:chat", "once", 4n, 0n)
        ])
        assert.deepStrictEqual(yield* wideBalance(account), { posted: 6n, held: 0n })
        const found = yield* store.reservation(next.ref)
        assert.strictEqual(found?.status, "settled")
        assert.strictEqual(found?.charged, 4n)
      }))

    it.effect("void and expiry release what a reservation holds of its grants", () =>
      Effect.gen(function*() {
        const store = yield* LedgerStore
        const account = yield* fundedAccount(5n)
        const grants = [allowance(3n), trial(4n)]
        const voided = yield* reserve(account, 4n, grants)
        const pending = yield* store.pending(account)
        assert.deepStrictEqual(pending.map((r) => r.grants), [[
          { grant: "allowance:chat", period: JAN, amount: 3n },
          { grant: "trial:chat", period: "once", amount: 1n }
        ]])
        assert.deepStrictEqual((yield* store.reservation(voided.ref))?.grants, pending[0]!.grants)
        assert.strictEqual(yield* store.void(voided.ref, at(2)), "voided")
        assert.deepStrictEqual(yield* store.grants(account), [])
        const expiring = yield* reserve(account, 8n, grants, { expiresAt: y1990(1) })
        assert.deepStrictEqual(reserved(expiring.result).allocations, [{ machine_id: null, amount: 1n }])
        assert.include(yield* store.expire(y1990(1)), expiring.ref)
        assert.deepStrictEqual(yield* store.grants(account), [])
        assert.deepStrictEqual(yield* wideBalance(account), { posted: 5n, held: 0n })
        // A reservation holding no grants has none.
        const plain = yield* reserve(account, 1n, [])
        assert.isUndefined((yield* store.reservation(plain.ref))?.grants)
      }))

    it.effect("a hold past a grant's size is refused and changes nothing", () =>
      Effect.gen(function*() {
        const store = yield* LedgerStore
        const account = yield* fundedAccount(10n)
        reserved((yield* reserve(account, 2n, [trial(3n)])).result)
        const reservation: NewReservation = {
          ref: yield* generateId("usage"),
          account_id: account,
          machine_id: null,
          allocations: [{ machine_id: null, amount: 1n }],
          created_at: at(1),
          expires_at: NEVER,
          grants: [{ grant: "trial:chat", period: "once", size: 3n, amount: 2n }]
        }
        assert.strictEqual(yield* store.reserve(reservation), "insufficient")
        assert.isUndefined(yield* store.reservation(reservation.ref))
        assert.deepStrictEqual(yield* store.grants(account), [grantState("trial:chat", "once", 0n, 2n)])
        assert.deepStrictEqual(yield* wideBalance(account), { posted: 10n, held: 0n })
        // Exactly what is left fits.
        const exact = { ...reservation, ref: yield* generateId("usage"), grants: [{ ...reservation.grants![0]!, amount: 1n }] }
        assert.strictEqual(yield* store.reserve(exact), "reserved")
        assert.deepStrictEqual(yield* store.grants(account), [grantState("trial:chat", "once", 0n, 3n)])
      }))

    it.effect("each month has its own allowance: nothing carries over", () =>
      Effect.gen(function*() {
        const store = yield* LedgerStore
        const account = yield* fundedAccount(0n)
        yield* settleAt(yield* reserve(account, 2n, [allowance(3n, JAN)]), 1n)
        // February starts at its full size, whatever January left.
        yield* settleAt(yield* reserve(account, 3n, [allowance(3n, FEB)]), 3n)
        assert.deepStrictEqual((yield* reserve(account, 1n, [allowance(3n, FEB)])).result, { _tag: "insufficient", available: 0n })
        reserved((yield* reserve(account, 2n, [allowance(3n, JAN)])).result)
        assert.deepStrictEqual(yield* store.grants(account), [
          grantState("allowance:chat", JAN, 1n, 2n),
          grantState("allowance:chat", FEB, 3n, 0n)
        ])
      }))

    it.effect("grants belong to one account", () =>
      Effect.gen(function*() {
        const store = yield* LedgerStore
        const one = yield* fundedAccount(0n)
        const other = yield* fundedAccount(0n)
        yield* settleAt(yield* reserve(one, 4n, [trial(4n)]), 4n)
        reserved((yield* reserve(other, 4n, [trial(4n)])).result)
        assert.deepStrictEqual(yield* store.grants(one), [grantState("trial:chat", "once", 4n, 0n)])
        assert.deepStrictEqual(yield* store.grants(other), [grantState("trial:chat", "once", 0n, 4n)])
      }))

    it.effect("monthly limits count only what credits pay", () =>
      Effect.gen(function*() {
        const store = yield* LedgerStore
        const account = yield* fundedAccount(10n)
        const budgets: ReadonlyArray<BudgetClaim> = [{ budget: "account", month: JAN, default_limit: 2n }]
        // 5: 3 from the allowance, 2 from credits, within the limit of 2.
        const call = yield* reserve(account, 5n, [allowance(3n)], { budgets })
        assert.deepStrictEqual(reserved(call.result).allocations, [{ machine_id: null, amount: 2n }])
        assert.deepStrictEqual(yield* store.budgets(account, JAN), [{ budget: "account", limit: null, spent: 0n, held: 2n }])
        yield* settleAt(call, 4n)
        assert.deepStrictEqual(yield* store.budgets(account, JAN), [{ budget: "account", limit: null, spent: 1n, held: 0n }])
        const over = yield* reserve(account, 2n, [allowance(3n)], { budgets })
        assert.strictEqual(over.result._tag, "over_budget")
        // The grants' rows are not budgets, and budgets are not grants.
        assert.deepStrictEqual(yield* store.grants(account), [grantState("allowance:chat", JAN, 3n, 0n)])
      }))

    it.effect("concurrent reservations never pass a grant's size", () =>
      Effect.gen(function*() {
        const store = yield* LedgerStore
        const account = yield* fundedAccount(0n)
        const results = yield* Effect.forEach(
          Array.from({ length: 16 }, (_, i) => i),
          () => reserve(account, 1n, [allowance(3n), trial(2n)]),
          unbounded
        )
        assert.strictEqual(results.filter((r) => r.result._tag === "reserved").length, 5)
        assert.deepStrictEqual(yield* store.grants(account), [
          grantState("allowance:chat", JAN, 0n, 3n),
          grantState("trial:chat", "once", 0n, 2n)
        ])
      }))

    it.effect("a grant that is not an allowance or a trial, or a hold above its size, is a defect", () =>
      Effect.gen(function*() {
        const store = yield* LedgerStore
        const account = yield* fundedAccount(10n)
        const base: NewReservation = {
          ref: yield* generateId("usage"),
          account_id: account,
          machine_id: null,
          allocations: [],
          created_at: at(1),
          expires_at: NEVER
        }
        yield* assertDies(store.reserve({ ...base, grants: [{ grant: "gift", period: JAN, size: 5n, amount: 1n }] }), "bad grant")
        yield* assertDies(store.reserve({ ...base, grants: [{ grant: "trial:chat", period: "2026", size: 5n, amount: 1n }] }), "bad period")
        yield* assertDies(store.reserve({ ...base, grants: [{ grant: "trial:chat", period: "once", size: 1n, amount: 2n }] }), "above its size")
        yield* assertDies(store.reserve({ ...base, grants: [{ grant: "trial:chat", period: "once", size: 5n, amount: 0n }] }), "zero hold")
        assert.isUndefined(yield* store.reservation(base.ref))
      }))
  })
}
