/**
 * Allowances and the trial (docs/billing.md "Allowances and the trial"): the price table's
 * `allowances {free, builder, scale, trial}` per service, made real as ledger grants
 * (ledger/LedgerStore.ts GrantClaim).
 *
 * - Every account has the `free` allowance of each service in each UTC month: "allowance:<service>"
 *   with the month as its period, so nothing carries over.
 * - A key scoped to a plan named `builder` or `scale` spends that column instead, per period of
 *   the plan: "allowance:<service>@<plan id>" with the period's start as its period, so each
 *   renewal starts a full allowance (docs/plans.md "The plan's allowance"). Another plan's key
 *   spends the account's monthly `free` allowance like any key.
 * - Every account has the `trial` of each service once: "trial:<service>", period "once".
 * - A priced call claims both, in that order, before its credits (pinned to its machine, then
 *   account-wide): admission holds them in the same store step as the credits and the monthly
 *   limits, and settlement spends the call's cost in the same order (Ledger.settlementCharges).
 *   Monthly limits count only what credits pay.
 */
import type { CatalogueConfig } from "../catalogue/CatalogueConfig.ts"
import { creditsToMicro, microToCredits } from "../kernel/Money.ts"
import type { GrantClaim, GrantHold, GrantState } from "../ledger/LedgerStore.ts"

/** The grant of a service's monthly allowance. */
export const allowanceGrant = (service: string): string => `allowance:${service}`

/** The grant of a service's one-time trial. */
export const trialGrant = (service: string): string => `trial:${service}`

/** The period of every trial: it is had once. */
export const TRIAL_PERIOD = "once"

/** The columns of `allowances` an allowance is sized by: `free` for every account, the others a plan's. */
export type AllowanceColumn = "free" | "builder" | "scale"

/** Whose allowance a call spends: the account's of the month, or its key's plan's of the plan's period. */
export type AllowanceSource =
  | { readonly _tag: "month" }
  | { readonly _tag: "plan"; readonly subscription_id: string; readonly period_start: string; readonly column: "builder" | "scale" }

export const MONTHLY_ALLOWANCE: AllowanceSource = { _tag: "month" }

/** The allowance a call of a key scoped to `plan` spends: its column (plan id builder or scale), else the month's. */
export const planAllowance = (
  plan: { readonly id: string; readonly plan_id: string; readonly current_period_start: string }
): AllowanceSource =>
  plan.plan_id === "builder" || plan.plan_id === "scale"
    ? { _tag: "plan", subscription_id: plan.id, period_start: plan.current_period_start, column: plan.plan_id }
    : MONTHLY_ALLOWANCE

/** The micro-credits of each service's allowance (by column) and trial, from the price table. */
export type AllowanceTable = ReadonlyMap<string, Readonly<Record<AllowanceColumn | "trial", bigint>>>

const micro = (credits: number): bigint => creditsToMicro(credits) ?? 0n

/** Read once (the catalogue's amounts are exact decimals: CatalogueConfig's NonNegativeCredits). */
export const allowanceTable = (catalogue: Pick<CatalogueConfig, "prices">): AllowanceTable =>
  new Map(catalogue.prices.services.map(({ allowances: a, service }) => [
    service,
    { free: micro(a.free), builder: micro(a.builder), scale: micro(a.scale), trial: micro(a.trial) }
  ]))

/**
 * The grants a priced call of `service` in `month` (YYYY-MM) takes from before credits: the
 * allowance of `source` (the month's, or the plan's period's), then the trial; those of size 0
 * left out.
 */
export const grantClaims = (
  table: AllowanceTable,
  service: string,
  month: string,
  source: AllowanceSource = MONTHLY_ALLOWANCE
): ReadonlyArray<GrantClaim> => {
  const allowances = table.get(service)
  if (allowances === undefined) return []
  const allowance: GrantClaim = source._tag === "month"
    ? { grant: allowanceGrant(service), period: month, size: allowances.free }
    : { grant: `${allowanceGrant(service)}@${source.subscription_id}`, period: source.period_start, size: allowances[source.column] }
  const claims: Array<GrantClaim> = [
    allowance,
    { grant: trialGrant(service), period: TRIAL_PERIOD, size: allowances.trial }
  ]
  return claims.filter((c) => c.size > 0n)
}

/** What grant charges covered, as a usage record carries it: the allowance's part and the trial's. */
export const grantParts = (
  charges: ReadonlyArray<GrantHold>
): { readonly from_allowance: bigint; readonly from_trial: bigint } => {
  let from_allowance = 0n
  let from_trial = 0n
  for (const c of charges) {
    if (c.grant.startsWith("allowance:")) from_allowance += c.amount
    else if (c.grant.startsWith("trial:")) from_trial += c.amount
  }
  return { from_allowance, from_trial }
}

/** One grant as a person sees it: credits used (spent and held) of its size. */
export interface GrantUse {
  readonly used: number
  readonly size: number
}

/** A service's allowance this month and its trial, as the billing page shows them. */
export interface ServiceGrants {
  readonly service: string
  readonly name: string
  readonly allowance: GrantUse
  readonly trial: GrantUse
}

/**
 * Per service of the price table with an allowance or a trial: what of it is used in `month`
 * (held by calls in flight included), from the store's grant states (LedgerStore.grants).
 */
export const grantsView = (
  catalogue: Pick<CatalogueConfig, "prices">,
  states: ReadonlyArray<GrantState>,
  month: string,
  column: AllowanceColumn = "free"
): ReadonlyArray<ServiceGrants> => {
  const used = (grant: string, period: string) => {
    const state = states.find((g) => g.grant === grant && g.period === period)
    return state === undefined ? 0 : microToCredits(state.spent + state.held)
  }
  return catalogue.prices.services
    .filter((s) => s.allowances[column] > 0 || s.allowances.trial > 0)
    .map((s) => ({
      service: s.service,
      name: s.name,
      allowance: { used: used(allowanceGrant(s.service), month), size: s.allowances[column] },
      trial: { used: used(trialGrant(s.service), TRIAL_PERIOD), size: s.allowances.trial }
    }))
}
