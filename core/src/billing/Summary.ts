/**
 * GET /billing, the billing summary (docs/payments.md "Billing summary"): the balance in credits,
 * network token and USD, the usage tier reached by the credits bought, this UTC month's spend
 * against the tier's monthly limit, the automatic top-up and invoicing state, and the charging
 * gate. Derived on every read from the ledger, the receipts and the catalogue: nothing here is a
 * stored counter that could drift.
 */
import { Clock, Effect, Option } from "effect"
import type { Caller } from "../ApiKeys.ts"
import { AutoReload } from "./AutoReload.ts"
import type { AutoReload as AutoReloadView, BillingSummary } from "./Schemas.ts"
import { Catalogue } from "../Catalogue.ts"
import { Ledger } from "../Ledger.ts"
import { usageTierFor } from "./Tiers.ts"
import { creditsToMicro, microToCredits } from "../Money.ts"
import { Orders } from "../OrderService.ts"
import { UsageStore } from "../ports/UsageStore.ts"
import { toTimestamp } from "../Time.ts"

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
 * Builds the summary function over the services. The month's spend comes from the UsageStore when
 * the shell provides one (usage records of this UTC month), else it is 0: nothing was charged yet.
 */
export const makeBillingSummary = Effect.gen(function*() {
  const ledger = yield* Ledger
  const orders = yield* Orders
  const catalogue = yield* Catalogue
  const usage = yield* Effect.serviceOption(UsageStore)
  const autoReload = yield* Effect.serviceOption(AutoReload)
  const perUsd = catalogue.config.prices.credits_per_usd

  return Effect.fn("Billing.summary")(function*(caller: Caller) {
    const accountId = caller.account.id
    const balance = yield* ledger.balance(accountId)
    const micro = creditsToMicro(balance.total_credits) ?? 0n
    const tier = usageTierFor(catalogue.config.tiers, yield* orders.purchasedCredits(accountId))
    const month = utcMonth(yield* Clock.currentTimeMillis)
    const spent = Option.isSome(usage)
      ? yield* usage.value.spent({ account_id: accountId, from: month.from, to: month.to })
      : 0n
    return {
      balance: {
        credits: balance.total_credits,
        // micro-credits / 1000 = micro-tokens; / credits_per_usd = micro-dollars (both rounded down)
        token: microToCredits(micro / CREDITS_PER_TOKEN),
        usd: perUsd === null || perUsd <= 0 ? 0 : microToCredits(micro / BigInt(perUsd))
      },
      usage_tier: tier,
      month: {
        spent_credits: microToCredits(spent),
        limit_credits: tier.monthly_limit_credits,
        own_limit_credits: null,
        alert_points: []
      },
      auto_reload: Option.isSome(autoReload) ? yield* autoReload.value.view(accountId) : AUTO_RELOAD_OFF,
      invoicing: null,
      charging: yield* orders.charging,
      credits_per_usd: perUsd ?? 0
    } satisfies BillingSummary
  })
})
