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
import { UsageStore } from "@model-platform/core/billing"
import { type Admission, GatewayStore } from "@model-platform/core/gateway"
import type { KeyRecord } from "@model-platform/core/keys"
import { type Timestamp, toTimestamp } from "@model-platform/core/kernel"
import { type GrantClaim, LedgerStore, type ReserveInOrderResult } from "@model-platform/core/ledger"
import { admissionOf, keyWithCredits, meteredCall, MONTH, NEVER, ordered } from "./GatewayContractFixtures.ts"
import type { GatewayContractStores } from "./GatewayStoreContract.ts"

const y1980 = (ms: number): Timestamp => toTimestamp(Date.UTC(1980, 0, 1) + ms)

const grants = (allowance: bigint, trial: bigint): ReadonlyArray<GrantClaim> => [
  { grant: "allowance:chat", period: MONTH, size: allowance },
  { grant: "trial:chat", period: "once", size: trial }
]

/** An admission of the key's call on no machine, reserving `amount` through the grants `claims`. */
const admission = Effect.fnUntraced(function*(
  key: KeyRecord,
  amount: bigint,
  claims: ReadonlyArray<GrantClaim>,
  expiresAt: Timestamp = NEVER
) {
  const reservation = yield* ordered(key.account_id, null, amount, expiresAt)
  return admissionOf(key, { reservation: { ...reservation, grants: claims } })
})

const reservedOf = (result: { readonly _tag: string; readonly reserved?: ReserveInOrderResult | undefined }) => {
  assert.strictEqual(result._tag, "Admitted")
  assert.strictEqual(result.reserved?._tag, "reserved")
  return result.reserved as Extract<ReserveInOrderResult, { readonly _tag: "reserved" }>
}

/** The call metered at `actual`, as the gateway's Settlement stage builds it: the grants pay first. */
const metered = (a: Admission, reserved: ReturnType<typeof reservedOf>, actual: bigint) => {
  const r = a.reservation!
  const hint = { account_id: r.account_id, allocations: reserved.allocations, grants: reserved.grants ?? [] }
  return meteredCall({ id: a.key_id, account_id: r.account_id }, r, hint, actual)
}

export const gatewayGrantTests = (it: Vitest.MethodsNonLive<GatewayContractStores>) => {
  describe("grants (the allowance, the trial)", () => {
    it.effect("admission holds the allowance, then the trial, then credits; metering records what each paid", () =>
      Effect.gen(function*() {
        const gateway = yield* GatewayStore
        const ledger = yield* LedgerStore
        const usage = yield* UsageStore
        const key = yield* keyWithCredits(10n)
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
        const key = yield* keyWithCredits(0n)
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
        const key = yield* keyWithCredits(0n)
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
