/**
 * GET /billing, the billing summary (docs/payments.md "Billing summary"): the balance in credits,
 * network token and USD, the usage tier reached by the credits bought, this UTC month's spend
 * against the limit in force (the account budget's, billing/Limits.ts: what admission checks),
 * the alert points, the automatic top-up and invoicing state, and the charging gate. Derived on
 * every read from the ledger, its budgets, the receipts, the settings and the catalogue.
 */
import { Effect, Option } from "effect"
import type { Caller } from "../keys/Caller.ts"
import { AutoReload } from "./AutoReload.ts"
import type { AutoReloadView, BillingSummary } from "./Schemas.ts"
import { Catalogue } from "../catalogue/Catalogue.ts"
import { Ledger } from "../ledger/Ledger.ts"
import { makeLimits } from "./Limits.ts"
import { monthlyLimitAt, tierTable, usageTierFor } from "./Tiers.ts"
import { creditsToMicro, microToCredits } from "../kernel/Money.ts"
import { Orders } from "../payments/OrderService.ts"
import { BillingSettingsStore } from "./BillingSettingsStore.ts"
import { toTimestamp } from "../kernel/Time.ts"

/** 1 credit = 0.001 network token (the spec's unit of account). */
export const CREDITS_PER_TOKEN = 1000n

/** The tier shown: billing/Tiers.ts holds the rule (usageTierFor), shared with the gateway. */
export { usageTierFor }

/** The UTC calendar month around `nowMillis`: [first instant, first instant of the next month). */
export const utcMonth = (nowMillis: number): { readonly from: string; readonly to: string } => {
  const now = new Date(nowMillis)
  return {
    from: toTimestamp(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)),
    to: toTimestamp(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1))
  }
}

/** Automatic top-ups where the shell serves none (billing/AutoReload.ts): off, nothing saved. */
export const AUTO_RELOAD_OFF: AutoReloadView = {
  enabled: false,
  threshold_credits: 0,
  amount_usd: 0,
  card: null,
  last_error: null
}

/**
 * Builds the summary function over the services. The month's spend is what the account's budget
 * was charged this UTC month (billing/Limits.ts monthSpend), the number its limit is checked on.
 */
export const makeBillingSummary = Effect.gen(function*() {
  const ledger = yield* Ledger
  const orders = yield* Orders
  const catalogue = yield* Catalogue
  const autoReload = yield* Effect.serviceOption(AutoReload)
  const settings = yield* Effect.serviceOption(BillingSettingsStore)
  const limits = yield* makeLimits
  const table = tierTable(catalogue.config.tiers)
  const perUsd = catalogue.config.prices.credits_per_usd

  return Effect.fn("Billing.summary")(function*(caller: Caller) {
    const accountId = caller.account.id
    const balance = yield* ledger.balance(accountId)
    const micro = creditsToMicro(balance.total_credits) ?? 0n
    const purchased = yield* orders.purchasedCredits(accountId)
    const tier = usageTierFor(catalogue.config.tiers, purchased)
    return {
      balance: {
        credits: balance.total_credits,
        // micro-credits / 1000 = micro-tokens; / credits_per_usd = micro-dollars (both rounded down)
        token: microToCredits(micro / CREDITS_PER_TOKEN),
        usd: perUsd === null || perUsd <= 0 ? 0 : microToCredits(micro / BigInt(perUsd))
      },
      usage_tier: tier,
      month: yield* limits.monthSpend(accountId, monthlyLimitAt(table, purchased)),
      auto_reload: Option.isSome(autoReload) ? yield* autoReload.value.view(accountId) : AUTO_RELOAD_OFF,
      // POST /billing/invoicing keeps the request in the billing settings (billing/Statements.ts).
      invoicing: Option.isSome(settings) ? (yield* settings.value.get(accountId)).invoicing?.state ?? null : null,
      charging: yield* orders.charging,
      credits_per_usd: perUsd ?? 0
    } satisfies BillingSummary
  })
})
