/**
 * The ledger store contract (LedgerContract.ts): reservations held against the balance, and
 * reserveInOrder, which takes an amount from scopes in a given order (when the store has it).
 */
import { assert, describe, type Vitest } from "@effect/vitest"
import { Effect } from "effect"
import {
  allocate,
  type Allocation,
  LedgerStore,
  spendingSources
} from "@model-platform/core/ledger"
import {
  credits,
  unbounded,
  freshAccount,
  freshMachine,
  fund,
  newReservation,
  hold,
  scope,
  snapshot,
  assertConsistent,
  expectedReservation
} from "./LedgerContractSupport.ts"
import { assertDies } from "./ContractSupport.ts"
import { at } from "./SampleRecords.ts"

export const reserveTests = (it: Vitest.MethodsNonLive<LedgerStore>) => {
  describe("reserve", () => {
    it.effect("holds the amounts: available falls, posted stays, the reservation round-trips", () =>
      Effect.gen(function*() {
        const store = yield* LedgerStore
        const account = yield* freshAccount
        const machine = yield* freshMachine
        yield* fund(account, machine, credits(3))
        yield* fund(account, null, credits(10))
        // Pinned first, then account-wide: the store keeps the order it was given.
        const r = yield* hold(account, machine, [{ machine_id: machine, amount: credits(3) }, {
          machine_id: null,
          amount: 1n
        }])
        assert.deepStrictEqual(yield* store.reservation(r.ref), expectedReservation(r))
        assert.deepStrictEqual(yield* store.balances(account), [
          { machine_id: null, posted: credits(10), held: 1n },
          { machine_id: machine, posted: credits(3), held: credits(3) }
        ])
        assert.deepStrictEqual(yield* store.pending(account), [expectedReservation(r)])
        yield* assertConsistent(account)
      }))

    it.effect("exactly the available amount is accepted, one micro-credit more is not", () =>
      Effect.gen(function*() {
        const store = yield* LedgerStore
        const account = yield* freshAccount
        yield* fund(account, null, 1_234_567n)
        const over = yield* newReservation(account, null, [{ machine_id: null, amount: 1_234_568n }])
        assert.strictEqual(yield* store.reserve(over), "insufficient")
        yield* hold(account, null, [{ machine_id: null, amount: 1_234_567n }])
        assert.deepStrictEqual(scope(yield* store.balances(account), null), {
          machine_id: null,
          posted: 1_234_567n,
          held: 1_234_567n
        })
      }))

    it.effect("all or none: one short scope refuses the whole reservation", () =>
      Effect.gen(function*() {
        const store = yield* LedgerStore
        const account = yield* freshAccount
        const machine = yield* freshMachine
        yield* fund(account, machine, credits(5))
        yield* fund(account, null, credits(2))
        const before = yield* snapshot(account)
        const r = yield* newReservation(account, machine, [
          { machine_id: machine, amount: credits(5) },
          { machine_id: null, amount: credits(3) }
        ])
        assert.strictEqual(yield* store.reserve(r), "insufficient")
        assert.deepStrictEqual(yield* snapshot(account), before)
        assert.isUndefined(yield* store.reservation(r.ref))
        // A scope the account does not have at all.
        const none = yield* newReservation(account, "m_none", [{ machine_id: "m_none", amount: 1n }])
        assert.strictEqual(yield* store.reserve(none), "insufficient")
        assert.deepStrictEqual(yield* snapshot(account), before)
      }))

    it.effect("pending reservations count against available", () =>
      Effect.gen(function*() {
        const store = yield* LedgerStore
        const account = yield* freshAccount
        yield* fund(account, null, credits(10))
        yield* hold(account, null, [{ machine_id: null, amount: credits(7) }])
        const second = yield* newReservation(account, null, [{ machine_id: null, amount: credits(4) }])
        assert.strictEqual(yield* store.reserve(second), "insufficient")
        yield* hold(account, null, [{ machine_id: null, amount: credits(3) }])
        assert.deepStrictEqual(scope(yield* store.balances(account), null), {
          machine_id: null,
          posted: credits(10),
          held: credits(10)
        })
      }))

    it.effect("a reservation ref that exists is a duplicate and changes nothing", () =>
      Effect.gen(function*() {
        const store = yield* LedgerStore
        const account = yield* freshAccount
        yield* fund(account, null, credits(10))
        const r = yield* hold(account, null, [{ machine_id: null, amount: credits(1) }])
        const before = yield* snapshot(account, [r.ref])
        assert.strictEqual(yield* store.reserve(r), "duplicate")
        assert.strictEqual(
          yield* store.reserve({ ...r, allocations: [{ machine_id: null, amount: credits(2) }], expires_at: at(5) }),
          "duplicate"
        )
        assert.deepStrictEqual(yield* snapshot(account, [r.ref]), before)
      }))

    it.effect("a reservation with no allocations (a free call) is pending and holds nothing", () =>
      Effect.gen(function*() {
        const store = yield* LedgerStore
        const account = yield* freshAccount
        const r = yield* hold(account, "m_free", [])
        assert.deepStrictEqual(yield* store.reservation(r.ref), expectedReservation(r))
        assert.deepStrictEqual(yield* store.balances(account), [])
      }))

    it.effect("allocations pinned to another machine, non-positive or repeated are defects", () =>
      Effect.gen(function*() {
        const store = yield* LedgerStore
        const account = yield* freshAccount
        yield* fund(account, "m_1", credits(5))
        yield* fund(account, null, credits(5))
        const before = yield* snapshot(account)
        const cases: ReadonlyArray<readonly [string, string | null, ReadonlyArray<Allocation>]> = [
          ["pinned to another machine", "m_2", [{ machine_id: "m_1", amount: 1n }]],
          ["pinned credits for a call on no machine", null, [{ machine_id: "m_1", amount: 1n }]],
          ["zero amount", null, [{ machine_id: null, amount: 0n }]],
          ["negative amount", null, [{ machine_id: null, amount: -1n }]],
          ["one scope twice", null, [{ machine_id: null, amount: 1n }, { machine_id: null, amount: 1n }]]
        ]
        for (const [what, machine, allocations] of cases) {
          const r = yield* newReservation(account, machine, allocations)
          yield* assertDies(store.reserve(r), what)
          assert.isUndefined(yield* store.reservation(r.ref), what)
        }
        assert.deepStrictEqual(yield* snapshot(account), before)
      }))

    it.effect("30 concurrent reserves against a balance for 10 never exceed it", () =>
      Effect.gen(function*() {
        const store = yield* LedgerStore
        const account = yield* freshAccount
        yield* fund(account, null, credits(10))
        const reservations = yield* Effect.all(
          Array.from({ length: 30 }, () => newReservation(account, null, [{ machine_id: null, amount: credits(1) }]))
        )
        const results = yield* Effect.all(reservations.map(store.reserve), unbounded)
        assert.strictEqual(results.filter((r) => r === "reserved").length, 10)
        assert.strictEqual(results.filter((r) => r === "insufficient").length, 20)
        assert.deepStrictEqual(scope(yield* store.balances(account), null), {
          machine_id: null,
          posted: credits(10),
          held: credits(10)
        })
        assert.strictEqual((yield* store.pending(account)).length, 10)
        yield* assertConsistent(account)
      }))

    it.effect("concurrent reserves spanning two scopes never exceed either", () =>
      Effect.gen(function*() {
        const store = yield* LedgerStore
        const account = yield* freshAccount
        const machine = yield* freshMachine
        yield* fund(account, machine, credits(6))
        yield* fund(account, null, credits(6))
        // Each takes 1 pinned + 1 account-wide, 1 pinned only, or 1 account-wide only.
        const shapes: ReadonlyArray<ReadonlyArray<Allocation>> = [
          [{ machine_id: machine, amount: credits(1) }, { machine_id: null, amount: credits(1) }],
          [{ machine_id: machine, amount: credits(1) }],
          [{ machine_id: null, amount: credits(1) }]
        ]
        const reservations = yield* Effect.all(
          Array.from({ length: 30 }, (_, i) => newReservation(account, machine, shapes[i % 3]!))
        )
        yield* Effect.all(reservations.map(store.reserve), unbounded)
        const balances = yield* store.balances(account)
        for (const b of balances) assert.isTrue(b.held <= b.posted, `held ${b.held} > posted ${b.posted}`)
        yield* assertConsistent(account)
      }))
  })

  describe("reserveInOrder (when the store has it)", () => {
    /** A request for `amount` from `scopes` in order, for a call on `machineId`. */
    const ordered = Effect.fnUntraced(function*(
      accountId: string,
      machineId: string | null,
      scopes: ReadonlyArray<string | null>,
      amount: bigint
    ) {
      const r = yield* newReservation(accountId, machineId, [])
      return { ...r, scopes, amount }
    })

    it.effect("allocates as Ledger.allocate does, in the order given, and reserves that", () =>
      Effect.gen(function*() {
        const store = yield* LedgerStore
        const reserveInOrder = store.reserveInOrder
        if (reserveInOrder === undefined) return
        const account = yield* freshAccount
        const machine = yield* freshMachine
        yield* fund(account, machine, credits(3))
        yield* fund(account, null, credits(10))
        const order = [machine, null]
        const cases: ReadonlyArray<readonly [bigint, ReadonlyArray<Allocation>]> = [
          [credits(2), [{ machine_id: machine, amount: credits(2) }]],
          // 1 credit left pinned: it goes first, the rest account-wide.
          [credits(4), [{ machine_id: machine, amount: credits(1) }, { machine_id: null, amount: credits(3) }]],
          // Pinned is empty now: skipped.
          [credits(5), [{ machine_id: null, amount: credits(5) }]],
          [0n, []]
        ]
        for (const [amount, allocations] of cases) {
          const before = yield* store.balances(account)
          const expected = allocate(spendingSources(before, machine), amount)
          assert.deepStrictEqual(expected, { _tag: "Allocated", allocations })
          const request = yield* ordered(account, machine, order, amount)
          assert.deepStrictEqual(yield* reserveInOrder(request), { _tag: "reserved", allocations })
          const { amount: _, scopes: __, ...fields } = request
          assert.deepStrictEqual(yield* store.reservation(request.ref), expectedReservation({ ...fields, allocations }))
        }
        assert.deepStrictEqual(yield* store.balances(account), [
          { machine_id: null, posted: credits(10), held: credits(8) },
          { machine_id: machine, posted: credits(3), held: credits(3) }
        ])
        yield* assertConsistent(account)
      }))

    it.effect("insufficient answers the total available and changes nothing; a ref that exists is a duplicate", () =>
      Effect.gen(function*() {
        const store = yield* LedgerStore
        const reserveInOrder = store.reserveInOrder
        if (reserveInOrder === undefined) return
        const account = yield* freshAccount
        const machine = yield* freshMachine
        yield* fund(account, machine, 2n)
        yield* fund(account, null, 5n)
        yield* hold(account, null, [{ machine_id: null, amount: 1n }])
        const before = yield* snapshot(account)
        const over = yield* ordered(account, machine, [machine, null], 7n)
        assert.deepStrictEqual(yield* reserveInOrder(over), { _tag: "insufficient", available: 6n })
        assert.isUndefined(yield* store.reservation(over.ref))
        // Only the scopes given count: a call on no machine cannot reach the pinned 2.
        const wide = yield* ordered(account, null, [null], 5n)
        assert.deepStrictEqual(yield* reserveInOrder(wide), { _tag: "insufficient", available: 4n })
        const none = yield* ordered(yield* freshAccount, null, [null], 1n)
        assert.deepStrictEqual(yield* reserveInOrder(none), { _tag: "insufficient", available: 0n })
        assert.deepStrictEqual(yield* snapshot(account), before)
        const exact = yield* ordered(account, machine, [machine, null], 6n)
        assert.strictEqual((yield* reserveInOrder(exact))._tag, "reserved")
        const afterExact = yield* snapshot(account, [exact.ref])
        assert.deepStrictEqual(yield* reserveInOrder(exact), { _tag: "duplicate" })
        assert.deepStrictEqual(yield* reserveInOrder({ ...exact, amount: 0n }), { _tag: "duplicate" })
        assert.deepStrictEqual(yield* snapshot(account, [exact.ref]), afterExact)
        yield* assertConsistent(account)
      }))

    it.effect("pinned scopes of another machine, a scope twice or a negative amount are defects", () =>
      Effect.gen(function*() {
        const store = yield* LedgerStore
        const reserveInOrder = store.reserveInOrder
        if (reserveInOrder === undefined) return
        const account = yield* freshAccount
        yield* fund(account, "m_1", credits(5))
        yield* fund(account, null, credits(5))
        const before = yield* snapshot(account)
        yield* assertDies(reserveInOrder(yield* ordered(account, "m_2", ["m_1", null], 1n)), "another machine's scope")
        yield* assertDies(reserveInOrder(yield* ordered(account, null, ["m_1"], 1n)), "pinned for no machine")
        yield* assertDies(reserveInOrder(yield* ordered(account, null, [null, null], 1n)), "a scope twice")
        yield* assertDies(reserveInOrder(yield* ordered(account, null, [null], -1n)), "negative amount")
        assert.deepStrictEqual(yield* snapshot(account), before)
      }))

    it.effect("30 concurrent requests against 6 pinned + 6 account-wide never exceed either", () =>
      Effect.gen(function*() {
        const store = yield* LedgerStore
        const reserveInOrder = store.reserveInOrder
        if (reserveInOrder === undefined) return
        const account = yield* freshAccount
        const machine = yield* freshMachine
        yield* fund(account, machine, credits(6))
        yield* fund(account, null, credits(6))
        const requests = yield* Effect.all(Array.from({ length: 30 }, (_, i) =>
          i % 3 === 0
            ? ordered(account, null, [null], credits(1))
            : ordered(account, machine, [machine, null], i % 3 === 1 ? credits(1) : credits(2))
        ))
        const results = yield* Effect.all(requests.map(reserveInOrder), unbounded)
        const taken = results.flatMap((r) => r._tag === "reserved" ? r.allocations : [])
        const sum = (m: string | null) => taken.filter((a) => a.machine_id === m).reduce((x, a) => x + a.amount, 0n)
        assert.isTrue(sum(machine) <= credits(6) && sum(null) <= credits(6))
        // 12 credits and requests of 1 or 2: it runs dry only when less than 2 is left.
        assert.isTrue(sum(machine) + sum(null) >= credits(11), `took ${sum(machine) + sum(null)}`)
        const balances = yield* store.balances(account)
        for (const b of balances) assert.isTrue(b.held <= b.posted, `held ${b.held} > posted ${b.posted}`)
        yield* assertConsistent(account)
      }))
  })
}
