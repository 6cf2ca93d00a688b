/**
 * The contract suite of the gateway store port (core/src/gateway/GatewayStore.ts). Every platform
 * store set runs it against its own layer of the ports it uses (`GatewayContractStores`; a layer
 * of every platform store will do): `gatewayStoreContract("memory", MemoryPlatformStores)`. The
 * gateway store is checked through the other ports of the same layer (AccountStore and KeyStore
 * to set up, RateLimitStore, LedgerStore, UsageStore): what `admit`
 * and `commit` do must be what those stores show afterwards, and the answers must be those of the
 * composed steps (`GatewayStoreComposed`) whatever the store does in one statement.
 *
 * The layer is built once per suite and shared by its tests, so every test works on fresh random
 * accounts, keys, machines and refs and never assumes an empty store (the suite can run against a
 * persistent database that other suites write to at the same time). Times are explicit:
 * reservations that must stay pending expire in 2100; the one that must expire does so in 1990,
 * before every other suite's era, so `expire` here never touches another test's reservations.
 * Rate windows are the current minute's (a store may drop the counters of windows long past).
 *
 * Not asserted, because the composed steps (memory, DynamoDB) have no transaction around a call:
 * two concurrent commits of the same call may record credits 0 for a call one of them charged; a
 * settlement that dies mid-batch leaves the earlier calls of the batch applied (PostgreSQL rolls
 * the batch back). The Batcher retries a failed batch call by call, and a replayed commit (the
 * gateway retries metering and replays its journal) whose settlement went through records what the
 * reservation was charged.
 */
import { assert, describe, layer, type Vitest } from "@effect/vitest"
import { Effect, type Layer } from "effect"
import type { AccountRecord } from "@model-platform/core/keys"
import { AccountStore, type KeyRecord, KeyStore } from "@model-platform/core/keys"
import { generateId, RateLimitStore, type Timestamp, toTimestamp, windowStartOf } from "@model-platform/core/kernel"
import {
  allocate,
  type Allocation,
  auditAccount,
  type LedgerEntry,
  LedgerStore,
  type OrderedReservation,
  type Reservation,
  type ReservedHint,
  type ScopeBalance,
  type Settlement,
  settlementOf,
  spendingOrder,
  spendingSources
} from "@model-platform/core/ledger"
import {
  type Admission,
  type AdmissionResult,
  GatewayStore,
  type Metered,
  type MeteredResult
} from "@model-platform/core/gateway"
import { reportOf, type UsageDays, type UsageRecord, UsageStore } from "@model-platform/core/billing"
import { gatewayBudgetTests } from "./GatewayBudgetContract.ts"
import { gatewayGrantTests } from "./GatewayGrantContract.ts"
import { gatewayLeaseTests } from "./GatewayLeaseContract.ts"
import { assertDies } from "./ContractSupport.ts"

/** Store layers may open a database, which takes a few seconds on embedded Postgres. */
const layerOptions = { excludeTestServices: true, timeout: "60 seconds" } as const

/** Every day a test's records can fall on: the usage store's report over them. */
const allDays = (accountId: string): UsageDays => ({ account_id: accountId, from: "2000-01-01", to: "2099-12-31" })

const unbounded = { concurrency: "unbounded" } as const

/** The ports the suite runs on: the gateway store and the stores it is checked through. */
export type GatewayContractStores = GatewayStore | AccountStore | KeyStore | RateLimitStore | LedgerStore | UsageStore

// ---------------------------------------------------------------------------------------------
// fixtures

/** A fixed instant plus `ms`. */
const at = (ms: number): Timestamp => toTimestamp(Date.UTC(2026, 0, 15, 10, 20, 30, 456) + ms)
/** Far enough that no expiry reaches it. */
const NEVER = toTimestamp(Date.UTC(2100, 0, 1))
/** The expiry test's own era, before every other suite's reservations expire. */
const y1990 = (ms: number): Timestamp => toTimestamp(Date.UTC(1990, 0, 1) + ms)

/** Micro-credits of `n` credits (n with at most 6 decimals). */
const credits = (n: number): bigint => BigInt(Math.round(n * 1_000_000))

const MINUTE = 60_000
/** The current minute's window (wall clock: the suite runs with live services). */
const thisMinute = () => windowStartOf(Date.now(), MINUTE)

const freshMachine = generateId("machine")
const freshRef = generateId("usage")

const randomHex = Effect.sync(() =>
  Array.from(crypto.getRandomValues(new Uint8Array(32)), (b) => b.toString(16).padStart(2, "0")).join(""))

/** A new account with one live key, inserted through AccountStore and KeyStore. */
const accountWithKey = Effect.fnUntraced(function*(keyFields: Partial<KeyRecord> = {}) {
  const id = yield* generateId("acct")
  const account: AccountRecord = { id, email: `${id}@gateway-contract.test`, created_at: at(0) }
  yield* (yield* AccountStore).insert(account)
  const key: KeyRecord = {
    id: yield* generateId("key"),
    account_id: id,
    name: "gateway contract key",
    prefix: "mpk_abcdefgh",
    secret_hash: yield* randomHex,
    permissions: ["inference"],
    machine_id: null,
    subscription_id: null,
    rental_id: null,
    agent_id: null,
    created_at: at(0),
    last_used_at: null,
    revoked_at: null,
    ...keyFields
  }
  yield* (yield* KeyStore).insert(key)
  return { account, key }
})

/** Posts a credit to one scope of the account and checks it was new. */
const fund = Effect.fnUntraced(function*(accountId: string, machineId: string | null, amount: bigint) {
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

/** The reservation a call on `machineId` asks for: `amount` from its spending order. */
const ordered = Effect.fnUntraced(function*(
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
const admissionOf = (
  key: KeyRecord,
  fields: {
    readonly reservation?: OrderedReservation | undefined
    readonly touch_at?: Timestamp | undefined
    readonly limit?: number
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
    limit: fields.limit ?? 1_000
  },
  reservation: fields.reservation
})

/** One admission as a batch of one. */
const admitOne = (gateway: GatewayStore["Service"], admission: Admission) =>
  Effect.map(gateway.admit([admission]), (results) => {
    assert.strictEqual(results.length, 1)
    return results[0]!
  })

/** Admits a call with a reservation and checks it was admitted and reserved; answers its hint. */
const admitReserved = Effect.fnUntraced(function*(key: KeyRecord, reservation: OrderedReservation) {
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

/** A usage record of a call of `key` with every field set; `fields` overrides. */
const usageRecord = (key: KeyRecord, ref: string, machineId: string, fields: Partial<UsageRecord> = {}): UsageRecord => ({
  ref,
  account_id: key.account_id,
  at: at(5),
  key_id: key.id,
  agent_id: null,
  machine_id: machineId,
  service: "chat",
  model: "ref-chat",
  unit: "tokens",
  quantity: 1_500n,
  input_tokens: 1_000n,
  output_tokens: 500n,
  list_credits: 3_000n,
  credits: 2_000n,
  from_allowance: 0n,
  from_trial: 0n,
  ...fields
})

/** A priced call to meter: its settlement to `actual` (as `settlementOf` builds it) and its record. */
const meteredCall = Effect.fnUntraced(function*(
  key: KeyRecord,
  reservation: OrderedReservation,
  hint: ReservedHint,
  actual: bigint,
  recordFields: Partial<UsageRecord> = {}
) {
  const settlement = yield* settlementOf(reservation.ref, actual, hint)
  const call: Metered = {
    settlement,
    record: usageRecord(key, reservation.ref, reservation.machine_id ?? "m_none", {
      credits: actual,
      list_credits: actual,
      ...recordFields
    })
  }
  return call
})

const jsonBigint = (_: string, v: unknown) => (typeof v === "bigint" ? `${v}n` : v)

const scope = (balances: ReadonlyArray<ScopeBalance>, machineId: string | null): ScopeBalance =>
  balances.find((b) => b.machine_id === machineId) ?? { machine_id: machineId, posted: 0n, held: 0n }

/** What the ledger and the usage store show of an account and some refs: "changes nothing" compares these. */
const snapshot = Effect.fnUntraced(function*(accountId: string, refs: ReadonlyArray<string> = []) {
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
const assertConsistent = Effect.fnUntraced(function*(accountId: string) {
  const { balances, entries, pending } = yield* snapshot(accountId)
  assert.deepStrictEqual(auditAccount({ balances, entries, pending }), [], accountId)
})

/** Store failures are defects: input that breaks the port's rules must die, not succeed or fail. */

const pendingReservation = (request: OrderedReservation, allocations: ReadonlyArray<Allocation>): Reservation => ({
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

const oneTo = (n: number) => Array.from({ length: n }, (_, i) => i + 1)
const sorted = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)
const byId = (a: LedgerEntry, b: LedgerEntry) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)

// ---------------------------------------------------------------------------------------------
// tests

const gatewayTests = (it: Vitest.MethodsNonLive<GatewayContractStores>) => {
  describe("admit: batches", () => {
    it.effect("a batch across accounts and keys answers in the order given, each as if admitted alone", () =>
      Effect.gen(function*() {
        const gateway = yield* GatewayStore
        const ledger = yield* LedgerStore
        const first = yield* accountWithKey()
        const second = yield* accountWithKey()
        const revoked = yield* accountWithKey({ revoked_at: at(0) })
        yield* fund(first.account.id, null, 500n)
        yield* fund(second.account.id, null, 50n)
        const window = thisMinute()
        const fits = yield* ordered(first.account.id, null, 300n)
        const tooMuch = yield* ordered(second.account.id, null, 60n)
        const batch = [
          admissionOf(second.key, { reservation: tooMuch, window_start: window }),
          admissionOf(first.key, { reservation: fits, window_start: window }),
          admissionOf(revoked.key, { window_start: window }),
          admissionOf(first.key, { window_start: window, limit: 1 }),
          admissionOf(second.key, { window_start: window })
        ]
        const results = yield* gateway.admit(batch)
        assert.deepStrictEqual(results, [
          { _tag: "Admitted", count: 1, reserved: { _tag: "insufficient", available: 50n } },
          { _tag: "Admitted", count: 1, reserved: { _tag: "reserved", allocations: [{ machine_id: null, amount: 300n }] } },
          { _tag: "KeyRevoked" },
          { _tag: "RateLimited", count: 2 },
          { _tag: "Admitted", count: 2, reserved: undefined }
        ])
        assert.strictEqual((yield* ledger.reservation(fits.ref))?.status, "pending")
        assert.isUndefined(yield* ledger.reservation(tooMuch.ref))
        assert.deepStrictEqual(yield* gateway.admit([]), [])
      }))

    it.effect("admissions of one key in one batch reserve one after the other: no overspend inside a batch", () =>
      Effect.gen(function*() {
        const gateway = yield* GatewayStore
        const { account, key } = yield* accountWithKey()
        yield* fund(account.id, null, 250n)
        const window = thisMinute()
        const requests = yield* Effect.all(Array.from({ length: 4 }, () => ordered(account.id, null, 100n)))
        const results = yield* gateway.admit(requests.map((reservation) => admissionOf(key, { reservation, window_start: window })))
        assert.deepStrictEqual(results.map((r) => r._tag === "Admitted" ? [r.count, r.reserved?._tag] : [r._tag]), [
          [1, "reserved"],
          [2, "reserved"],
          [3, "insufficient"],
          [4, "insufficient"]
        ])
        yield* assertConsistent(account.id)
      }))

    it.effect("a batch holding a broken admission is a defect and admits none of it", () =>
      Effect.gen(function*() {
        const gateway = yield* GatewayStore
        const rateLimits = yield* RateLimitStore
        const { key } = yield* accountWithKey()
        const window = thisMinute()
        const good = admissionOf(key, { window_start: window })
        yield* assertDies(gateway.admit([good, { ...good, rate: { ...good.rate, bucket: "" } }]), "empty bucket in a batch")
        assert.strictEqual(yield* rateLimits.hit(`rpm:${key.id}`, window, MINUTE), 1)
      }))
  })

  describe("admit: the key, its use and the rpm count", () => {
    it.effect("a live key is admitted, counted 1, 2, 3 in its window, sharing the count with RateLimitStore.hit", () =>
      Effect.gen(function*() {
        const gateway = yield* GatewayStore
        const rateLimits = yield* RateLimitStore
        const { key } = yield* accountWithKey()
        const window = thisMinute()
        const admit = () => admitOne(gateway, admissionOf(key, { window_start: window }))
        const expected = (count: number): AdmissionResult => ({ _tag: "Admitted", count, reserved: undefined })
        assert.deepStrictEqual(yield* admit(), expected(1))
        assert.deepStrictEqual(yield* admit(), expected(2))
        assert.deepStrictEqual(yield* admit(), expected(3))
        assert.strictEqual(yield* rateLimits.hit(`rpm:${key.id}`, window, MINUTE), 4)
        assert.deepStrictEqual(yield* admit(), expected(5))
        // Another window of the same bucket counts on its own.
        assert.deepStrictEqual(
          yield* admitOne(gateway, admissionOf(key, { window_start: window + MINUTE })),
          expected(1)
        )
        assert.strictEqual(yield* rateLimits.hit(`rpm:${key.id}`, window, MINUTE), 6)
      }))

    it.effect("touch_at moves last_used_at forward, never backwards; undefined leaves it; nothing else changes", () =>
      Effect.gen(function*() {
        const gateway = yield* GatewayStore
        const keys = yield* KeyStore
        const { key } = yield* accountWithKey()
        const stored = keys.get(key.account_id, key.id)
        yield* admitOne(gateway, admissionOf(key))
        assert.deepStrictEqual(yield* stored, key, "touch_at undefined on a never used key")
        yield* admitOne(gateway, admissionOf(key, { touch_at: at(2_000) }))
        assert.deepStrictEqual(yield* stored, { ...key, last_used_at: at(2_000) })
        yield* admitOne(gateway, admissionOf(key, { touch_at: at(1_000) }))
        assert.deepStrictEqual(yield* stored, { ...key, last_used_at: at(2_000) }, "backwards")
        yield* admitOne(gateway, admissionOf(key))
        assert.deepStrictEqual(yield* stored, { ...key, last_used_at: at(2_000) }, "undefined")
        yield* admitOne(gateway, admissionOf(key, { touch_at: at(2_001) }))
        assert.deepStrictEqual(yield* stored, { ...key, last_used_at: at(2_001) })
      }))

    it.effect("concurrent admits touching a key keep the latest time", () =>
      Effect.gen(function*() {
        const gateway = yield* GatewayStore
        const keys = yield* KeyStore
        const { key } = yield* accountWithKey()
        const times = Array.from({ length: 15 }, (_, i) => at(((i * 7) % 15) * 1_000))
        yield* Effect.all(times.map((t) => admitOne(gateway, admissionOf(key, { touch_at: t }))), unbounded)
        assert.strictEqual((yield* keys.get(key.account_id, key.id))?.last_used_at, at(14_000))
      }))

    it.effect("a revoked key, an unknown key or another account's key: KeyRevoked, nothing counted, touched or reserved", () =>
      Effect.gen(function*() {
        const gateway = yield* GatewayStore
        const keys = yield* KeyStore
        const ledger = yield* LedgerStore
        const rateLimits = yield* RateLimitStore
        const { account, key } = yield* accountWithKey()
        const { account: other } = yield* accountWithKey()
        yield* fund(account.id, null, credits(10))
        yield* fund(other.id, null, credits(10))
        const revoked = (yield* accountWithKey()).key
        yield* fund(revoked.account_id, null, credits(10))
        const revokedRecord = yield* keys.revoke(revoked.account_id, revoked.id, at(100))
        assert.strictEqual(revokedRecord?.revoked_at, at(100))

        type Ids = { readonly account_id?: string; readonly key_id?: string }
        const cases: ReadonlyArray<readonly [string, KeyRecord, Ids]> = [
          ["revoked key", revoked, {}],
          ["unknown key id", key, { key_id: yield* generateId("key") }],
          ["another account's key", key, { account_id: other.id }]
        ]
        for (const [what, bucketKey, ids] of cases) {
          const accountId = ids.account_id ?? bucketKey.account_id
          const before = yield* snapshot(accountId)
          const keyBefore = yield* keys.get(bucketKey.account_id, bucketKey.id)
          const window = thisMinute()
          const bucket = `rpm:${yield* generateId("key")}`
          const reservation = yield* ordered(accountId, null, credits(1))
          const result = yield* admitOne(gateway, 
            admissionOf(bucketKey, { ...ids, reservation, touch_at: at(5_000), bucket, window_start: window })
          )
          assert.deepStrictEqual(result, { _tag: "KeyRevoked" }, what)
          assert.strictEqual(yield* rateLimits.hit(bucket, window, MINUTE), 1, `${what}: counted`)
          assert.isUndefined(yield* ledger.reservation(reservation.ref), `${what}: reserved`)
          assert.deepStrictEqual(yield* snapshot(accountId), before, `${what}: ledger changed`)
          assert.deepStrictEqual(yield* keys.get(bucketKey.account_id, bucketKey.id), keyBefore, `${what}: touched`)
        }
      }))
  })

  describe("admit: over the limit", () => {
    it.effect("past the limit: RateLimited with the count, nothing reserved, balances unchanged", () =>
      Effect.gen(function*() {
        const gateway = yield* GatewayStore
        const ledger = yield* LedgerStore
        const { account, key } = yield* accountWithKey()
        yield* fund(account.id, null, credits(10))
        const window = thisMinute()
        const first = yield* ordered(account.id, null, credits(2))
        const admit = (reservation: OrderedReservation | undefined, limit: number) =>
          admitOne(gateway, admissionOf(key, { reservation, limit, window_start: window }))
        assert.deepStrictEqual(yield* admit(first, 2), {
          _tag: "Admitted",
          count: 1,
          reserved: { _tag: "reserved", allocations: [{ machine_id: null, amount: credits(2) }] }
        })
        assert.deepStrictEqual(yield* admit(undefined, 2), { _tag: "Admitted", count: 2, reserved: undefined })
        const before = yield* snapshot(account.id, [first.ref])
        for (const [count, limit] of [[3, 2], [4, 2], [5, 0]] as const) {
          const refused = yield* ordered(account.id, null, credits(1))
          assert.deepStrictEqual(yield* admit(refused, limit), { _tag: "RateLimited", count })
          assert.isUndefined(yield* ledger.reservation(refused.ref))
        }
        assert.deepStrictEqual(yield* snapshot(account.id, [first.ref]), before)
        // A larger limit admits again, counting on.
        assert.deepStrictEqual(yield* admit(undefined, 6), { _tag: "Admitted", count: 6, reserved: undefined })
        yield* assertConsistent(account.id)
      }))

    it.effect("any positive safe integer is a limit (rpm has no upper bound in the catalogue)", () =>
      Effect.gen(function*() {
        const gateway = yield* GatewayStore
        const { key } = yield* accountWithKey()
        const window = thisMinute()
        for (
          const [count, limit] of [[1, 2 ** 31 - 1], [2, 2 ** 31], [3, 10_000_000_000], [4, Number.MAX_SAFE_INTEGER]] as const
        ) {
          assert.deepStrictEqual(
            yield* admitOne(gateway, admissionOf(key, { limit, window_start: window })),
            { _tag: "Admitted", count, reserved: undefined },
            `limit ${limit}`
          )
        }
      }))

    it.effect("N concurrent admits over a limit of L: L admitted and reserved, N - L rate limited; counts 1..N once", () =>
      Effect.gen(function*() {
        const gateway = yield* GatewayStore
        const ledger = yield* LedgerStore
        const { account, key } = yield* accountWithKey()
        yield* fund(account.id, null, credits(100))
        const window = thisMinute()
        const requests = yield* Effect.all(Array.from({ length: 30 }, () => ordered(account.id, null, credits(1))))
        const results = yield* Effect.all(
          requests.map((reservation) => admitOne(gateway, admissionOf(key, { reservation, limit: 10, window_start: window }))),
          unbounded
        )
        const counts = results.map((r) => (r._tag === "KeyRevoked" ? 0 : r.count))
        assert.deepStrictEqual(sorted(counts), oneTo(30))
        results.forEach((r, i) => {
          if (r._tag === "Admitted") {
            assert.isAtMost(r.count, 10)
            assert.deepStrictEqual(r.reserved, { _tag: "reserved", allocations: [{ machine_id: null, amount: credits(1) }] })
          } else {
            assert.deepStrictEqual(r._tag, "RateLimited", `admit ${i}`)
          }
        })
        assert.strictEqual(results.filter((r) => r._tag === "Admitted").length, 10)
        const pending = yield* ledger.pending(account.id)
        assert.deepStrictEqual(
          pending.map((r) => r.ref).sort(),
          requests.filter((_, i) => results[i]!._tag === "Admitted").map((r) => r.ref).sort()
        )
        assert.deepStrictEqual(yield* ledger.balances(account.id), [
          { machine_id: null, posted: credits(100), held: credits(10) }
        ])
        yield* assertConsistent(account.id)
      }))
  })

  describe("admit: the reservation", () => {
    it.effect("reserves as allocate over spendingSources takes it (pinned to the call's machine first, then account-wide)", () =>
      Effect.gen(function*() {
        const gateway = yield* GatewayStore
        const ledger = yield* LedgerStore
        const { account, key } = yield* accountWithKey()
        const m = yield* freshMachine
        const m2 = yield* freshMachine
        yield* fund(account.id, m, credits(3))
        yield* fund(account.id, m2, credits(7))
        yield* fund(account.id, null, credits(5))

        /** Admits the request and checks it reserved what core's allocation takes from the balances before. */
        const reserves = Effect.fnUntraced(function*(request: OrderedReservation, literal: ReadonlyArray<Allocation>) {
          const before = yield* ledger.balances(account.id)
          const expected = allocate(spendingSources(before, request.machine_id), request.amount)
          assert.deepStrictEqual(expected, { _tag: "Allocated", allocations: literal })
          const result = yield* admitOne(gateway, admissionOf(key, { reservation: request }))
          assert.strictEqual(result._tag, "Admitted")
          assert.deepStrictEqual(result._tag === "Admitted" ? result.reserved : undefined, {
            _tag: "reserved",
            allocations: literal
          })
          assert.deepStrictEqual(yield* ledger.reservation(request.ref), pendingReservation(request, literal))
          const after = yield* ledger.balances(account.id)
          for (const scopeId of [null, m, m2]) {
            const held = literal.find((a) => a.machine_id === scopeId)?.amount ?? 0n
            assert.deepStrictEqual(scope(after, scopeId), {
              ...scope(before, scopeId),
              held: scope(before, scopeId).held + held
            }, `scope ${scopeId}`)
          }
        })

        // A call on m: its pinned 3 first, then 1 account-wide; m2's credits are never taken.
        yield* reserves(yield* ordered(account.id, m, credits(4)), [
          { machine_id: m, amount: credits(3) },
          { machine_id: null, amount: credits(1) }
        ])
        // A call on no machine: account-wide only.
        yield* reserves(yield* ordered(account.id, null, credits(2)), [{ machine_id: null, amount: credits(2) }])
        // A call on m2: 7 pinned then the 2 account-wide left, exactly.
        yield* reserves(yield* ordered(account.id, m2, credits(9)), [
          { machine_id: m2, amount: credits(7) },
          { machine_id: null, amount: credits(2) }
        ])
        // Nothing left anywhere, but an amount of 0 needs no allocation.
        yield* reserves(yield* ordered(account.id, m, 0n), [])
        const pinned = [
          { machine_id: m, posted: credits(3), held: credits(3) },
          { machine_id: m2, posted: credits(7), held: credits(7) }
        ]
        assert.deepStrictEqual(yield* ledger.balances(account.id), [
          { machine_id: null, posted: credits(5), held: credits(5) },
          ...(m < m2 ? pinned : pinned.reverse())
        ])
        yield* assertConsistent(account.id)
      }))

    it.effect("insufficient: the total available in the call's scopes, nothing held; the call is still counted", () =>
      Effect.gen(function*() {
        const gateway = yield* GatewayStore
        const ledger = yield* LedgerStore
        const { account, key } = yield* accountWithKey()
        const m = yield* freshMachine
        const m2 = yield* freshMachine
        yield* fund(account.id, m, credits(1.5))
        yield* fund(account.id, m2, credits(40))
        yield* fund(account.id, null, credits(2))
        // Hold some account-wide credits so that available differs from posted.
        yield* admitReserved(key, yield* ordered(account.id, null, credits(0.5)))
        const window = thisMinute()
        const bucket = `rpm:${yield* generateId("key")}`
        let count = 0
        for (
          const [machineId, amount, available] of [
            [m, credits(3.5), credits(3)],
            [null, credits(1.6), credits(1.5)],
            [m, credits(100), credits(3)]
          ] as const
        ) {
          const before = yield* snapshot(account.id)
          const request = yield* ordered(account.id, machineId, amount)
          assert.deepStrictEqual(allocate(spendingSources(before.balances, machineId), amount), {
            _tag: "Insufficient",
            available
          })
          count++
          assert.deepStrictEqual(yield* admitOne(gateway, admissionOf(key, { reservation: request, bucket, window_start: window })), {
            _tag: "Admitted",
            count,
            reserved: { _tag: "insufficient", available }
          })
          assert.isUndefined(yield* ledger.reservation(request.ref))
          assert.deepStrictEqual(yield* snapshot(account.id), before)
        }
        // An account with no credits at all.
        const { account: empty, key: emptyKey } = yield* accountWithKey()
        const request = yield* ordered(empty.id, yield* freshMachine, credits(1))
        assert.deepStrictEqual(yield* admitOne(gateway, admissionOf(emptyKey, { reservation: request })), {
          _tag: "Admitted",
          count: 1,
          reserved: { _tag: "insufficient", available: 0n }
        })
        assert.isUndefined(yield* ledger.reservation(request.ref))
        assert.deepStrictEqual(yield* snapshot(empty.id), { balances: [], entries: [], pending: [], reservations: [], records: [] })
        yield* assertConsistent(account.id)
      }))

    it.effect("a ref that exists: duplicate, nothing changes, the call still counted", () =>
      Effect.gen(function*() {
        const gateway = yield* GatewayStore
        const ledger = yield* LedgerStore
        const { account, key } = yield* accountWithKey()
        yield* fund(account.id, null, credits(10))
        const window = thisMinute()
        const first = yield* ordered(account.id, null, credits(3))
        yield* admitReserved(key, first)
        const before = yield* snapshot(account.id, [first.ref])
        for (const replay of [first, { ...first, amount: credits(1) }, { ...first, amount: 0n }]) {
          const result = yield* admitOne(gateway, admissionOf(key, { reservation: replay, window_start: window }))
          assert.strictEqual(result._tag, "Admitted")
          assert.deepStrictEqual(result._tag === "Admitted" ? result.reserved : undefined, { _tag: "duplicate" })
        }
        assert.deepStrictEqual(yield* snapshot(account.id, [first.ref]), before)
        assert.deepStrictEqual(yield* ledger.reservation(first.ref), pendingReservation(first, [{ machine_id: null, amount: credits(3) }]))
      }))

    it.effect("N concurrent admits reserving more than the balance covers: no overspend, counts 1..N once", () =>
      Effect.gen(function*() {
        const gateway = yield* GatewayStore
        const ledger = yield* LedgerStore
        const { account, key } = yield* accountWithKey()
        const m = yield* freshMachine
        yield* fund(account.id, m, credits(4))
        yield* fund(account.id, null, credits(6))
        const window = thisMinute()
        const requests = yield* Effect.all(Array.from({ length: 30 }, () => ordered(account.id, m, credits(1))))
        const results = yield* Effect.all(
          requests.map((reservation) => admitOne(gateway, admissionOf(key, { reservation, window_start: window }))),
          unbounded
        )
        assert.deepStrictEqual(sorted(results.map((r) => (r._tag === "KeyRevoked" ? 0 : r.count))), oneTo(30))
        const reservedRefs: Array<string> = []
        results.forEach((r, i) => {
          assert.strictEqual(r._tag, "Admitted")
          const reserved = r._tag === "Admitted" ? r.reserved : undefined
          assert.isTrue(reserved?._tag === "reserved" || reserved?._tag === "insufficient", JSON.stringify(reserved, jsonBigint))
          if (reserved?._tag === "reserved") {
            assert.strictEqual(reserved.allocations.reduce((s, a) => s + a.amount, 0n), credits(1))
            reservedRefs.push(requests[i]!.ref)
          }
        })
        // The balance covers 10; a store may refuse some it could have taken, never more.
        assert.isAtLeast(reservedRefs.length, 1)
        assert.isAtMost(reservedRefs.length, 10)
        const balances = yield* ledger.balances(account.id)
        for (const b of balances) assert.isTrue(b.held <= b.posted, `overspent: ${JSON.stringify(b, jsonBigint)}`)
        assert.strictEqual(balances.reduce((s, b) => s + b.held, 0n), credits(reservedRefs.length))
        // Pinned credits first: the account-wide ones are only held once the pinned ones are.
        if (scope(balances, null).held > 0n) assert.strictEqual(scope(balances, m).held, credits(4))
        assert.deepStrictEqual((yield* ledger.pending(account.id)).map((r) => r.ref).sort(), reservedRefs.sort())
        yield* assertConsistent(account.id)
      }))

    it.effect("an admission that breaks the rules is a defect", () =>
      Effect.gen(function*() {
        const gateway = yield* GatewayStore
        const { account, key } = yield* accountWithKey()
        const m = yield* freshMachine
        yield* fund(account.id, m, credits(5))
        yield* fund(account.id, null, credits(5))
        const good = admissionOf(key)
        yield* assertDies(admitOne(gateway, { ...good, rate: { ...good.rate, bucket: "" } }), "empty bucket")
        yield* assertDies(
          admitOne(gateway, { ...good, rate: { ...good.rate, window_start: good.rate.window_start + 1 } }),
          "window not aligned"
        )
        yield* assertDies(
          admitOne(gateway, admissionOf(key, { reservation: yield* ordered(account.id, null, -1n) })),
          "negative amount"
        )
        const otherMachine = { ...(yield* ordered(account.id, yield* freshMachine, credits(1))), scopes: [m, null] }
        yield* assertDies(admitOne(gateway, admissionOf(key, { reservation: otherMachine })), "another machine's credits")
        yield* assertConsistent(account.id)
        assert.deepStrictEqual(yield* (yield* LedgerStore).pending(account.id), [])
      }))
  })

  describe("commit", () => {
    it.effect("a batch across two accounts: answers in order, charges exactly, releases holds, writes the records", () =>
      Effect.gen(function*() {
        const gateway = yield* GatewayStore
        const ledger = yield* LedgerStore
        const usage = yield* UsageStore
        const { account: a, key: keyA } = yield* accountWithKey()
        const { account: b, key: keyB } = yield* accountWithKey({ agent_id: "agent_1" })
        const m = yield* freshMachine
        const m2 = yield* freshMachine
        yield* fund(a.id, m, credits(2))
        yield* fund(a.id, null, credits(10))
        yield* fund(b.id, null, credits(5))

        // a1: 3 held (2 pinned, 1 account-wide), 2.5 charged.
        const a1 = yield* ordered(a.id, m, credits(3))
        const a1Call = yield* meteredCall(keyA, a1, yield* admitReserved(keyA, a1), credits(2.5))
        // a2: unpriced, no reservation.
        const a2Call: Metered = {
          settlement: undefined,
          record: usageRecord(keyA, yield* freshRef, m, { credits: 0n, list_credits: 0n, quantity: 7n })
        }
        // b1: 1 held, 1.5 charged: 0.5 above the reservation.
        const b1 = yield* ordered(b.id, m2, credits(1))
        const b1Call = yield* meteredCall(keyB, b1, yield* admitReserved(keyB, b1), credits(1.5), { agent_id: "agent_1" })
        // b2: voided before it is metered.
        const b2 = yield* ordered(b.id, m2, credits(1))
        const b2Call = yield* meteredCall(keyB, b2, yield* admitReserved(keyB, b2), credits(0.7))
        assert.strictEqual(yield* ledger.void(b2.ref, at(3)), "voided")
        // a3: free in the end.
        const a3 = yield* ordered(a.id, m, credits(1))
        const a3Call = yield* meteredCall(keyA, a3, yield* admitReserved(keyA, a3), 0n)
        // a4: expired before it is metered.
        const a4 = yield* ordered(a.id, m, credits(1), y1990(60_000))
        const a4Call = yield* meteredCall(keyA, a4, yield* admitReserved(keyA, a4), credits(0.25))
        yield* ledger.expire(y1990(120_000))
        assert.strictEqual((yield* ledger.reservation(a4.ref))?.status, "expired")

        assert.deepStrictEqual(yield* ledger.balances(a.id), [
          { machine_id: null, posted: credits(10), held: credits(2) },
          { machine_id: m, posted: credits(2), held: credits(2) }
        ])
        const calls = [b1Call, a1Call, a2Call, b2Call, a3Call, a4Call]
        const refs = calls.map((c) => c.record.ref)
        const results = yield* gateway.commit(calls)
        assert.deepStrictEqual(results, [
          { settlement: "settled", record: "Recorded" },
          { settlement: "settled", record: "Recorded" },
          { settlement: "none", record: "Recorded" },
          { settlement: "not_pending", record: "Recorded" },
          { settlement: "settled", record: "Recorded" },
          { settlement: "not_pending", record: "Recorded" }
        ] satisfies ReadonlyArray<MeteredResult>)

        // Balances: posted down by the charges, every hold released.
        assert.deepStrictEqual(yield* ledger.balances(a.id), [
          { machine_id: null, posted: credits(9.5), held: 0n },
          { machine_id: m, posted: 0n, held: 0n }
        ])
        assert.deepStrictEqual(yield* ledger.balances(b.id), [{ machine_id: null, posted: credits(3.5), held: 0n }])
        // The usage entries are exactly the settlements'.
        const usageEntries = (accountId: string) =>
          Effect.map(ledger.entries(accountId), (entries) => entries.filter((e) => e.type === "usage").sort(byId))
        const entriesOf = (...settlements: ReadonlyArray<Settlement | undefined>) =>
          settlements.flatMap((s) => s?.entries ?? []).sort(byId)
        assert.deepStrictEqual(yield* usageEntries(a.id), entriesOf(a1Call.settlement, a3Call.settlement))
        assert.strictEqual(a1Call.settlement?.entries.length, 2)
        assert.strictEqual(a3Call.settlement?.entries.length, 0)
        assert.deepStrictEqual(yield* usageEntries(b.id), entriesOf(b1Call.settlement))
        // The reservations as they ended.
        const settledAs = (request: OrderedReservation, call: Metered, allocations: ReadonlyArray<Allocation>): Reservation => ({
          ...pendingReservation(request, allocations),
          status: "settled",
          finished_at: call.settlement!.at,
          charged: call.settlement!.charged,
          excess: call.settlement!.excess
        })
        assert.deepStrictEqual(
          yield* ledger.reservation(a1.ref),
          settledAs(a1, a1Call, [{ machine_id: m, amount: credits(2) }, { machine_id: null, amount: credits(1) }])
        )
        assert.deepStrictEqual(
          yield* ledger.reservation(b1.ref),
          settledAs(b1, b1Call, [{ machine_id: null, amount: credits(1) }])
        )
        assert.strictEqual(b1Call.settlement?.excess, credits(0.5))
        assert.deepStrictEqual(
          yield* ledger.reservation(a3.ref),
          settledAs(a3, a3Call, [{ machine_id: null, amount: credits(1) }])
        )
        assert.strictEqual((yield* ledger.reservation(b2.ref))?.status, "voided")
        assert.strictEqual((yield* ledger.reservation(a4.ref))?.status, "expired")
        // The records: as given, credits 0 where the reservation was no longer pending.
        const expectedRecords = calls.map((c, i) => (i === 3 || i === 5 ? { ...c.record, credits: 0n } : c.record))
        assert.deepStrictEqual(yield* Effect.forEach(refs, usage.byRef), expectedRecords)
        assert.strictEqual(
          yield* usage.spent({ account_id: a.id, from: at(0), to: at(10) }),
          credits(2.5)
        )
        yield* assertConsistent(a.id)
        yield* assertConsistent(b.id)

        // The same batch again changes nothing.
        const before = { a: yield* snapshot(a.id, refs), b: yield* snapshot(b.id, refs) }
        assert.deepStrictEqual(yield* gateway.commit(calls), [
          { settlement: "not_pending", record: "Duplicate" },
          { settlement: "not_pending", record: "Duplicate" },
          { settlement: "none", record: "Duplicate" },
          { settlement: "not_pending", record: "Duplicate" },
          { settlement: "not_pending", record: "Duplicate" },
          { settlement: "not_pending", record: "Duplicate" }
        ] satisfies ReadonlyArray<MeteredResult>)
        assert.deepStrictEqual({ a: yield* snapshot(a.id, refs), b: yield* snapshot(b.id, refs) }, before)
        assert.deepStrictEqual(yield* Effect.forEach(refs, usage.byRef), expectedRecords)
      }))

    it.effect("a charge above a reservation of pinned credits only goes account-wide, creating that scope", () =>
      Effect.gen(function*() {
        const gateway = yield* GatewayStore
        const ledger = yield* LedgerStore
        const { account, key } = yield* accountWithKey()
        const m = yield* freshMachine
        yield* fund(account.id, m, credits(3))
        const request = yield* ordered(account.id, m, credits(2))
        const hint = yield* admitReserved(key, request)
        assert.deepStrictEqual(hint.allocations, [{ machine_id: m, amount: credits(2) }])
        const call = yield* meteredCall(key, request, hint, credits(2.75))
        assert.deepStrictEqual(yield* gateway.commit([call]), [{ settlement: "settled", record: "Recorded" }])
        assert.deepStrictEqual(yield* ledger.balances(account.id), [
          { machine_id: null, posted: -credits(0.75), held: 0n },
          { machine_id: m, posted: credits(1), held: 0n }
        ])
        assert.strictEqual((yield* ledger.reservation(request.ref))?.excess, credits(0.75))
        yield* assertConsistent(account.id)
      }))

    it.effect("records keep every field exactly: amounts beyond 2^53, an agent, any text", () =>
      Effect.gen(function*() {
        const gateway = yield* GatewayStore
        const ledger = yield* LedgerStore
        const usage = yield* UsageStore
        const { account, key } = yield* accountWithKey({ agent_id: "agent_x" })
        const big = 2n ** 62n + 1n
        yield* fund(account.id, null, big)
        const request = yield* ordered(account.id, null, big - 5n)
        const hint = yield* admitReserved(key, request)
        const call = yield* meteredCall(key, request, hint, big - 7n, {
          agent_id: "agent_ünïcödé 'quoted' \"x\"",
          model: "m/with#odd:chars {\"json\": [1]}",
          service: "forecast",
          unit: "requests",
          quantity: big,
          input_tokens: 2n ** 53n + 1n,
          output_tokens: big - 1n,
          list_credits: big,
          from_allowance: 2n ** 60n,
          from_trial: 3n
        })
        const free: Metered = {
          settlement: undefined,
          record: usageRecord(key, yield* freshRef, "m_zero", {
            quantity: 0n,
            input_tokens: 0n,
            output_tokens: 0n,
            list_credits: 0n,
            credits: 0n
          })
        }
        assert.deepStrictEqual(yield* gateway.commit([call, free]), [
          { settlement: "settled", record: "Recorded" },
          { settlement: "none", record: "Recorded" }
        ])
        assert.deepStrictEqual(yield* usage.byRef(call.record.ref), call.record)
        assert.deepStrictEqual(yield* usage.byRef(free.record.ref), free.record)
        assert.deepStrictEqual(yield* ledger.balances(account.id), [{ machine_id: null, posted: 7n, held: 0n }])
        yield* assertConsistent(account.id)
      }))

    it.effect("one call twice in a batch: settled and recorded once, the second answers not_pending and Duplicate", () =>
      Effect.gen(function*() {
        const gateway = yield* GatewayStore
        const ledger = yield* LedgerStore
        const usage = yield* UsageStore
        const { account, key } = yield* accountWithKey()
        yield* fund(account.id, null, credits(10))
        const request = yield* ordered(account.id, null, credits(2))
        const call = yield* meteredCall(key, request, yield* admitReserved(key, request), credits(1))
        const replay: Metered = { ...call, record: { ...call.record, credits: credits(9), at: at(9) } }
        assert.deepStrictEqual(yield* gateway.commit([call, replay]), [
          { settlement: "settled", record: "Recorded" },
          { settlement: "not_pending", record: "Duplicate" }
        ])
        assert.deepStrictEqual(yield* ledger.balances(account.id), [{ machine_id: null, posted: credits(9), held: 0n }])
        assert.deepStrictEqual(yield* usage.byRef(request.ref), call.record)
        // the per-day rollups count the call once
        assert.deepStrictEqual(yield* usage.report(allDays(account.id), "model"), reportOf([call.record], allDays(account.id), "model"))
        yield* assertConsistent(account.id)
      }))

    it.effect("a record of a ref that exists is Duplicate, and its settlement still applies once", () =>
      Effect.gen(function*() {
        const gateway = yield* GatewayStore
        const ledger = yield* LedgerStore
        const usage = yield* UsageStore
        const { account, key } = yield* accountWithKey()
        yield* fund(account.id, null, credits(10))
        const request = yield* ordered(account.id, null, credits(2))
        const call = yield* meteredCall(key, request, yield* admitReserved(key, request), credits(1.25))
        const earlier = { ...call.record, credits: 1n, at: at(1) }
        assert.strictEqual(yield* usage.record(earlier), "Recorded")
        assert.deepStrictEqual(yield* gateway.commit([call]), [{ settlement: "settled", record: "Duplicate" }])
        assert.deepStrictEqual(yield* usage.byRef(request.ref), earlier)
        assert.deepStrictEqual(yield* ledger.balances(account.id), [
          { machine_id: null, posted: credits(8.75), held: 0n }
        ])
        yield* assertConsistent(account.id)
      }))

    it.effect("concurrent batches of distinct calls on the same accounts, with admits racing them: no update lost", () =>
      Effect.gen(function*() {
        const gateway = yield* GatewayStore
        const ledger = yield* LedgerStore
        const usage = yield* UsageStore
        // A few rounds: lock-order faults between batches (and admits) show up as deadlocks only
        // now and then.
        for (let round = 0; round < 3; round++) {
          const m = yield* freshMachine
          const owners = [yield* accountWithKey(), yield* accountWithKey()]
          for (const { account } of owners) {
            yield* fund(account.id, m, credits(5))
            yield* fund(account.id, null, credits(20))
          }
          // 8 calls per account, 1 credit each: 5 held on m, then 3 account-wide.
          const calls: Array<Metered> = []
          for (let i = 0; i < 16; i++) {
            const { key } = owners[i % 2]!
            const request = yield* ordered(key.account_id, m, credits(1))
            calls.push(yield* meteredCall(key, request, yield* admitReserved(key, request), credits(0.5) + BigInt(i)))
          }
          const batches = [0, 1, 2, 3].map((b) => calls.filter((_, i) => i % 4 === b).reverse())
          const admits = yield* Effect.all(
            Array.from({ length: 16 }, (_, i) => ordered(owners[i % 2]!.key.account_id, m, credits(1)))
          )
          const [committed, admitted] = yield* Effect.all([
            Effect.all(batches.map((batch) => gateway.commit(batch)), unbounded),
            Effect.all(admits.map((reservation) => {
              const { key } = owners.find((o) => o.account.id === reservation.account_id)!
              return admitOne(gateway, admissionOf(key, { reservation }))
            }), unbounded)
          ], unbounded)
          for (const r of committed.flat()) assert.deepStrictEqual(r, { settlement: "settled", record: "Recorded" })
          for (const [o, { account }] of owners.entries()) {
            const charged = calls.filter((_, i) => i % 2 === o).reduce((sum, c) => sum + c.settlement!.charged, 0n)
            const reserved = admits.filter((r, i) => {
              const result = admitted[i]!
              return r.account_id === account.id && result._tag === "Admitted" && result.reserved?._tag === "reserved"
            })
            const balances = yield* ledger.balances(account.id)
            assert.strictEqual(balances.reduce((sum, x) => sum + x.posted, 0n), credits(25) - charged)
            assert.strictEqual(balances.reduce((sum, x) => sum + x.held, 0n), credits(reserved.length))
            for (const b of balances) assert.isTrue(b.held <= b.posted, `overspent: ${JSON.stringify(b, jsonBigint)}`)
            assert.deepStrictEqual(
              (yield* ledger.pending(account.id)).map((r) => r.ref).sort(),
              reserved.map((r) => r.ref).sort()
            )
            yield* assertConsistent(account.id)
          }
          for (const result of admitted) assert.strictEqual(result._tag, "Admitted")
          assert.deepStrictEqual(yield* Effect.forEach(calls, (c) => usage.byRef(c.record.ref)), calls.map((c) => c.record))
          // the rollups of concurrent batches of one account's key, model and day: none lost
          for (const { account } of owners) {
            const records = calls.map((c) => c.record)
            assert.deepStrictEqual(yield* usage.report(allDays(account.id), "key"), reportOf(records, allDays(account.id), "key"))
          }
        }
      }))

    it.effect("an empty batch answers []", () =>
      Effect.gen(function*() {
        assert.deepStrictEqual(yield* (yield* GatewayStore).commit([]), [])
      }))

    it.effect("a batch holding a record that breaks the rules is a defect and meters nothing", () =>
      Effect.gen(function*() {
        const gateway = yield* GatewayStore
        const usage = yield* UsageStore
        const { account, key } = yield* accountWithKey()
        yield* fund(account.id, null, credits(10))
        const good = yield* ordered(account.id, null, credits(2))
        const goodCall = yield* meteredCall(key, good, yield* admitReserved(key, good), credits(1))
        const bad = yield* ordered(account.id, null, credits(2))
        const badHint = yield* admitReserved(key, bad)
        const badCall = yield* meteredCall(key, bad, badHint, credits(1), { quantity: -1n })
        const refs = [good.ref, bad.ref]
        const before = yield* snapshot(account.id, refs)
        yield* assertDies(gateway.commit([badCall]), "negative quantity")
        yield* assertDies(gateway.commit([goodCall, badCall]), "negative quantity after a good call")
        yield* assertDies(
          gateway.commit([{ settlement: undefined, record: { ...badCall.record, quantity: 1n, credits: -1n } }]),
          "negative credits"
        )
        assert.deepStrictEqual(yield* snapshot(account.id, refs), before)
        // Each call is still pending and meters as usual afterwards.
        const fixed = yield* meteredCall(key, bad, badHint, credits(1))
        assert.deepStrictEqual(yield* gateway.commit([goodCall, fixed]), [
          { settlement: "settled", record: "Recorded" },
          { settlement: "settled", record: "Recorded" }
        ])
        assert.deepStrictEqual(yield* usage.byRef(bad.ref), fixed.record)
        yield* assertConsistent(account.id)
      }))

    it.effect("a settlement charging another account is a defect and charges nothing", () =>
      Effect.gen(function*() {
        const gateway = yield* GatewayStore
        const { account, key } = yield* accountWithKey()
        const { account: other } = yield* accountWithKey()
        yield* fund(account.id, null, credits(10))
        yield* fund(other.id, null, credits(10))
        const request = yield* ordered(account.id, null, credits(2))
        yield* admitReserved(key, request)
        const call = yield* meteredCall(key, request, { account_id: other.id, allocations: [{ machine_id: null, amount: credits(2) }] }, credits(1))
        const before = { mine: yield* snapshot(account.id, [request.ref]), theirs: yield* snapshot(other.id) }
        yield* assertDies(gateway.commit([call]), "entry of another account")
        assert.deepStrictEqual({ mine: yield* snapshot(account.id, [request.ref]), theirs: yield* snapshot(other.id) }, before)
      }))
  })
}

/** Declares the gateway store contract on a layer of the stores it uses (built once for the suite). */
export const gatewayStoreContract = <E>(name: string, storesLayer: Layer.Layer<GatewayContractStores, E>): void =>
  layer(storesLayer, layerOptions)(name, (it) => {
    gatewayTests(it)
    gatewayBudgetTests(it)
    gatewayGrantTests(it)
    gatewayLeaseTests(it)
  })
