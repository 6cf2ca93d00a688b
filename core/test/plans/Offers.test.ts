/**
 * Offers and prices (core/src/plans/Offers.ts, docs/plans.md "Offers and prices"): exact sums in
 * micro-USD, cents rounded up, every value held to the offer, and offers that cannot be ordered.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit } from "effect"
import type { MachineConfig } from "../../src/catalogue/CatalogueConfig.ts"
import { centsOf, rentalPrice, rentOfferOf, subscribeOfferOf, subscriptionPrice } from "../../src/plans/Offers.ts"

const rent = {
  currency: "USD",
  usd_per_hour: { cpu_core: 0.02, memory_gb: 0.004, gpu: 1.1, storage_gb: 0.0002 },
  min_hours: 2,
  max_hours: 720,
  max: { cpu_cores: 28, memory_gb: 224, gpu: 2, storage_gb: 1800 }
}
const subscribe = {
  currency: "USD",
  period_days: 30,
  plans: [{ id: "builder", name: "Builder", usd_per_period: 20, models: ["ref-chat"], payment_methods: ["card", "stablecoin"] }]
}
const machine = (offers: Partial<Pick<MachineConfig, "rent" | "subscribe">>): MachineConfig => ({
  id: "gpu-1", name: "GPU 1", operator: "op", region: "eu", base_url: "http://127.0.0.1:1/v1",
  hardware: { gpus: [], cpu_cores: 32, memory_gb: 256, storage_gb: 2000 }, serverless_models: [],
  rent: null, subscribe: null, network: { status: "registered", reachability: "public" }, score: 1,
  initial_health: "online", ...offers
})
const rental = (fields: Record<string, number>) => ({ type: "rental" as const, machine_id: "gpu-1", cpu_cores: 1, memory_gb: 1, hours: 2, ...fields })

describe("offers and prices", () => {
  it("cents are rounded up, never down", () => {
    expect([0n, 1n, 9_999n, 10_000n, 10_001n, 24_000n].map(centsOf)).toEqual([0n, 1n, 1n, 1n, 2n, 3n])
  })

  it.effect("a rental costs hours x the per-hour sum, exactly", () =>
    Effect.gen(function*() {
      const m = machine({ rent })
      // (4 x 0.02 + 16 x 0.004 + 1.1) x 10 = 12.44, which floats make 12.440000000000001 (and
      // rounding up would make 12.45)
      expect((yield* rentalPrice(m, rental({ cpu_cores: 4, memory_gb: 16, gpu: 1, hours: 10 }))).amount_cents).toBe(1244n)
      expect((yield* rentalPrice(m, rental({ storage_gb: 3, hours: 500 }))).amount_cents).toBe(1230n)
      expect(yield* rentalPrice(m, rental({ hours: 2 }))).toEqual({ cpu_cores: 1, memory_gb: 1, gpu: 0, storage_gb: 0, hours: 2, amount_cents: 5n })
    }))

  it.effect("every value outside the offer is refused, naming its field", () =>
    Effect.gen(function*() {
      const m = machine({ rent })
      for (const [field, fields] of [
        ["cpu_cores", { cpu_cores: 29 }], ["memory_gb", { memory_gb: 225 }], ["gpu", { gpu: 3 }],
        ["storage_gb", { storage_gb: 1801 }], ["hours", { hours: 1 }], ["hours", { hours: 721 }]
      ] as const) {
        const exit = yield* Effect.exit(rentalPrice(m, rental(fields)))
        expect(Exit.isFailure(exit) && JSON.stringify(exit.cause).includes(field), `${field}: ${exit}`).toBe(true)
      }
    }))

  it.effect("plans: one period's price; an unknown plan names plan_id", () =>
    Effect.gen(function*() {
      const m = machine({ subscribe })
      const plan = yield* subscriptionPrice(m, { plan_id: "builder" })
      expect([plan.amount_cents, plan.period_days, plan.plan.id]).toEqual([2000n, 30, "builder"])
      // A renewal order's days, pro rata of the period, rounded up: $20 per 30 days for 7 is $4.666… -> $4.67.
      const week = yield* subscriptionPrice(m, { plan_id: "builder" }, 7)
      expect([week.amount_cents, week.period_days]).toEqual([467n, 7])
      const exit = yield* Effect.exit(subscriptionPrice(m, { plan_id: "gold" }))
      expect(Exit.isFailure(exit) && JSON.stringify(exit.cause).includes("plan_id")).toBe(true)
    }))

  it("an offer that does not read as one cannot be ordered from", () => {
    expect(rentOfferOf(machine({ rent: { usd_per_hour: 2.5 } }))).toBeUndefined()
    expect(rentOfferOf(machine({ rent: { ...rent, usd_per_hour: { ...rent.usd_per_hour, gpu: "1.1" } } }))).toBeUndefined()
    expect(subscribeOfferOf(machine({ subscribe: { plans: ["basic"] } }))).toBeUndefined()
    expect(rentOfferOf(machine({ rent }))).toEqual(rent)
    expect(subscribeOfferOf(machine({ subscribe }))).toEqual(subscribe)
  })
})
