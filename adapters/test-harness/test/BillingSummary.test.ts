/** The billing summary: tiers from purchased credits, the month's spend from usage records. */
import { assert, describe, it } from "@effect/vitest"
import type { Caller } from "@model-platform/core/ApiKeys"
import { makeBillingSummary, usageTierFor, utcMonth } from "@model-platform/core/billing/Summary"
import { Catalogue } from "@model-platform/core/Catalogue"
import { Ledger } from "@model-platform/core/Ledger"
import { Orders } from "@model-platform/core/OrderService"
import { UsageStore, type UsageRecord } from "@model-platform/core/ports/UsageStore"
import * as TestCardProcessor from "@model-platform/core/TestCardProcessor"
import { toTimestamp } from "@model-platform/core/Time"
import { Effect, Layer } from "effect"
import { TestClock } from "effect/testing"
import { fixtureCatalogue } from "../src/Fixtures.ts"
import { LedgerStoreMemory } from "../src/MemoryLedgerStore.ts"
import { OrderStoreMemory } from "../src/MemoryOrderStore.ts"
import { UsageStoreMemory } from "../src/MemoryUsageStore.ts"
import { SimulatedChain } from "../src/SimulatedChain.ts"

const T0 = Date.UTC(2026, 2, 15, 12, 0, 0, 0)
const M = 1_000_000n

const services = Orders.layer.pipe(
  Layer.provideMerge(Ledger.layer),
  Layer.provideMerge(Layer.mergeAll(
    LedgerStoreMemory,
    OrderStoreMemory,
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

const usage = (ref: string, at: number, credits: bigint): UsageRecord => ({
  ref, account_id: "acct_bill", at: toTimestamp(at), key_id: "key_bill", agent_id: null, machine_id: "m-eu-a",
  service: "chat", model: "chat-small", unit: "tokens", quantity: 10n, input_tokens: 5n, output_tokens: 5n,
  list_credits: credits, credits, from_allowance: 0n, from_trial: 0n
})

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
  it.effect("balance in credits, token and USD; spent 0 without a usage store", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(T0)
      yield* (yield* Ledger).credit("acct_bill", { ref: "grant", machine_id: null, amount: 2_500_500_000n, type: "credit_added" })
      const summary = yield* (yield* makeBillingSummary)(caller)
      assert.deepStrictEqual(summary.balance, { credits: 2500.5, token: 2.5005, usd: 2.5005 })
      assert.strictEqual(summary.month.spent_credits, 0)
      assert.strictEqual(summary.usage_tier.purchased_credits, 0)
      assert.strictEqual(summary.credits_per_usd, 1000)
    }).pipe(Effect.provide(services)))

  it.effect("with a usage store: this UTC month's charged credits only", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(T0)
      const store = yield* UsageStore
      yield* store.record(usage("u1", Date.UTC(2026, 2, 1), 1_500_000n))
      yield* store.record(usage("u2", T0 - 1000, 250_000n))
      yield* store.record(usage("u3", Date.UTC(2026, 1, 28, 23, 59), 9_000_000n))
      const summary = yield* (yield* makeBillingSummary)(caller)
      assert.strictEqual(summary.month.spent_credits, 1.75)
      assert.strictEqual(summary.month.limit_credits, 1000)
    }).pipe(Effect.provide(Layer.merge(services, UsageStoreMemory))))
})
