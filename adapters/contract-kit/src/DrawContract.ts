/**
 * The draw part of the ledger store contract (core/src/ledger/LedgerStore.ts `draw`,
 * docs/performance.md "Credit leases"), run by `ledgerStoreContract` on every store that has the
 * (optional) operation: a call that drew from a lease is charged as a reservation of what it drew
 * would be settled, and what it was charged comes off the lease, which keeps the rest; a finished lease
 * still charges the call; a replayed draw changes nothing; budgets and grants move as a
 * settlement moves them; a draw past what the lease holds is a defect. The interleaving property
 * is in DrawProperty.ts.
 *
 * As in LedgerContract.ts, every test works on fresh accounts; leases that must stay pending
 * expire in 2100.
 */
import { assert, describe, type Vitest } from "@effect/vitest"
import { Effect } from "effect"
import { generateId, toTimestamp } from "@model-platform/core/kernel"
import {
  auditAccount,
  type BudgetClaim,
  type Draw,
  drawFrom,
  drawOf,
  type GrantClaim,
  type Holds,
  leaseHolds,
  LedgerStore,
  reserveOrdered,
  usageEntryRef
} from "@model-platform/core/ledger"
import { assertDies, fundedAccount } from "./ContractSupport.ts"
import { at } from "./SampleRecords.ts"

const NEVER = toTimestamp(Date.UTC(2100, 0, 1))
const JAN = "2026-01"
const unbounded = { concurrency: "unbounded" } as const

/**
 * The store's draw, or undefined when it has none (the operation is optional, as reserveInOrder
 * is): each test then has nothing to check and ends, as the reserveInOrder tests do.
 */
const drawOfStore = Effect.gen(function*() {
  return (yield* LedgerStore).draw
})

/** Takes a lease of `amount` for account `account` on `machine` (its scopes: the machine's, then account-wide). */
const takeLease = Effect.fnUntraced(function*(
  account: string,
  amount: bigint,
  options: {
    readonly machine?: string
    readonly budgets?: ReadonlyArray<BudgetClaim>
    readonly grants?: ReadonlyArray<GrantClaim>
  } = {}
) {
  const ref = yield* generateId("usage")
  const machine = options.machine ?? null
  const result = yield* reserveOrdered(yield* LedgerStore)({
    ref,
    account_id: account,
    machine_id: machine,
    scopes: machine === null ? [null] : [machine, null],
    amount,
    created_at: at(1),
    expires_at: NEVER,
    ...(options.budgets === undefined ? {} : { budgets: options.budgets }),
    ...(options.grants === undefined ? {} : { grants: options.grants })
  })
  assert.strictEqual(result._tag, "reserved")
  const reserved = result as Extract<typeof result, { readonly _tag: "reserved" }>
  return { ref, account, holds: { allocations: reserved.allocations, grants: reserved.grants ?? [] } as Holds }
})

/** A call's draw of `estimate` from what the lease holds now, charged `actual`. */
const callDraw = Effect.fnUntraced(function*(
  lease: { readonly ref: string; readonly account: string },
  estimate: bigint,
  actual: bigint
) {
  const held = yield* (yield* LedgerStore).reservation(lease.ref)
  const drawn = drawFrom(leaseHolds(held!), estimate)
  assert.isDefined(drawn, `the lease holds less than ${estimate}`)
  return yield* drawOf(lease.ref, lease.account, yield* generateId("usage"), drawn!, actual)
})

const scopeOf = Effect.fnUntraced(function*(account: string, machine: string | null) {
  const found = (yield* (yield* LedgerStore).balances(account)).find((b) => b.machine_id === machine)
  return { posted: found?.posted ?? 0n, held: found?.held ?? 0n }
})

const snapshot = Effect.fnUntraced(function*(account: string, refs: ReadonlyArray<string>) {
  const store = yield* LedgerStore
  return {
    balances: yield* store.balances(account),
    entries: yield* store.entries(account),
    pending: yield* store.pending(account),
    budgets: yield* store.budgets(account, JAN),
    grants: yield* store.grants(account),
    reservations: yield* Effect.forEach(refs, store.reservation)
  }
})

const assertConsistent = Effect.fnUntraced(function*(account: string) {
  const store = yield* LedgerStore
  const [balances, entries, pending] = yield* Effect.all([store.balances(account), store.entries(account), store.pending(account)])
  assert.deepStrictEqual(auditAccount({ balances, entries, pending }), [])
})

export const drawTests = (it: Vitest.MethodsNonLive<LedgerStore>) => {
  describe("draws from a lease (optional: LedgerStore.draw)", () => {
    it.effect("a draw charges the call, takes what it was charged off the lease, and the lease keeps the rest of the draw", () =>
      Effect.gen(function*() {
        const draw = yield* drawOfStore
        if (draw === undefined) return
        const store = yield* LedgerStore
        const account = yield* fundedAccount(10n, at(0))
        const machine = yield* generateId("machine")
        assert.strictEqual(yield* store.post({
          id: yield* generateId("led"),
          account_id: account,
          machine_id: machine,
          amount: 4n,
          type: "credit_added",
          ref: yield* generateId("order"),
          created_at: at(0)
        }), "posted")
        const lease = yield* takeLease(account, 8n, { machine })
        assert.deepStrictEqual(lease.holds.allocations, [{ machine_id: machine, amount: 4n }, { machine_id: null, amount: 4n }])
        // The call drew 5 (the machine's 4, then 1 account-wide) and cost 3: all of it on the machine.
        const call = yield* callDraw(lease, 5n, 3n)
        assert.deepStrictEqual(call.allocations, [{ machine_id: machine, amount: 4n }, { machine_id: null, amount: 1n }])
        assert.strictEqual(yield* draw(call), "drawn")
        const after = yield* store.reservation(lease.ref)
        assert.strictEqual(after?.status, "pending")
        // It kept 1 of the machine's 4 (the call used 3 of them) and all 4 account-wide.
        assert.deepStrictEqual(after?.allocations, [{ machine_id: machine, amount: 1n }, { machine_id: null, amount: 4n }])
        assert.deepStrictEqual(yield* scopeOf(account, machine), { posted: 1n, held: 1n })
        assert.deepStrictEqual(yield* scopeOf(account, null), { posted: 10n, held: 4n })
        const record = yield* store.reservation(call.settlement.ref)
        assert.strictEqual(record?.status, "settled")
        assert.strictEqual(record?.charged, 3n)
        assert.strictEqual(record?.excess, 0n)
        assert.strictEqual(record?.account_id, account)
        assert.deepStrictEqual(record?.allocations, call.allocations)
        const [usage] = yield* store.entries(account, 1)
        assert.deepStrictEqual(
          { amount: usage?.amount, type: usage?.type, ref: usage?.ref, machine_id: usage?.machine_id },
          { amount: -3n, type: "usage", ref: usageEntryRef(call.settlement.ref, machine), machine_id: machine }
        )
        assert.deepStrictEqual((yield* store.pending(account)).map((r) => r.ref), [lease.ref])
        yield* assertConsistent(account)
        // Voiding the lease releases what it still holds, and nothing the call was charged.
        assert.strictEqual(yield* store.void(lease.ref, at(9)), "voided")
        assert.deepStrictEqual(yield* scopeOf(account, null), { posted: 10n, held: 0n })
        assert.deepStrictEqual(yield* scopeOf(account, machine), { posted: 1n, held: 0n })
        yield* assertConsistent(account)
      }))

    it.effect("a draw replayed, or with the ref of a reservation that exists, is a duplicate and changes nothing", () =>
      Effect.gen(function*() {
        const draw = yield* drawOfStore
        if (draw === undefined) return
        const account = yield* fundedAccount(10n, at(0))
        const lease = yield* takeLease(account, 6n)
        const call = yield* callDraw(lease, 2n, 2n)
        assert.strictEqual(yield* draw(call), "drawn")
        const before = yield* snapshot(account, [lease.ref, call.settlement.ref])
        assert.strictEqual(yield* draw(call), "duplicate")
        // The same call replayed with other figures (a journal line written again) changes nothing either.
        const other = yield* drawOf(lease.ref, account, call.settlement.ref, { allocations: [{ machine_id: null, amount: 1n }], grants: [] }, 1n)
        assert.strictEqual(yield* draw(other), "duplicate")
        const onLease = yield* drawOf(lease.ref, account, lease.ref, { allocations: [{ machine_id: null, amount: 1n }], grants: [] }, 1n)
        assert.strictEqual(yield* draw(onLease), "duplicate")
        assert.deepStrictEqual(yield* snapshot(account, [lease.ref, call.settlement.ref]), before)
      }))

    it.effect("a draw from a lease that has finished still charges the call, with nothing held", () =>
      Effect.gen(function*() {
        const draw = yield* drawOfStore
        if (draw === undefined) return
        const store = yield* LedgerStore
        const account = yield* fundedAccount(10n, at(0))
        const budgets: ReadonlyArray<BudgetClaim> = [{ budget: "account", month: JAN, default_limit: 100n }]
        const lease = yield* takeLease(account, 6n, { budgets })
        const call = yield* callDraw(lease, 4n, 3n)
        assert.strictEqual(yield* store.void(lease.ref, at(5)), "voided")
        assert.strictEqual(yield* draw(call), "charged")
        assert.deepStrictEqual(yield* scopeOf(account, null), { posted: 7n, held: 0n })
        assert.deepStrictEqual(yield* store.budgets(account, JAN), [{ budget: "account", limit: null, spent: 3n, held: 0n }])
        assert.strictEqual((yield* store.reservation(lease.ref))?.status, "voided")
        assert.strictEqual((yield* store.reservation(call.settlement.ref))?.charged, 3n)
        assert.strictEqual(yield* draw(call), "duplicate")
        assert.deepStrictEqual(yield* scopeOf(account, null), { posted: 7n, held: 0n })
        yield* assertConsistent(account)
      }))

    it.effect("budgets: a draw takes the call's charge off their held and spends it", () =>
      Effect.gen(function*() {
        const draw = yield* drawOfStore
        if (draw === undefined) return
        const store = yield* LedgerStore
        const account = yield* fundedAccount(50n, at(0))
        const key = `key:${yield* generateId("key")}`
        const budgets: ReadonlyArray<BudgetClaim> = [
          { budget: "account", month: JAN, default_limit: 40n },
          { budget: key, month: JAN, default_limit: null }
        ]
        const lease = yield* takeLease(account, 30n, { budgets })
        assert.deepStrictEqual((yield* store.budgets(account, JAN)).map((b) => [b.budget, b.spent, b.held]), [
          ["account", 0n, 30n],
          [key, 0n, 30n]
        ])
        assert.strictEqual(yield* draw(yield* callDraw(lease, 12n, 7n)), "drawn")
        assert.strictEqual(yield* draw(yield* callDraw(lease, 5n, 5n)), "drawn")
        const budgetsNow = yield* store.budgets(account, JAN)
        for (const name of ["account", key]) {
          const b = budgetsNow.find((x) => x.budget === name)
          assert.deepStrictEqual([b?.spent, b?.held], [12n, 18n], name)
        }
        // 40 - 12 spent - 18 held: a reservation of 11 would pass the account's limit.
        const over = yield* reserveOrdered(store)({
          ref: yield* generateId("usage"),
          account_id: account,
          machine_id: null,
          scopes: [null],
          amount: 11n,
          created_at: at(3),
          expires_at: NEVER,
          budgets
        })
        assert.strictEqual(over._tag, "over_budget")
        assert.strictEqual(yield* store.void(lease.ref, at(9)), "voided")
        for (const b of yield* store.budgets(account, JAN)) assert.deepStrictEqual([b.spent, b.held], [12n, 0n], b.budget)
        assert.deepStrictEqual(yield* scopeOf(account, null), { posted: 38n, held: 0n })
        yield* assertConsistent(account)
      }))

    it.effect("grants: a call draws from the lease's grant holds first, is charged to them first, and what it did not use stays lent", () =>
      Effect.gen(function*() {
        const draw = yield* drawOfStore
        if (draw === undefined) return
        const store = yield* LedgerStore
        const account = yield* fundedAccount(10n, at(0))
        const grants: ReadonlyArray<GrantClaim> = [{ grant: "allowance:chat", period: JAN, size: 5n }]
        const lease = yield* takeLease(account, 8n, { grants })
        assert.deepStrictEqual(lease.holds, {
          allocations: [{ machine_id: null, amount: 3n }],
          grants: [{ grant: "allowance:chat", period: JAN, amount: 5n }]
        })
        const first = yield* callDraw(lease, 4n, 3n)
        assert.deepStrictEqual(first.grants, [{ grant: "allowance:chat", period: JAN, amount: 4n }])
        assert.deepStrictEqual(first.allocations, [])
        assert.strictEqual(yield* draw(first), "drawn")
        // It used 3 of the 4 it drew: 2 of the allowance stay with the lease, then its credits.
        // This call costs 3: the allowance's 2, then 1 of credits.
        const second = yield* callDraw(lease, 3n, 3n)
        assert.deepStrictEqual(second.grants, [{ grant: "allowance:chat", period: JAN, amount: 2n }])
        assert.deepStrictEqual(second.allocations, [{ machine_id: null, amount: 1n }])
        assert.strictEqual(yield* draw(second), "drawn")
        assert.deepStrictEqual(yield* store.grants(account), [{ grant: "allowance:chat", period: JAN, spent: 5n, held: 0n }])
        assert.deepStrictEqual(yield* scopeOf(account, null), { posted: 9n, held: 2n })
        const left = yield* store.reservation(lease.ref)
        assert.deepStrictEqual([left?.allocations, left?.grants], [[{ machine_id: null, amount: 2n }], undefined])
        assert.strictEqual(yield* store.void(lease.ref, at(9)), "voided")
        assert.deepStrictEqual(yield* store.grants(account), [{ grant: "allowance:chat", period: JAN, spent: 5n, held: 0n }])
        yield* assertConsistent(account)
      }))

    it.effect("a call costing more than it drew pays the rest account-wide (its excess)", () =>
      Effect.gen(function*() {
        const draw = yield* drawOfStore
        if (draw === undefined) return
        const store = yield* LedgerStore
        const account = yield* fundedAccount(10n, at(0))
        const lease = yield* takeLease(account, 6n)
        const call = yield* callDraw(lease, 2n, 5n)
        assert.strictEqual(call.settlement.excess, 3n)
        assert.strictEqual(yield* draw(call), "drawn")
        assert.deepStrictEqual(yield* scopeOf(account, null), { posted: 5n, held: 4n })
        assert.strictEqual((yield* store.reservation(call.settlement.ref))?.excess, 3n)
        yield* assertConsistent(account)
      }))

    it.effect("a draw past what the lease holds, from a scope or grant it does not hold, or of an unknown lease is a defect", () =>
      Effect.gen(function*() {
        const draw = yield* drawOfStore
        if (draw === undefined) return
        const account = yield* fundedAccount(10n, at(0))
        const lease = yield* takeLease(account, 3n)
        const before = yield* snapshot(account, [lease.ref])
        const drawing = (holds: Holds, actual: bigint, leaseRef = lease.ref) =>
          Effect.flatMap(generateId("usage"), (ref) => drawOf(leaseRef, account, ref, holds, actual))
        const bad: ReadonlyArray<readonly [string, Draw]> = [
          ["past the lease", yield* drawing({ allocations: [{ machine_id: null, amount: 4n }], grants: [] }, 1n)],
          ["a machine the lease does not hold", yield* drawing({ allocations: [{ machine_id: "m_other", amount: 1n }], grants: [] }, 1n)],
          ["a grant the lease does not hold", yield* drawing({ allocations: [], grants: [{ grant: "trial:chat", period: "once", amount: 1n }] }, 1n)],
          ["a zero draw", yield* drawing({ allocations: [{ machine_id: null, amount: 0n }], grants: [] }, 0n)],
          ["an unknown lease", yield* drawing({ allocations: [{ machine_id: null, amount: 1n }], grants: [] }, 1n, "usage_unknown_lease")]
        ]
        for (const [what, d] of bad) yield* assertDies(draw(d), what)
        assert.deepStrictEqual(yield* snapshot(account, [lease.ref]), before)
      }))

    it.effect("concurrent draws that together take all a lease holds are all charged, and leave it empty", () =>
      Effect.gen(function*() {
        const draw = yield* drawOfStore
        if (draw === undefined) return
        const store = yield* LedgerStore
        const account = yield* fundedAccount(20n, at(0))
        const lease = yield* takeLease(account, 10n)
        // The process drew ten calls of 1 in memory; their draws reach the store at once.
        const calls = yield* Effect.forEach(Array.from({ length: 10 }, () => 0), () =>
          Effect.flatMap(generateId("usage"), (ref) =>
            drawOf(lease.ref, account, ref, { allocations: [{ machine_id: null, amount: 1n }], grants: [] }, 1n)))
        const results = yield* Effect.all(calls.map(draw), unbounded)
        assert.deepStrictEqual(results, calls.map(() => "drawn"))
        assert.deepStrictEqual((yield* store.reservation(lease.ref))?.allocations, [])
        assert.deepStrictEqual(yield* scopeOf(account, null), { posted: 10n, held: 0n })
        yield* assertConsistent(account)
      }))

    it.effect("a draw racing the lease's void is either drawn or charged, and the call is charged once", () =>
      Effect.gen(function*() {
        const draw = yield* drawOfStore
        if (draw === undefined) return
        const store = yield* LedgerStore
        for (let i = 0; i < 5; i++) {
          const account = yield* fundedAccount(10n, at(0))
          const lease = yield* takeLease(account, 6n)
          const call = yield* callDraw(lease, 4n, 2n)
          const [drawn, voided] = yield* Effect.all([draw(call), store.void(lease.ref, at(5))], unbounded)
          assert.include(["drawn", "charged"], drawn)
          assert.strictEqual(voided, "voided")
          assert.deepStrictEqual(yield* scopeOf(account, null), { posted: 8n, held: 0n })
          yield* assertConsistent(account)
        }
      }))
  })
}
