/**
 * Monthly limits (docs/billing.md "Monthly limits" and "Monthly limits: the endpoints"): the
 * rules, and the use-cases of GET/POST /billing/limits and POST /billing/keys/{id}/limit.
 *
 * A limit is a ledger budget (ledger/LedgerStore.ts BudgetClaim): "account" (its own limit, else
 * the tier's) and "key:<id>" (its own limit, else none). Every priced call claims both for the
 * UTC month of its admission (`budgetClaims`, gateway/Admission.ts), and the store admits it only
 * while both have room, in the same atomic step as the balance. The limits are set here with
 * LedgerStore.setBudgetLimit; the alert settings sent beside them live in the billing settings
 * store. The tier's monthly limit is the one rule of billing/Tiers.ts (monthlyLimitAt), the same
 * for the gateway and for GET /billing.
 */
import { monthOf } from "../kernel/Time.ts"
import { accountTeller } from "../kernel/AccountNotices.ts"
import { Clock, Effect, Option } from "effect"
import type { Caller } from "../keys/Caller.ts"
import { Catalogue } from "../catalogue/Catalogue.ts"
import { billingError, type BillingErrorOf } from "./BillingErrors.ts"
import { creditsToMicro, microToCredits } from "../kernel/Money.ts"
import { BillingSettingsStore } from "./BillingSettingsStore.ts"
import { KeyStore } from "../keys/KeyStore.ts"
import { budgetName, BudgetScope } from "../ledger/BudgetScope.ts"
import { type BudgetClaim, type BudgetState, LedgerStore } from "../ledger/LedgerStore.ts"
import { OrderStore } from "../payments/OrderStore.ts"
import type { KeyLimit, LimitsView, MonthSpend, SetLimits, UsageTier } from "./Schemas.ts"
import { alertPointsOf, type BillingSettingsPatch } from "./Settings.ts"
import { ACCOUNT_BUDGET, monthlyLimitAt, tierTable, usageTierFor } from "./Tiers.ts"
import { BillingWatch } from "./Watch.ts"
import type { AccountId, KeyId } from "../kernel/Ids.ts"

// ---- rules ---------------------------------------------------------------------------------

/** A key's budget (its name in the stores). */
export const keyBudget = (keyId: KeyId): string => budgetName(BudgetScope.key(keyId))

/**
 * The budgets a priced call of `keyId` claims in `month`: the account's, whose limit is its own
 * or else `tierLimit` (the tier's, monthlyLimitAt), and the key's, limited only by its own.
 */
export const budgetClaims = (keyId: KeyId, month: string, tierLimit: bigint | null): ReadonlyArray<BudgetClaim> => [
  { budget: ACCOUNT_BUDGET, month, default_limit: tierLimit },
  { budget: keyBudget(keyId), month, default_limit: null }
]

/** A limit as a body sends it, in micro-credits (its Schema took only exact amounts >= 0). */
const microOf = (credits: number | null): bigint | null => (credits === null ? null : creditsToMicro(credits) ?? null)

/**
 * Why an own limit (account or key) must be refused, or undefined: never above the tier's
 * monthly limit (spec "Limits": the account may lower its limit, never raise it past the tier's;
 * a key's limit above it could never bind, so it is refused too).
 */
export const limitProblem = (limit: bigint | null, tierLimit: bigint | null): string | undefined =>
  limit !== null && tierLimit !== null && limit > tierLimit
    ? `monthly_limit_credits: at most the tier's monthly limit of ${microToCredits(tierLimit)} credits, got ${microToCredits(limit)}`
    : undefined

const EMPTY: Pick<BudgetState, "limit" | "spent" | "held"> = { limit: null, spent: 0n, held: 0n }

// ---- use-cases -------------------------------------------------------------------------------

/** The month's spend against the account's limit, as GET /billing and the limits view show it. */
const monthSpendOf = (
  account: Pick<BudgetState, "limit" | "spent">,
  tierLimit: bigint | null,
  alertPoints: ReadonlyArray<number>
): MonthSpend => ({
  spent_credits: microToCredits(account.spent),
  limit_credits: microToCredits(account.limit ?? tierLimit ?? 0n),
  own_limit_credits: account.limit === null ? null : microToCredits(account.limit),
  alert_points: [...alertPoints]
})

/** The limits use-cases over the stores; built once by the handlers (LimitsHandlers.ts, Summary.ts). */
export const makeLimits = Effect.gen(function*() {
  const ledger = yield* LedgerStore
  // A limit set is told to this process's followers at once (credit leases close: gateway/Leases.ts).
  const tell = yield* accountTeller
  const settingsStore = yield* BillingSettingsStore
  // Told when the alert settings change, so that its next check reads them (billing/Watch.ts).
  const watch = Option.getOrUndefined(yield* Effect.serviceOption(BillingWatch))
  const keys = yield* KeyStore
  const orders = yield* OrderStore
  const catalogue = yield* Catalogue
  const tiers = catalogue.config.tiers
  const table = tierTable(tiers)

  /** The account's tier now: as shown, and its monthly limit in micro-credits. */
  const tierOf = (accountId: AccountId) =>
    Effect.map(orders.purchasedCredits(accountId), (purchased): { shown: UsageTier; limit: bigint | null } => ({
      shown: usageTierFor(tiers, purchased),
      limit: monthlyLimitAt(table, purchased)
    }))

  /** The account's budgets in `month`, by budget. */
  const budgetsOf = (accountId: AccountId, month: string) =>
    Effect.map(ledger.budgets(accountId, month), (states) => new Map(states.map((s) => [s.budget, s] as const)))

  /** GET /billing's month: this month's spend, the limit in force, the own limit and alert points. */
  const monthSpend = Effect.fn("Limits.monthSpend")(function*(accountId: AccountId, tierLimit: bigint | null) {
    const month = monthOf(yield* Clock.currentTimeMillis)
    const [budgets, settings] = yield* Effect.all([budgetsOf(accountId, month), settingsStore.get(accountId)], {
      concurrency: 2
    })
    return monthSpendOf(budgets.get(ACCOUNT_BUDGET) ?? EMPTY, tierLimit, settings.alert_points)
  })

  const view = Effect.fn("Limits.view")(function*(caller: Caller) {
    const accountId = caller.account.id
    const period = monthOf(yield* Clock.currentTimeMillis)
    const [tier, budgets, settings, all] = yield* Effect.all([
      tierOf(accountId),
      budgetsOf(accountId, period),
      settingsStore.get(accountId),
      keys.list(accountId)
    ], { concurrency: 4 })
    return {
      month: {
        period,
        ...monthSpendOf(budgets.get(ACCOUNT_BUDGET) ?? EMPTY, tier.limit, settings.alert_points),
        alert_email: settings.alert_email
      },
      usage_tier: tier.shown,
      keys: all.filter((k) => k.revoked_at === null).map((k) => {
        const budget = budgets.get(keyBudget(k.id)) ?? EMPTY
        return {
          key_id: k.id,
          name: k.name,
          monthly_limit_credits: budget.limit === null ? null : microToCredits(budget.limit),
          spent_credits: microToCredits(budget.spent)
        }
      })
    } satisfies LimitsView
  })

  /**
   * POST /billing/limits: a partial update. Everything is checked before anything is written, so
   * a refused body changes nothing; then the limit (the ledger) and the alert settings.
   */
  const set = Effect.fn("Limits.set")(function*(caller: Caller, body: SetLimits) {
    const accountId = caller.account.id
    if (body.monthly_limit_credits !== undefined) {
      const limit = microOf(body.monthly_limit_credits)
      const problem = limitProblem(limit, (yield* tierOf(accountId)).limit)
      if (problem !== undefined) return yield* billingError("spend_limit_invalid", problem)
      yield* ledger.setBudgetLimit(accountId, ACCOUNT_BUDGET, limit)
      yield* tell(accountId)
    }
    const patch: BillingSettingsPatch = {
      ...(body.alert_points === undefined ? {} : { alert_points: alertPointsOf(body.alert_points) }),
      ...(body.alert_email === undefined ? {} : { alert_email: body.alert_email })
    }
    if (Object.keys(patch).length > 0) {
      yield* settingsStore.update(accountId, patch)
      if (watch !== undefined) yield* watch.forget(accountId)
    }
    return yield* view(caller)
  })

  /** POST /billing/keys/{id}/limit: a live key of the caller's account, else 404 as for an unknown one. */
  const setKeyLimit = Effect.fn("Limits.setKeyLimit")(function*(caller: Caller, keyId: KeyId, body: KeyLimit) {
    const accountId = caller.account.id
    const key = yield* keys.get(accountId, keyId)
    if (key === undefined || key.account_id !== accountId || key.revoked_at !== null) {
      return yield* billingError("key_not_found", `No key "${keyId}".`)
    }
    const limit = microOf(body.monthly_limit_credits)
    const problem = limitProblem(limit, (yield* tierOf(accountId)).limit)
    if (problem !== undefined) return yield* billingError("spend_limit_invalid", problem)
    yield* ledger.setBudgetLimit(accountId, keyBudget(keyId), limit)
    yield* tell(accountId)
    return yield* view(caller)
  })

  return { view, set, setKeyLimit, monthSpend } as const
})
