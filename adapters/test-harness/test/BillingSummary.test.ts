/** The billing summary: tiers from purchased credits, the month's spend from the account's budget. */
import { assert, describe, it } from "@effect/vitest"
import type { Caller } from "@model-platform/core/keys"
import {
  ACCOUNT_BUDGET,
  BillingSettingsStore,
  budgetClaims,
  makeBillingSummary,
  usageTierFor,
  utcMonth
} from "@model-platform/core/billing"
import { Catalogue } from "@model-platform/core/catalogue"
import { Ledger, LedgerStore } from "@model-platform/core/ledger"
import { Orders, TestCardProcessor } from "@model-platform/core/payments"
import { toTimestamp } from "@model-platform/core/kernel"
import { Effect, Layer } from "effect"
import { TestClock } from "effect/testing"
import { fixtureCatalogue } from "../src/Fixtures.ts"
import { LedgerStoreMemory } from "@model-platform/memory-stores/MemoryLedgerStore"
import { OrderStoreMemory } from "@model-platform/memory-stores/MemoryOrderStore"
import { PlanStoreMemory } from "@model-platform/memory-stores/MemoryPlanStore"
import { BillingSettingsStoreMemory } from "@model-platform/memory-stores/MemoryBillingSettingsStore"
import { KeyStoreMemory } from "@model-platform/memory-stores/MemoryStores"
import { SimulatedChain } from "../src/SimulatedChain.ts"

const T0 = Date.UTC(2026, 2, 15, 12, 0, 0, 0)
const M = 1_000_000n

const services = Orders.layer.pipe(
  Layer.provideMerge(Ledger.layer),
  Layer.provideMerge(Layer.mergeAll(
    LedgerStoreMemory,
    OrderStoreMemory,
    PlanStoreMemory,
    KeyStoreMemory,
    BillingSettingsStoreMemory,
    Catalogue.layer(fixtureCatalogue),
    TestCardProcessor.layer({ baseUrl: "https://platform.test" }),
    SimulatedChain.layer
  ))
)

const caller: Caller = {
  account: { id: "acct_bill", email: "bill@test", created_at: toTimestamp(T0) },
  key: {
    id: "key_bill", account_id: "acct_bill", name: "bill", prefix: "mpk_test", secret_hash: "h",
    permissions: ["read"], machine_id: null, subscription_id: null, rental_id: null, agent_id: null,
    created_at: toTimestamp(T0), last_used_at: null, revoked_at: null
  }
} as unknown as Caller

describe("usageTierFor", () => {
  const tiers = fixtureCatalogue.tiers
  it("starts at the first tier and names the next", () => {
    const tier = usageTierFor(tiers, 0n)
    assert.deepStrictEqual([tier.tier, tier.monthly_limit_credits, tier.next?.tier], [0, 1000, 1])
  })
  it("reaches a tier exactly at its purchased_credits, and has no next at the top", () => {
    assert.strictEqual(usageTierFor(tiers, 10_000n * M - 1n).tier, 0)
    assert.strictEqual(usageTierFor(tiers, 10_000n * M).tier, 1)
    const top = usageTierFor(tiers, 1_000_000n * M)
    assert.strictEqual(top.tier, 2)
    assert.isNull(top.next)
  })
  it("utcMonth bounds the calendar month", () => {
    assert.deepStrictEqual(utcMonth(Date.UTC(2026, 11, 31, 23, 59)), {
      from: "2026-12-01T00:00:00.000Z",
      to: "2027-01-01T00:00:00.000Z"
    })
  })
})

describe("billing summary", () => {
  it.effect("balance in credits, token and USD; nothing spent, the tier's limit, no alert points", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(T0)
      yield* (yield* Ledger).credit("acct_bill", { ref: "grant", machine_id: null, amount: 2_500_500_000n, type: "credit_added" })
      const summary = yield* (yield* makeBillingSummary)(caller)
      assert.deepStrictEqual(summary.balance, { credits: 2500.5, token: 2.5005, usd: 2.5005 })
      assert.deepStrictEqual(summary.month, { spent_credits: 0, limit_credits: 1000, own_limit_credits: null, alert_points: [] })
      assert.strictEqual(summary.usage_tier.purchased_credits, 0)
      assert.strictEqual(summary.credits_per_usd, 1000)
    }).pipe(Effect.provide(services)))

  it.effect("the month: what the account's budget was charged this UTC month, its own limit, the alert points", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(T0)
      const ledger = yield* Ledger
      yield* ledger.credit("acct_bill", { ref: "grant", machine_id: null, amount: 100n * M, type: "credit_added" })
      const charge = Effect.fnUntraced(function*(month: string, reserved: bigint, actual: bigint) {
        const r = yield* ledger.reserve("acct_bill", null, reserved, toTimestamp(T0 + 60_000), budgetClaims("key_bill", month, 1000n * M))
        assert.strictEqual(r._tag, "Reserved")
        if (r._tag === "Reserved") yield* ledger.settle(r.ref, actual)
      })
      yield* charge("2026-03", 2n * M, 1_500_000n)
      yield* charge("2026-03", M, 250_000n)
      yield* charge("2026-02", 9n * M, 9n * M) // last month's: not this month's spend
      yield* (yield* LedgerStore).setBudgetLimit("acct_bill", ACCOUNT_BUDGET, 300n * M)
      yield* (yield* BillingSettingsStore).update("acct_bill", { alert_points: [50, 80] })
      const summary = yield* (yield* makeBillingSummary)(caller)
      assert.deepStrictEqual(summary.month, { spent_credits: 1.75, limit_credits: 300, own_limit_credits: 300, alert_points: [50, 80] })
    }).pipe(Effect.provide(services)))
})
