/**
 * The grant part of the gateway store contract (GatewayStoreContract.ts; docs/billing.md
 * "Allowances and the trial"): an admission takes from the month's allowance and the trial before
 * credits, in the same step as its reservation (`GatewayStore.admit`); metering (`commit`) charges
 * the grants first and writes the usage record with `from_allowance` and `from_trial`; a call whose
 * reservation expired meanwhile is recorded as charging nothing, grants included; and admissions
 * of one batch never pass a grant's size.
 *
 * As in that suite: fresh accounts and keys per test, the current minute's rate window;
 * reservations pending until 2100, the expiry test in 1980 (an era no other suite expires in).
 */
import { assert, describe, type Vitest } from "@effect/vitest"
import { Effect } from "effect"
import type { AccountRecord } from "@model-platform/core/keys"
import type { GatewayContractStores } from "./GatewayStoreContract.ts"
import { grantParts, type UsageRecord, UsageStore } from "@model-platform/core/billing"
import { AccountStore, type KeyRecord, KeyStore } from "@model-platform/core/keys"
import { generateId, type Timestamp, toTimestamp, windowStartOf } from "@model-platform/core/kernel"
import {
  type GrantClaim,
  LedgerStore,
  type ReserveInOrderResult,
  settlementOf,
  spendingOrder
} from "@model-platform/core/ledger"
import { type Admission, GatewayStore, type Metered } from "@model-platform/core/gateway"

const at = (ms: number): Timestamp => toTimestamp(Date.UTC(2026, 0, 15, 10, 20, 30, 456) + ms)
const NEVER = toTimestamp(Date.UTC(2100, 0, 1))
const y1980 = (ms: number): Timestamp => toTimestamp(Date.UTC(1980, 0, 1) + ms)
const MONTH = "2026-01"
const MINUTE = 60_000

const grants = (allowance: bigint, trial: bigint): ReadonlyArray<GrantClaim> => [
  { grant: "allowance:chat", period: MONTH, size: allowance },
  { grant: "trial:chat", period: "once", size: trial }
]

/** An account with one inference key and `credits` account-wide. */
const accountWithKey = Effect.fnUntraced(function*(credits: bigint) {
  const id = yield* generateId("acct")
  const account: AccountRecord = { id, email: `${id}@gateway-grants.test`, created_at: at(0) }
  yield* (yield* AccountStore).insert(account)
  const key: KeyRecord = {
    id: yield* generateId("key"),
    account_id: id,
    name: "grant key",
    prefix: "mpk_abcdefgh",
    secret_hash: `${id}-${yield* generateId("hash")}`,
    permissions: ["inference"],
    machine_id: null,
    subscription_id: null,
    rental_id: null,
    agent_id: null,
    created_at: at(0),
    last_used_at: null,
    revoked_at: null
  }
  yield* (yield* KeyStore).insert(key)
  if (credits > 0n) {
    yield* (yield* LedgerStore).post({
      id: yield* generateId("led"),
      account_id: id,
      machine_id: null,
      amount: credits,
      type: "credit_added",
      ref: yield* generateId("order"),
      created_at: at(0)
    })
  }
  return key
})

const admission = Effect.fnUntraced(function*(
  key: KeyRecord,
  amount: bigint,
  claims: ReadonlyArray<GrantClaim>,
  expiresAt: Timestamp = NEVER
) {
  const admitted: Admission = {
    account_id: key.account_id,
    key_id: key.id,
    touch_at: undefined,
    rate: { bucket: `rpm:${key.id}`, window_start: windowStartOf(Date.now(), MINUTE), window_ms: MINUTE, limit: 1_000 },
    reservation: {
      ref: yield* generateId("usage"),
      account_id: key.account_id,
      machine_id: null,
      scopes: spendingOrder(null),
      amount,
      created_at: at(1),
      expires_at: expiresAt,
      grants: claims
    }
  }
  return admitted
})

const reservedOf = (result: { readonly _tag: string; readonly reserved?: ReserveInOrderResult | undefined }) => {
  assert.strictEqual(result._tag, "Admitted")
  assert.strictEqual(result.reserved?._tag, "reserved")
  return result.reserved as Extract<ReserveInOrderResult, { readonly _tag: "reserved" }>
}

/** The call metered at `actual`, as the gateway's Settlement stage builds it. */
const metered = Effect.fnUntraced(function*(a: Admission, reserved: ReturnType<typeof reservedOf>, actual: bigint) {
  const r = a.reservation!
  const settlement = yield* settlementOf(r.ref, actual, {
    account_id: r.account_id,
    allocations: reserved.allocations,
    grants: reserved.grants ?? []
  })
  const record: UsageRecord = {
    ref: r.ref,
    account_id: r.account_id,
    at: at(5),
    key_id: a.key_id,
    agent_id: null,
    machine_id: "m_grant",
    service: "chat",
    model: "ref-chat",
    unit: "tokens",
    quantity: 10n,
    input_tokens: 5n,
    output_tokens: 5n,
    list_credits: actual,
    credits: settlement.charged,
    ...grantParts(settlement.grants ?? [])
  }
  const call: Metered = { settlement, record }
  return call
})

export const gatewayGrantTests = (it: Vitest.MethodsNonLive<GatewayContractStores>) => {
  describe("grants (the allowance, the trial)", () => {
    it.effect("admission holds the allowance, then the trial, then credits; metering records what each paid", () =>
      Effect.gen(function*() {
        const gateway = yield* GatewayStore
        const ledger = yield* LedgerStore
        const usage = yield* UsageStore
        const key = yield* accountWithKey(10n)
        const a = yield* admission(key, 8n, grants(3n, 2n))
        const [result] = yield* gateway.admit([a])
        const reserved = reservedOf(result!)
        assert.deepStrictEqual(reserved.grants, [
          { grant: "allowance:chat", period: MONTH, amount: 3n },
          { grant: "trial:chat", period: "once", amount: 2n }
        ])
        assert.deepStrictEqual(reserved.allocations, [{ machine_id: null, amount: 3n }])
        // It costs 6: the allowance's 3, the trial's 2, 1 credit.
        const call = yield* metered(a, reserved, 6n)
        assert.deepStrictEqual(yield* gateway.commit([call]), [{ settlement: "settled", record: "Recorded" }])
        const record = yield* usage.byRef(call.record.ref)
        assert.strictEqual(record?.credits, 1n)
        assert.strictEqual(record?.from_allowance, 3n)
        assert.strictEqual(record?.from_trial, 2n)
        assert.strictEqual(record?.list_credits, 6n)
        assert.deepStrictEqual(yield* ledger.grants(key.account_id), [
          { grant: "allowance:chat", period: MONTH, spent: 3n, held: 0n },
          { grant: "trial:chat", period: "once", spent: 2n, held: 0n }
        ])
        const wide = (yield* ledger.balances(key.account_id)).find((b) => b.machine_id === null)
        assert.deepStrictEqual([wide?.posted, wide?.held], [9n, 0n])
        // A replay charges nothing more and keeps the record.
        assert.deepStrictEqual(yield* gateway.commit([call]), [{ settlement: "not_pending", record: "Duplicate" }])
        assert.deepStrictEqual(yield* usage.byRef(call.record.ref), record)
      }))

    it.effect("a call whose reservation expired is recorded as charging nothing, grants included", () =>
      Effect.gen(function*() {
        const gateway = yield* GatewayStore
        const ledger = yield* LedgerStore
        const usage = yield* UsageStore
        const key = yield* accountWithKey(0n)
        const a = yield* admission(key, 2n, grants(5n, 0n), y1980(1))
        const [result] = yield* gateway.admit([a])
        const call = yield* metered(a, reservedOf(result!), 2n)
        assert.include(yield* ledger.expire(y1980(1)), a.reservation!.ref)
        assert.deepStrictEqual(yield* gateway.commit([call]), [{ settlement: "not_pending", record: "Recorded" }])
        const record = yield* usage.byRef(call.record.ref)
        assert.deepStrictEqual([record?.credits, record?.from_allowance, record?.from_trial], [0n, 0n, 0n])
        assert.deepStrictEqual(yield* ledger.grants(key.account_id), [])
      }))

    it.effect("admissions of one batch never pass a grant's size", () =>
      Effect.gen(function*() {
        const gateway = yield* GatewayStore
        const ledger = yield* LedgerStore
        const key = yield* accountWithKey(0n)
        const batch = yield* Effect.forEach(Array.from({ length: 8 }, (_, i) => i), () => admission(key, 1n, grants(2n, 1n)))
        const results = yield* gateway.admit(batch)
        const tags = results.map((r) => r._tag === "Admitted" ? r.reserved?._tag : r._tag)
        assert.deepStrictEqual(tags, ["reserved", "reserved", "reserved", "insufficient", "insufficient", "insufficient", "insufficient", "insufficient"])
        assert.deepStrictEqual(yield* ledger.grants(key.account_id), [
          { grant: "allowance:chat", period: MONTH, spent: 0n, held: 2n },
          { grant: "trial:chat", period: "once", spent: 0n, held: 1n }
        ])
      }))
  })
}
