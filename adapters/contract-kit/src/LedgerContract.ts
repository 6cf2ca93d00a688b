/**
 * The contract suite of the ledger store port (core/src/ledger/LedgerStore.ts). Every
 * implementation runs it against its own layer: `ledgerStoreContract("memory", LedgerStoreMemory)`.
 *
 * The layer is built once per suite and shared by its tests, so every test works on fresh random
 * account ids and refs and never assumes an empty store (the suite can run against a persistent
 * database that earlier runs have written to). Times are explicit: reservations that must stay
 * pending expire in 2100, and the expiry tests work in the year 2000, so `expire` in one test
 * never touches another test's reservations.
 */
import { assert, describe, layer, type Vitest } from "@effect/vitest"
import { Effect, type Layer } from "effect"
import {
  allocate,
  type Allocation,
  auditAccount,
  type CreditEntryType,
  type LedgerEntry,
  LedgerStore,
  type NewReservation,
  type Reservation,
  type ScopeBalance,
  spendingSources,
  usageEntries
} from "@model-platform/core/ledger"
import { generateId, type Timestamp, toTimestamp } from "@model-platform/core/kernel"
import { budgetTests } from "./BudgetContract.ts"
import { creditTotalsTests } from "./CreditTotalsContract.ts"
import { budgetProperty } from "./BudgetProperty.ts"
import { grantTests } from "./GrantContract.ts"
import { grantProperty } from "./GrantProperty.ts"
import { drawTests } from "./DrawContract.ts"
import { drawProperty } from "./DrawProperty.ts"
import { assertDies } from "./ContractSupport.ts"
import { at } from "./SampleRecords.ts"

/** Store layers may open a database, which takes a few seconds on embedded Postgres. */
const layerOptions = { excludeTestServices: true, timeout: "60 seconds" } as const

// ---------------------------------------------------------------------------------------------
// fixtures

/** A fixed instant plus `ms`. */
/** Far enough that no expiry in this suite reaches it. */
const NEVER = toTimestamp(Date.UTC(2100, 0, 1))
/** The expiry tests' own era, before every other reservation's expires_at. */
const y2k = (ms: number): Timestamp => toTimestamp(Date.UTC(2000, 0, 1) + ms)

const credits = (n: number): bigint => BigInt(n) * 1_000_000n

const unbounded = { concurrency: "unbounded" } as const

const freshAccount = generateId("acct")
const freshMachine = generateId("machine")

const creditEntry = Effect.fnUntraced(function*(
  accountId: string,
  fields: {
    readonly machine_id?: string | null
    readonly amount: bigint
    readonly type?: CreditEntryType
    readonly ref?: string
    readonly created_at?: Timestamp
  }
) {
  const entry: LedgerEntry = {
    id: yield* generateId("led"),
    account_id: accountId,
    machine_id: fields.machine_id ?? null,
    amount: fields.amount,
    type: fields.type ?? "credit_added",
    ref: fields.ref ?? (yield* generateId("order")),
    created_at: fields.created_at ?? at(0)
  }
  return entry
})

/** Posts a credit and checks it was new. */
const fund = Effect.fnUntraced(function*(
  accountId: string,
  machineId: string | null,
  amount: bigint,
  createdAt: Timestamp = at(0)
) {
  const store = yield* LedgerStore
  const entry = yield* creditEntry(accountId, { machine_id: machineId, amount, created_at: createdAt })
  assert.strictEqual(yield* store.post(entry), "posted")
  return entry
})

const newReservation = Effect.fnUntraced(function*(
  accountId: string,
  machineId: string | null,
  allocations: ReadonlyArray<Allocation>,
  expiresAt: Timestamp = NEVER
) {
  const reservation: NewReservation = {
    ref: yield* generateId("usage"),
    account_id: accountId,
    machine_id: machineId,
    allocations,
    created_at: at(1),
    expires_at: expiresAt
  }
  return reservation
})

/** Reserves and checks it was accepted. */
const hold = Effect.fnUntraced(function*(
  accountId: string,
  machineId: string | null,
  allocations: ReadonlyArray<Allocation>,
  expiresAt: Timestamp = NEVER
) {
  const reservation = yield* newReservation(accountId, machineId, allocations, expiresAt)
  assert.strictEqual(yield* (yield* LedgerStore).reserve(reservation), "reserved")
  return reservation
})

/** The usage entries a settlement writes for these charges. */
const usage = Effect.fnUntraced(function*(
  reservation: NewReservation,
  charges: ReadonlyArray<Allocation>,
  createdAt: Timestamp = at(2)
) {
  return yield* usageEntries(reservation.account_id, reservation.ref, charges, createdAt)
})

const scope = (balances: ReadonlyArray<ScopeBalance>, machineId: string | null): ScopeBalance =>
  balances.find((b) => b.machine_id === machineId) ?? { machine_id: machineId, posted: 0n, held: 0n }

/** Everything the store shows about an account (and some reservations): "changes nothing" compares these. */
const snapshot = Effect.fnUntraced(function*(accountId: string, refs: ReadonlyArray<string> = []) {
  const store = yield* LedgerStore
  return {
    balances: yield* store.balances(accountId),
    entries: yield* store.entries(accountId),
    pending: yield* store.pending(accountId),
    reservations: yield* Effect.forEach(refs, store.reservation)
  }
})

/** posted = sum of entries and held = sum of pending allocations, per scope. */
const assertConsistent = Effect.fnUntraced(function*(accountId: string) {
  const { balances, entries, pending } = yield* snapshot(accountId)
  assert.deepStrictEqual(auditAccount({ balances, entries, pending }), [])
})

/** Store failures are defects: input that breaks the port's rules must die, not succeed or fail. */

const expectedReservation = (r: NewReservation, overrides: Partial<Reservation> = {}): Reservation => ({
  ...r,
  status: "pending",
  finished_at: null,
  charged: null,
  excess: null,
  ...overrides
})

// ---------------------------------------------------------------------------------------------
// tests

const ledgerTests = (it: Vitest.MethodsNonLive<LedgerStore>) => {
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

export interface LedgerContractOptions {
  /** Scenarios of the budgets' interleaving property (BudgetProperty.ts); env BUDGET_PROPERTY_RUNS overrides. */
  readonly budgetRuns?: number
}

/** Declares the ledger store contract on `storeLayer` (built once for the suite). */
export const ledgerStoreContract = <E>(
  name: string,
  storeLayer: Layer.Layer<LedgerStore, E>,
  options: LedgerContractOptions = {}
): void =>
  layer(storeLayer, layerOptions)(name, (it) => {
    ledgerTests(it)
    budgetTests(it)
    grantTests(it)
    drawTests(it)
    creditTotalsTests(it)
    const runs = Number(process.env["BUDGET_PROPERTY_RUNS"] ?? options.budgetRuns ?? 30)
    budgetProperty(it, runs)
    grantProperty(it, runs)
    drawProperty(it, runs)
  })
