/**
 * Usage tiers (spec "Billing records", "Limits"): the credits an account bought in total decide
 * its tier, and the tier its rpm per key and its monthly limit. One rule, read by the gateway
 * (rpm at admission) and by GET /billing (the tier shown), so the two can never disagree.
 *
 * The rule, for any table: tiers are ordered by their purchased_credits threshold (ties keep the
 * listed order); the account is in the highest tier whose threshold it has reached, or in the
 * lowest tier when it has reached none. A threshold is the exact micro-credit amount, rounded up
 * when the number has more than 6 decimals; a threshold that is not finite is never reached.
 * An empty table (the catalogue refuses one) gives DEFAULT_RPM and no tier.
 */
import type { CatalogueConfig } from "../catalogue/CatalogueConfig.ts"
import { creditsToMicro, MICRO_PER_CREDIT, microToCredits } from "../kernel/Money.ts"
import type { UsageTier } from "./Schemas.ts"
import { budgetName, BudgetScope } from "../ledger/BudgetScope.ts"

/** The account's monthly budget (its name in the stores), whose limit defaults to its tier's. */
export const ACCOUNT_BUDGET = budgetName(BudgetScope.account)

export type TierConfig = CatalogueConfig["tiers"][number]

/** rpm when no tier applies (an empty table). */
export const DEFAULT_RPM = 60

/** The micro-credits a threshold asks for (rounded up), or undefined when it can never be reached. */
export const thresholdOf = (credits: number): bigint | undefined => {
  if (!Number.isFinite(credits)) return undefined
  const exact = creditsToMicro(credits)
  if (exact !== undefined) return exact
  // Beyond 2^53 a double is an integer: scale in bigint, so nothing overflows to Infinity.
  return Math.abs(credits) >= 2 ** 53 ? BigInt(credits) * MICRO_PER_CREDIT : BigInt(Math.ceil(credits * 1e6))
}

/** A tier table ordered once, for many lookups. */
export interface TierTable {
  readonly tiers: ReadonlyArray<TierConfig>
  readonly thresholds: ReadonlyArray<bigint | undefined>
}

export const tierTable = (tiers: ReadonlyArray<TierConfig>): TierTable => {
  const ordered = tiers
    .map((tier) => ({ tier, threshold: thresholdOf(tier.purchased_credits) }))
    .sort((a, b) =>
      a.threshold === b.threshold ? 0 : a.threshold === undefined ? 1 : b.threshold === undefined ? -1 : a.threshold < b.threshold ? -1 : 1
    )
  return { tiers: ordered.map((o) => o.tier), thresholds: ordered.map((o) => o.threshold) }
}

/** The tier reached with `purchased` micro-credits bought in total, and the next one (if any). */
export const tierAt = (
  table: TierTable,
  purchased: bigint
): { readonly current: TierConfig | undefined; readonly next: TierConfig | undefined } => {
  let index = 0
  table.thresholds.forEach((threshold, i) => {
    if (threshold !== undefined && threshold <= purchased) index = i
  })
  return { current: table.tiers[index], next: table.tiers[index + 1] }
}

/** The rpm per key of an account that bought `purchased` micro-credits in total. */
export const rpmAt = (table: TierTable, purchased: bigint): number => tierAt(table, purchased).current?.rpm ?? DEFAULT_RPM

/**
 * The monthly limit, in micro-credits, of an account that bought `purchased` micro-credits in
 * total: the limit GET /billing shows (usageTierFor) and the default of the account's budget that
 * every priced call claims (gateway/Admission.ts). Null when no tier applies (an empty table).
 * The catalogue's limits are whole micro-credits; one that is not is rounded down.
 */
export const monthlyLimitAt = (table: TierTable, purchased: bigint): bigint | null => {
  const current = tierAt(table, purchased).current
  if (current === undefined) return null
  const credits = current.monthly_limit_credits
  const exact = creditsToMicro(credits)
  if (exact !== undefined) return exact
  if (!Number.isFinite(credits)) return null
  return Math.abs(credits) >= 2 ** 53 ? BigInt(credits) * MICRO_PER_CREDIT : BigInt(Math.floor(credits * 1e6))
}

const step = (tier: TierConfig) => ({
  tier: tier.tier,
  name: tier.name,
  purchased_credits: tier.purchased_credits,
  rpm: tier.rpm,
  monthly_limit_credits: tier.monthly_limit_credits
})

/**
 * The tier an account is in after buying `purchased` micro-credits in total, as GET /billing and
 * GET /billing/limits show it, with the next one to reach (null at the top): the rule above, the
 * one the gateway enforces (rpmAt, monthlyLimitAt).
 */
export const usageTierFor = (tiers: ReadonlyArray<TierConfig>, purchased: bigint): UsageTier => {
  const table = tierTable(tiers)
  const { current, next } = tierAt(table, purchased)
  return {
    tier: current?.tier ?? 0,
    name: current?.name ?? "",
    rpm: current?.rpm ?? DEFAULT_RPM,
    monthly_limit_credits: microToCredits(monthlyLimitAt(table, purchased) ?? 0n),
    purchased_credits: microToCredits(purchased),
    next: next === undefined ? null : step(next)
  }
}
