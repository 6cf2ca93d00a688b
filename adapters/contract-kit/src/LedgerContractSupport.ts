/**
 * What the ledger store contract's tests share (LedgerContract.ts): fresh ids, explicit times,
 * credits posted and held, and the store's state read whole to compare or to audit.
 */
import { assert } from "@effect/vitest"
import { Effect } from "effect"
import { type Allocation, auditAccount, type CreditEntryType, type LedgerEntry, LedgerStore, type NewReservation, type Reservation, type ScopeBalance, usageEntries } from "@model-platform/core/ledger"
import { generateId, type Timestamp, toTimestamp } from "@model-platform/core/kernel"
import { at } from "./SampleRecords.ts"

/** Far enough that no expiry in this suite reaches it. */
export const NEVER = toTimestamp(Date.UTC(2100, 0, 1))
/** The expiry tests' own era, before every other reservation's expires_at. */
export const y2k = (ms: number): Timestamp => toTimestamp(Date.UTC(2000, 0, 1) + ms)

export const credits = (n: number): bigint => BigInt(n) * 1_000_000n

export const unbounded = { concurrency: "unbounded" } as const

export const freshAccount = generateId("acct")
export const freshMachine = generateId("machine")

export const creditEntry = Effect.fnUntraced(function*(
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
export const fund = Effect.fnUntraced(function*(
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

export const newReservation = Effect.fnUntraced(function*(
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
export const hold = Effect.fnUntraced(function*(
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
export const usage = Effect.fnUntraced(function*(
  reservation: NewReservation,
  charges: ReadonlyArray<Allocation>,
  createdAt: Timestamp = at(2)
) {
  return yield* usageEntries(reservation.account_id, reservation.ref, charges, createdAt)
})

export const scope = (balances: ReadonlyArray<ScopeBalance>, machineId: string | null): ScopeBalance =>
  balances.find((b) => b.machine_id === machineId) ?? { machine_id: machineId, posted: 0n, held: 0n }

/** Everything the store shows about an account (and some reservations): "changes nothing" compares these. */
export const snapshot = Effect.fnUntraced(function*(accountId: string, refs: ReadonlyArray<string> = []) {
  const store = yield* LedgerStore
  return {
    balances: yield* store.balances(accountId),
    entries: yield* store.entries(accountId),
    pending: yield* store.pending(accountId),
    reservations: yield* Effect.forEach(refs, store.reservation)
  }
})

/** posted = sum of entries and held = sum of pending allocations, per scope. */
export const assertConsistent = Effect.fnUntraced(function*(accountId: string) {
  const { balances, entries, pending } = yield* snapshot(accountId)
  assert.deepStrictEqual(auditAccount({ balances, entries, pending }), [])
})

export const expectedReservation = (r: NewReservation, overrides: Partial<Reservation> = {}): Reservation => ({
  ...r,
  status: "pending",
  finished_at: null,
  charged: null,
  excess: null,
  ...overrides
})
