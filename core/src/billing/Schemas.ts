/**
 * Billing records as the API shows them: the summary, usage reports (JSON and the CSV columns),
 * spend limits, automatic top-ups, alerts, receipts, monthly statements and the request for
 * invoiced billing, with the bodies that change them. JSON shapes only.
 */
import { Schema } from "effect"
import { Charging } from "../catalogue/Charging.ts"
import { CreditAmount } from "../kernel/Money.ts"
import { CreditOrderUsd, Receipt } from "../payments/Orders.ts"
import { PaymentMethod } from "../catalogue/CatalogueConfig.ts"
import { Text } from "../kernel/Text.ts"
import { Timestamp } from "../kernel/Time.ts"

// ---- Calendar values ----------------------------------------------------------------------

const isRealDate = (text: string) => {
  const d = new Date(`${text}T00:00:00.000Z`)
  return !Number.isNaN(d.getTime()) && d.toISOString().startsWith(text)
}

/** A UTC calendar day, YYYY-MM-DD. */
export const UtcDate = Schema.String.check(
  Schema.makeFilter((s: string) => /^\d{4}-\d{2}-\d{2}$/.test(s) && isRealDate(s), {
    expected: "a date YYYY-MM-DD"
  })
)
export type UtcDate = typeof UtcDate.Type

/** A UTC calendar month, YYYY-MM. */
export const UtcMonth = Schema.String.check(
  Schema.isPattern(/^\d{4}-(0[1-9]|1[0-2])$/, { expected: "a month YYYY-MM" })
)
export type UtcMonth = typeof UtcMonth.Type

const NonNegativeCredits = CreditAmount.check(
  Schema.isGreaterThanOrEqualTo(0, { expected: "a number of credits of at least 0" })
)

// ---- Summary (GET /billing) ---------------------------------------------------------------

export const TierStep = Schema.Struct({
  tier: Schema.Int,
  name: Schema.String,
  purchased_credits: CreditAmount,
  rpm: Schema.Int,
  monthly_limit_credits: CreditAmount
})

/** The account's tier and the next one (null at the top tier). */
export const UsageTier = Schema.Struct({
  tier: Schema.Int,
  name: Schema.String,
  rpm: Schema.Int,
  monthly_limit_credits: CreditAmount,
  purchased_credits: CreditAmount,
  next: Schema.NullOr(TierStep)
})
export type UsageTier = typeof UsageTier.Type

/** This UTC month's spend against the limit in force (own_limit_credits null: the tier's). */
export const MonthSpend = Schema.Struct({
  spent_credits: CreditAmount,
  limit_credits: CreditAmount,
  own_limit_credits: Schema.NullOr(CreditAmount),
  alert_points: Schema.Array(Schema.Int)
})
export type MonthSpend = typeof MonthSpend.Type

/** GET/POST /billing/auto-reload. card describes the saved card, null until one is saved. */
export const AutoReloadView = Schema.Struct({
  enabled: Schema.Boolean,
  threshold_credits: CreditAmount,
  amount_usd: Schema.Int,
  card: Schema.NullOr(Schema.String),
  last_error: Schema.NullOr(Schema.String)
})
export type AutoReloadView = typeof AutoReloadView.Type

export const InvoicingState = Schema.Literal("requested")

export const BillingSummary = Schema.Struct({
  balance: Schema.Struct({ credits: CreditAmount, token: Schema.Number, usd: Schema.Number }),
  usage_tier: UsageTier,
  month: MonthSpend,
  auto_reload: AutoReloadView,
  invoicing: Schema.NullOr(InvoicingState),
  charging: Charging,
  credits_per_usd: Schema.Int
})
export type BillingSummary = typeof BillingSummary.Type

// ---- Usage (GET /billing/usage, /billing/usage.csv) ---------------------------------------

export const UsageGroupByValues = ["day", "service", "model", "key", "agent"] as const
export const UsageGroupBy = Schema.Literals(UsageGroupByValues)
export type UsageGroupBy = typeof UsageGroupBy.Type

/** One group: list_credits is the price at list, credits what was charged. */
export const UsageRow = Schema.Struct({
  key: Schema.String,
  label: Schema.String,
  calls: Schema.Int,
  list_credits: CreditAmount,
  credits: CreditAmount
})
export type UsageRow = typeof UsageRow.Type

export const Usage = Schema.Struct({
  from: UtcDate,
  to: UtcDate,
  group_by: UsageGroupBy,
  data: Schema.Array(UsageRow)
})
export type Usage = typeof Usage.Type

/** Header of the usage CSV (one row per usage record), in this order. */
export const USAGE_CSV_COLUMNS = [
  "time_utc", "service", "model", "unit", "quantity", "key_id", "agent_id",
  "from_allowance", "from_trial", "list_credits", "credits", "ref"
] as const
export type UsageCsvColumn = (typeof USAGE_CSV_COLUMNS)[number]

// ---- Limits (GET/POST /billing/limits, POST /billing/keys/{id}/limit) ---------------------

/** A live key and its own monthly limit (null: none), with what it was charged this month. */
export const KeyLimitRow = Schema.Struct({
  key_id: Schema.String,
  name: Schema.String,
  monthly_limit_credits: Schema.NullOr(CreditAmount),
  spent_credits: CreditAmount
})
export type KeyLimitRow = typeof KeyLimitRow.Type

/** The limits view's month: GET /billing's month, the month itself and whether alerts are emailed. */
export const LimitsMonth = Schema.Struct({
  period: UtcMonth,
  ...MonthSpend.fields,
  alert_email: Schema.Boolean
})
export type LimitsMonth = typeof LimitsMonth.Type

/** GET /billing/limits, and the answer of the two POSTs (docs/billing.md "Monthly limits: the endpoints"). */
export const LimitsView = Schema.Struct({
  month: LimitsMonth,
  usage_tier: UsageTier,
  keys: Schema.Array(KeyLimitRow)
})
export type LimitsView = typeof LimitsView.Type

/** An alert point: a whole percentage of the monthly limit, 1 to 100. */
export const AlertPoint = Schema.Int.check(
  Schema.isBetween({ minimum: 1, maximum: 100 }, { expected: "a whole percentage from 1 to 100" })
)

/** A limit as a body carries it: credits >= 0, at most 6 decimals; the use-case bounds it by the tier. */
const LimitCredits = Schema.NullOr(NonNegativeCredits)

/**
 * POST /billing/limits. Every field is optional and an omitted one keeps its value;
 * monthly_limit_credits null goes back to the tier's limit (a higher one is refused by the use-case).
 * Alert points are kept ascending, each once: 100 distinct ones at most, so no more are accepted.
 */
export const SetLimits = Schema.Struct({
  monthly_limit_credits: Schema.optionalKey(LimitCredits),
  alert_points: Schema.optionalKey(
    Schema.Array(AlertPoint).check(Schema.isMaxLength(100, { expected: "at most 100 alert points" }))
  ),
  alert_email: Schema.optionalKey(Schema.Boolean)
})
export type SetLimits = typeof SetLimits.Type

/** POST /billing/keys/{id}/limit; null removes the key's limit. */
export const KeyLimit = Schema.Struct({
  monthly_limit_credits: LimitCredits
})
export type KeyLimit = typeof KeyLimit.Type

/** POST /billing/auto-reload. An automatic top-up is a credit order, so its amount has the same bounds. */
export const SetAutoReload = Schema.Struct({
  enabled: Schema.Boolean,
  threshold_credits: NonNegativeCredits,
  amount_usd: CreditOrderUsd
})
export type SetAutoReload = typeof SetAutoReload.Type

// ---- Alerts (GET /billing/alerts) ---------------------------------------------------------

/** org_spend is observed; the other kinds are ours (docs/billing.md "Alerts"). */
export const AlertKindValues = [
  "org_spend",
  "monthly_limit_reached",
  "key_monthly_limit_reached",
  "low_balance",
  "auto_reload_paid",
  "auto_reload_failed",
  "plan_renewal_failed"
] as const
export const AlertKind = Schema.Literals(AlertKindValues)
export type AlertKind = typeof AlertKind.Type

export const Alert = Schema.Struct({
  id: Schema.String,
  kind: AlertKind,
  /** What the alert is about: "account", a key id (key_monthly_limit_reached), a top-up's order id. */
  target: Schema.String,
  period: UtcMonth,
  /** The alert point passed (a whole percentage); 0 for kinds that are not about a point. */
  point: Schema.Int,
  message: Schema.String,
  seen: Schema.Boolean,
  created_at: Timestamp
})
export type Alert = typeof Alert.Type

export const AlertList = Schema.Struct({ data: Schema.Array(Alert) })
export type AlertList = typeof AlertList.Type

// ---- Statements (GET /billing/statements, /billing/statements/{month}) --------------------

export const StatementMonth = Schema.Struct({ month: UtcMonth })
export type StatementMonth = typeof StatementMonth.Type

export const StatementMonthList = Schema.Struct({ data: Schema.Array(StatementMonth) })
export type StatementMonthList = typeof StatementMonthList.Type

/** A month's statement: opening + added - used = closing; payments are the month's receipts. */
export const Statement = Schema.Struct({
  month: UtcMonth,
  opening_credits: CreditAmount,
  added: Schema.Struct({ purchased_credits: CreditAmount, plan_credits: CreditAmount }),
  used_credits: CreditAmount,
  usage_by_service: Schema.Array(Schema.Struct({
    service: Schema.String,
    name: Schema.String,
    calls: Schema.Int,
    list_credits: CreditAmount,
    credits: CreditAmount
  })),
  other_usage_credits: CreditAmount,
  closing_credits: CreditAmount,
  payments: Schema.Array(Receipt),
  payments_total_usd: Schema.Number
})
export type Statement = typeof Statement.Type

// ---- Invoicing (POST /billing/invoicing) --------------------------------------------------

/** A note for the person who reviews the request: who to invoice, a purchase order. */
export const MAX_INVOICING_NOTE_LENGTH = 2000

export const InvoicingRequest = Schema.Struct({
  note: Text(0, MAX_INVOICING_NOTE_LENGTH)
})
export type InvoicingRequest = typeof InvoicingRequest.Type

export const InvoicingResponse = Schema.Struct({ invoicing: InvoicingState })
export type InvoicingResponse = typeof InvoicingResponse.Type
