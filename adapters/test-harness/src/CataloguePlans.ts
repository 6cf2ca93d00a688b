/**
 * Plans in a test's catalogue: the subscribe offer (docs/plans.md) that the gateway's plan-scoped
 * keys, the plan pages and the renewals read, put on every machine of a catalogue.
 */
import type { CatalogueConfig } from "@model-platform/core/catalogue"

// A type, not an interface: it must fit the offer's JSON record.
export type TestPlan = {
  readonly id: string
  readonly name: string
  readonly usd_per_period: number
  readonly models: ReadonlyArray<string>
  readonly payment_methods: ReadonlyArray<"card" | "stablecoin">
}

/** `catalogue` with `plan` offered on every machine, in USD for 30-day periods. */
export const withPlan = (catalogue: CatalogueConfig, plan: TestPlan): CatalogueConfig => ({
  ...catalogue,
  machines: catalogue.machines.map((m) => ({
    ...m,
    subscribe: { currency: "USD", period_days: 30, plans: [plan] }
  }))
})
