/**
 * What the parts of the gateway store contract share (GatewayStoreContract.ts calls them): the
 * fixtures they set up (an account with its keys and credits, a reservation, an admission, a
 * usage record, a metered call) and what they read back to compare (an account as the ledger and
 * the usage store show it). Every fixture is fresh and random and every time explicit, so that the
 * suite can share a persistent database with other suites (the header of GatewayStoreContract.ts).
 */
import { assert } from "@effect/vitest"
import { Effect } from "effect"
import { grantParts, type UsageRecord, UsageStore } from "@model-platform/core/billing"
import { type Admission, GatewayStore, type Metered } from "@model-platform/core/gateway"
import { type AccountRecord, AccountStore, type KeyRecord, KeyStore } from "@model-platform/core/keys"
import { generateId, type Timestamp, toTimestamp, windowStartOf } from "@model-platform/core/kernel"
import {
  type Allocation,
  auditAccount,
  type LedgerEntry,
  LedgerStore,
  type OrderedReservation,
  type Reservation,
  type ReservedHint,
  settlementOf,
  spendingOrder
} from "@model-platform/core/ledger"
import { at, randomHex, sampleKey, sampleUsage } from "./SampleRecords.ts"

// ---------------------------------------------------------------------------------------------
// times, amounts, ids

export { at }
/** Far enough that no expiry reaches it. */
export const NEVER = toTimestamp(Date.UTC(2100, 0, 1))
/** The month of `at`: the one the calls' budgets and allowances count in. */
export const MONTH = "2026-01"

export const MINUTE = 60_000
/** The current minute's window (wall clock: the suite runs with live services). */
export const thisMinute = () => windowStartOf(Date.now(), MINUTE)

/** Micro-credits of `n` credits (n with at most 6 decimals). */
export const credits = (n: number): bigint => BigInt(Math.round(n * 1_000_000))

export const unbounded = { concurrency: "unbounded" } as const

export const jsonBigint = (_: string, v: unknown) => (typeof v === "bigint" ? `${v}n` : v)

export const freshMachine = generateId("machine")
export const freshRef = generateId("usage")

// ---------------------------------------------------------------------------------------------
// accounts, keys, credits

/** A new account with `count` live inference keys (`keyFields` override each), inserted through AccountStore and KeyStore. */
export const accountWithKeys = Effect.fnUntraced(function*(count: number, keyFields: Partial<KeyRecord> = {}) {
  const id = yield* generateId("acct")
  const account: AccountRecord = { id, email: `${id}@gateway-contract.test`, created_at: at(0) }
  yield* (yield* AccountStore).insert(account)
  const keys: Array<KeyRecord> = []
  for (let i = 0; i < count; i++) {
    const key = sampleKey(yield* generateId("key"), id, yield* randomHex, { name: "gateway contract key", ...keyFields })
    yield* (yield* KeyStore).insert(key)
    keys.push(key)
  }
  return { account, keys }
})

/** A new account with one live key; `keyFields` override the key's. */
export const accountWithKey = Effect.fnUntraced(function*(keyFields: Partial<KeyRecord> = {}) {
  const { account, keys: [key] } = yield* accountWithKeys(1, keyFields)
  return { account, key: key! }
})

/** Posts a credit to one scope of the account and checks it was new. */
export const fund = Effect.fnUntraced(function*(accountId: string, machineId: string | null, amount: bigint) {
  const entry: LedgerEntry = {
    id: yield* generateId("led"),
    account_id: accountId,
    machine_id: machineId,
    amount,
    type: "credit_added",
    ref: yield* generateId("order"),
    created_at: at(0)
  }
  assert.strictEqual(yield* (yield* LedgerStore).post(entry), "posted")
  return entry
})

/** A new account's key, the account holding `amount` credits account-wide (none for 0). */
export const keyWithCredits = Effect.fnUntraced(function*(amount: bigint) {
  const { account, key } = yield* accountWithKey()
  if (amount > 0n) yield* fund(account.id, null, amount)
  return key
})

// ---------------------------------------------------------------------------------------------
// admissions

/** The reservation a call on `machineId` asks for: `amount` from its spending order. */
export const ordered = Effect.fnUntraced(function*(
  accountId: string,
  machineId: string | null,
  amount: bigint,
  expiresAt: Timestamp = NEVER
) {
  const request: OrderedReservation = {
    ref: yield* freshRef,
    account_id: accountId,
    machine_id: machineId,
    scopes: spendingOrder(machineId),
    amount,
    created_at: at(1),
    expires_at: expiresAt
  }
  return request
})

/** An admission of the key's call, counted in the key's bucket of the current minute. */
export const admissionOf = (
  key: KeyRecord,
  fields: {
    readonly reservation?: OrderedReservation | undefined
    readonly touch_at?: Timestamp | undefined
    readonly limit?: number
    readonly hits?: number
    readonly bucket?: string
    readonly window_start?: number
    readonly account_id?: string
    readonly key_id?: string
  } = {}
): Admission => ({
  account_id: fields.account_id ?? key.account_id,
  key_id: fields.key_id ?? key.id,
  touch_at: fields.touch_at,
  rate: {
    bucket: fields.bucket ?? `rpm:${key.id}`,
    window_start: fields.window_start ?? thisMinute(),
    window_ms: MINUTE,
    limit: fields.limit ?? 1_000,
    // Absent unless asked: most admissions take the one hit a store assumes then.
    ...(fields.hits === undefined ? {} : { hits: fields.hits })
  },
  reservation: fields.reservation
})

/** One admission as a batch of one. */
export const admitOne = (gateway: GatewayStore["Service"], admission: Admission) =>
  Effect.map(gateway.admit([admission]), (results) => {
    assert.strictEqual(results.length, 1)
    return results[0]!
  })

/** Admits a call with a reservation and checks it was admitted and reserved; answers its hint. */
export const admitReserved = Effect.fnUntraced(function*(key: KeyRecord, reservation: OrderedReservation) {
  const result = yield* admitOne(yield* GatewayStore, admissionOf(key, { reservation }))
  assert.strictEqual(result._tag, "Admitted", `admit ${reservation.ref}: ${JSON.stringify(result, jsonBigint)}`)
  const reserved = result._tag === "Admitted" ? result.reserved : undefined
  assert.strictEqual(reserved?._tag, "reserved", `reserve ${reservation.ref}: ${JSON.stringify(reserved, jsonBigint)}`)
  const hint: ReservedHint = {
    account_id: reservation.account_id,
    allocations: reserved?._tag === "reserved" ? reserved.allocations : []
  }
  return hint
})

// ---------------------------------------------------------------------------------------------
// metering

/** Whose call a record is: a key's id and account (an admission's `key_id` and `account_id` will do). */
export type Caller = Pick<KeyRecord, "id" | "account_id">

/** A usage record of a call of `key` with every field set; `fields` overrides. */
export const usageRecord = (key: Caller, ref: string, machineId: string, fields: Partial<UsageRecord> = {}): UsageRecord =>
  sampleUsage(ref, key.account_id, { at: at(5), key_id: key.id, machine_id: machineId, ...fields })

/**
 * A priced call to meter: its settlement to `actual` (as `settlementOf` builds it) and its record,
 * which says what the settlement charged in credits and in grants (with no grants: `actual`).
 */
export const meteredCall = Effect.fnUntraced(function*(
  key: Caller,
  reservation: OrderedReservation,
  hint: ReservedHint,
  actual: bigint,
  recordFields: Partial<UsageRecord> = {}
) {
  const settlement = yield* settlementOf(reservation.ref, actual, hint)
  const call: Metered = {
    settlement,
    record: usageRecord(key, reservation.ref, reservation.machine_id ?? "m_none", {
      credits: settlement.charged,
      list_credits: actual,
      ...grantParts(settlement.grants ?? []),
      ...recordFields
    })
  }
  return call
})

// ---------------------------------------------------------------------------------------------
// what the tests read back

/** What the ledger and the usage store show of an account and some refs: "changes nothing" compares these. */
export const snapshot = Effect.fnUntraced(function*(accountId: string, refs: ReadonlyArray<string> = []) {
  const ledger = yield* LedgerStore
  const usage = yield* UsageStore
  return {
    balances: yield* ledger.balances(accountId),
    entries: yield* ledger.entries(accountId),
    pending: yield* ledger.pending(accountId),
    reservations: yield* Effect.forEach(refs, ledger.reservation),
    records: yield* Effect.forEach(refs, usage.byRef)
  }
})

/** posted = sum of entries and held = sum of pending allocations, per scope; held never above posted here. */
export const assertConsistent = Effect.fnUntraced(function*(accountId: string) {
  const { balances, entries, pending } = yield* snapshot(accountId)
  assert.deepStrictEqual(auditAccount({ balances, entries, pending }), [], accountId)
})

/** The reservation `request` is once admitted with `allocations`, as `LedgerStore.reservation` shows it. */
export const pendingReservation = (request: OrderedReservation, allocations: ReadonlyArray<Allocation>): Reservation => ({
  ref: request.ref,
  account_id: request.account_id,
  machine_id: request.machine_id,
  allocations,
  status: "pending",
  created_at: request.created_at,
  expires_at: request.expires_at,
  finished_at: null,
  charged: null,
  excess: null
})

export const oneTo = (n: number) => Array.from({ length: n }, (_, i) => i + 1)
export const sorted = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)
