/**
 * Monthly statements and the request for invoiced billing (GET /billing/statements,
 * /billing/statements/{month}, POST /billing/invoicing; docs/billing.md "Statements").
 *
 * A statement is derived on every read, never stored, from three sources that stay small on a
 * long history: the ledger's credits summed per month (LedgerStore.creditTotals, which never reads
 * the usage entries), the usage rollups (UsageStore.report: one row per day for the balance
 * carried, one per service for the month) and the month's receipts. So closing = opening + added
 * - used holds by construction, each month opens at the previous month's closing, and the current
 * month closes at the ledger's posted balance as long as every charge has its usage record with
 * the same credits (the gateway writes both in one store step: gateway/GatewayStore.ts).
 *
 * Money stays bigint micro-credits (USD: cents) until the JSON boundary.
 */
import { Clock, Effect } from "effect"
import type { Caller } from "../keys/Caller.ts"
import { Catalogue } from "../catalogue/Catalogue.ts"
import { billingError, type BillingErrorOf } from "./BillingErrors.ts"
import { microToCredits } from "../kernel/Money.ts"
import { centsToUsd, toReceipt } from "../payments/OrderRules.ts"
import { BillingSettingsStore } from "./BillingSettingsStore.ts"
import { type CreditTotal, LedgerStore } from "../ledger/LedgerStore.ts"
import { OrderStore, type ReceiptRecord } from "../payments/OrderStore.ts"
import { type UsageGroup, UsageStore } from "./UsageStore.ts"
import { toTimestamp, monthOf } from "../kernel/Time.ts"
import type { InvoicingRequest, InvoicingResponse, Statement, StatementMonthList } from "./Schemas.ts"
import { creditsText, csvText } from "./UsageCsv.ts"
import type { AccountId } from "../kernel/Ids.ts"

/** The first day any report reads from: before every record (PostgreSQL has no year 0). */
const BEGINNING = "0001-01-01"
/** After every record. */
const END = "9999-12-31"

const pad = (n: number, width: number) => n.toString().padStart(width, "0")

/** The last day (YYYY-MM-DD) of a month; string arithmetic (Date maps years below 100 to 19xx). */
export const lastDayOf = (month: string): string => {
  const [year, m] = month.split("-").map(Number) as [number, number]
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0)
  const days = m === 2 ? (leap ? 29 : 28) : [4, 6, 9, 11].includes(m) ? 30 : 31
  return `${month}-${days}`
}

/** The month before (YYYY-MM); "0000-12" before "0001-01", which no report reaches. */
export const previousMonth = (month: string): string => {
  const [year, m] = month.split("-").map(Number) as [number, number]
  return m === 1 ? `${pad(year - 1, 4)}-12` : `${pad(year, 4)}-${pad(m - 1, 2)}`
}

/** A month's statement with its amounts still exact (micro-credits, cents). */
export interface StatementTotals {
  readonly month: string
  readonly opening: bigint
  readonly purchased: bigint
  readonly plan: bigint
  readonly used: bigint
  /** The price table's services with usage in the month, most charged first. */
  readonly byService: ReadonlyArray<UsageGroup & { readonly name: string }>
  /** Charged for services the price table does not list (any more). */
  readonly other: bigint
  readonly closing: bigint
  /** The month's receipts, oldest paid first. */
  readonly receipts: ReadonlyArray<ReceiptRecord>
  readonly paymentsCents: bigint
}

/** The sources of a statement. */
export interface StatementSources {
  readonly credits: ReadonlyArray<CreditTotal>
  /** Usage by day, at least every day before the month (later days are ignored). */
  readonly usageByDay: ReadonlyArray<UsageGroup>
  /** The month's usage by service. */
  readonly usageByService: ReadonlyArray<UsageGroup>
  /** The account's receipts (any month). */
  readonly receipts: ReadonlyArray<ReceiptRecord>
}

const byCharge = (a: UsageGroup, b: UsageGroup) =>
  a.credits !== b.credits
    ? (a.credits > b.credits ? -1 : 1)
    : a.list_credits !== b.list_credits
    ? (a.list_credits > b.list_credits ? -1 : 1)
    : (a.key < b.key ? -1 : a.key > b.key ? 1 : 0)

/** The statement of `month` from its sources: pure, so the rule is written once. */
export const statementOf = (
  month: string,
  sources: StatementSources,
  serviceNames: ReadonlyMap<string, string>
): StatementTotals => {
  const start = `${month}-01`
  let opening = 0n
  let purchased = 0n
  let plan = 0n
  for (const t of sources.credits) {
    if (t.month < month) opening += t.amount
    // Purchased credits are net of what refunds and disputes took back that month (credit_reversed).
    else if (t.month === month) t.type === "plan_credit_granted" ? (plan += t.amount) : (purchased += t.amount)
  }
  for (const d of sources.usageByDay) if (d.key < start) opening -= d.credits
  let used = 0n
  let other = 0n
  const byService: Array<UsageGroup & { readonly name: string }> = []
  for (const s of sources.usageByService) {
    used += s.credits
    const name = serviceNames.get(s.key)
    if (name === undefined) other += s.credits
    else byService.push({ ...s, name })
  }
  const receipts = sources.receipts
    .filter((r) => monthOf(r.paid_at) === month)
    .sort((a, b) => (a.paid_at < b.paid_at ? -1 : a.paid_at > b.paid_at ? 1 : a.id < b.id ? -1 : 1))
  return {
    month,
    opening,
    purchased,
    plan,
    used,
    byService: byService.sort(byCharge),
    other,
    closing: opening + purchased + plan - used,
    receipts,
    paymentsCents: receipts.reduce((sum, r) => sum + r.amount_cents, 0n)
  }
}

/** The months with any activity, newest first: credits added, usage (any call), payments. */
export const activeMonths = (
  credits: ReadonlyArray<CreditTotal>,
  usageByDay: ReadonlyArray<UsageGroup>,
  receipts: ReadonlyArray<ReceiptRecord>
): Array<string> => {
  const months = new Set<string>()
  for (const t of credits) months.add(t.month)
  for (const d of usageByDay) if (d.calls > 0n) months.add(monthOf(d.key))
  for (const r of receipts) months.add(monthOf(r.paid_at))
  return [...months].sort().reverse()
}

/** The JSON statement. */
export const statementJson = (s: StatementTotals): Statement => ({
  month: s.month,
  opening_credits: microToCredits(s.opening),
  added: { purchased_credits: microToCredits(s.purchased), plan_credits: microToCredits(s.plan) },
  used_credits: microToCredits(s.used),
  usage_by_service: s.byService.map((g) => ({
    service: g.key,
    name: g.name,
    calls: Number(g.calls),
    list_credits: microToCredits(g.list_credits),
    credits: microToCredits(g.credits)
  })),
  other_usage_credits: microToCredits(s.other),
  closing_credits: microToCredits(s.closing),
  payments: s.receipts.map(toReceipt),
  payments_total_usd: centsToUsd(s.paymentsCents)
})

/** Cents as exact decimal dollars with two decimals. */
const usdText = (cents: bigint) => {
  const abs = cents < 0n ? -cents : cents
  return `${cents < 0n ? "-" : ""}${abs / 100n}.${(abs % 100n).toString().padStart(2, "0")}`
}

export const STATEMENT_CSV_COLUMNS = ["line", "key", "label", "calls", "list_credits", "credits", "usd"] as const

/**
 * The statement as CSV (docs/billing.md "Statements"): one table, a line per figure, in the JSON's
 * order; RFC 4180 with the usage CSV's quoting and formula guard (UsageCsv.ts).
 */
export const statementCsv = (s: StatementTotals): string => {
  const line = (fields: ReadonlyArray<string>) => `${fields.join(",")}\r\n`
  const figure = (kind: string, key: string, label: string, micro: bigint) =>
    line([kind, key, label, "", "", creditsText(micro), ""])
  return [
    line(STATEMENT_CSV_COLUMNS),
    figure("opening", "", "Opening balance", s.opening),
    figure("added", "purchased_credits", "Purchased credits", s.purchased),
    figure("added", "plan_credits", "Plan credits", s.plan),
    ...s.byService.map((g) =>
      line([
        "usage",
        csvText(g.key),
        csvText(g.name),
        g.calls.toString(),
        creditsText(g.list_credits),
        creditsText(g.credits),
        ""
      ])
    ),
    figure("usage", "other", "Other usage", s.other),
    figure("used", "", "Used", s.used),
    figure("closing", "", "Closing balance", s.closing),
    ...s.receipts.map((r) =>
      line(["payment", csvText(r.id), csvText(r.title), "", "", creditsText(r.credits), usdText(r.amount_cents)])
    ),
    line(["payments_total", "", "Payments", "", "", "", usdText(s.paymentsCents)])
  ].join("")
}

/** Where statements read from: the ports, or anything that answers as they do (tests). */
export interface StatementStores {
  readonly creditTotals: LedgerStore["Service"]["creditTotals"]
  readonly report: UsageStore["Service"]["report"]
  readonly receipts: (accountId: AccountId) => Effect.Effect<ReadonlyArray<ReceiptRecord>>
}

/** The statement reads over the stores: the months with activity, and one month's statement. */
export const statementsOver = (stores: StatementStores, serviceNames: ReadonlyMap<string, string>) => {
  const months = (accountId: AccountId) =>
    Effect.map(
      Effect.all([
        stores.creditTotals(accountId),
        stores.report({ account_id: accountId, from: BEGINNING, to: END }, "day"),
        stores.receipts(accountId)
      ], { concurrency: "unbounded" }),
      ([credits, days, receipts]) => activeMonths(credits, days, receipts)
    )

  const statement = (accountId: AccountId, month: string) =>
    Effect.map(
      Effect.all([
        stores.creditTotals(accountId),
        // The days before the month only: what the balance carried into it.
        stores.report({ account_id: accountId, from: BEGINNING, to: lastDayOf(previousMonth(month)) }, "day"),
        stores.report({ account_id: accountId, from: `${month}-01`, to: lastDayOf(month) }, "service"),
        stores.receipts(accountId)
      ], { concurrency: "unbounded" }),
      ([credits, usageByDay, usageByService, receipts]) =>
        statementOf(month, { credits, usageByDay, usageByService, receipts }, serviceNames)
    )

  return { months, statement } as const
}

/** The use-cases of the statements group (http/StatementsApi.ts). */
export const makeStatements = Effect.gen(function*() {
  const ledger = yield* LedgerStore
  const usage = yield* UsageStore
  const orders = yield* OrderStore
  const settings = yield* BillingSettingsStore
  const catalogue = yield* Catalogue
  const serviceNames = new Map(catalogue.config.prices.services.map((s) => [s.service, s.name]))
  const reads = statementsOver({
    creditTotals: ledger.creditTotals,
    report: usage.report,
    receipts: orders.listReceipts
  }, serviceNames)

  const list = Effect.fn("Statements.list")(function*(caller: Caller) {
    const months = yield* reads.months(caller.account.id)
    return { data: months.map((month) => ({ month })) } satisfies StatementMonthList
  })

  /** A month after the current UTC month has no statement yet: 404. Any other month has one. */
  const statement = Effect.fn("Statements.statement")(function*(caller: Caller, month: string) {
    const current = monthOf(toTimestamp(yield* Clock.currentTimeMillis))
    if (month > current) {
      return yield* billingError("statement_not_found", `No statement for ${month}: it is after this month (${current}).`)
    }
    return yield* reads.statement(caller.account.id, month)
  })

  const requestInvoicing = Effect.fn("Statements.requestInvoicing")(function*(caller: Caller, body: InvoicingRequest) {
    const requested_at = toTimestamp(yield* Clock.currentTimeMillis)
    yield* settings.update(caller.account.id, { invoicing: { state: "requested", note: body.note, requested_at } })
    return { invoicing: "requested" } satisfies InvoicingResponse
  })

  return { list, statement, requestInvoicing } as const
})
