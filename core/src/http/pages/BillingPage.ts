/**
 * The billing page for a person and its printable receipts (docs/billing.md "The billing page"),
 * as pure functions from data to HTML in the account pages' look (http/pages/PageFrame.ts). The routes
 * are http/BillingPageRoutes.ts. Every value that reaches the page is HTML-escaped; the pages carry
 * no script (the account service's CSP allows none inline), so the usage chart is inline SVG drawn
 * here. Elements tests look for carry stable ids (#balance, #month-spend, #usage-chart, #alerts,
 * #receipts, #grants, #saved-card, #card-form, #auto-reload-form, #auto-reload-error, ...).
 */
import { csrfField, errorLine, layout, okLine, type PageContext } from "./PageFrame.ts"
import { escapeHtml } from "./CheckoutPage.ts"
import type { ServiceGrants } from "../../billing/Allowances.ts"
import type { Alert, AutoReloadView } from "../../billing/Schemas.ts"
import type { Receipt } from "../../payments/Orders.ts"

/** One day of the chart: YYYY-MM-DD and what was charged (credits, a display number). */
export interface UsageDay {
  readonly day: string
  readonly credits: number
  readonly calls: number
}

export interface BillingPageView {
  readonly email: string
  readonly balance: { readonly credits: number; readonly usd: number }
  /** This UTC month (YYYY-MM), its spend and the limit in force (own: the account set it). */
  readonly month: { readonly period: string; readonly spent_credits: number; readonly limit_credits: number; readonly own_limit: boolean }
  /** The month's days with usage (others are drawn as empty days). */
  readonly days: ReadonlyArray<UsageDay>
  /** Each service's free allowance this month and its trial (billing/Allowances.ts grantsView). */
  readonly grants: ReadonlyArray<ServiceGrants>
  /** Newest first; `seen` as it was before this view marked them seen. */
  readonly alerts: ReadonlyArray<Alert>
  readonly receipts: ReadonlyArray<Receipt>
  readonly autoReload: AutoReloadView
  /**
   * Where a card is typed: the platform's own form (the test processor) or the card processor's
   * page (Stripe), which the page's buttons open.
   */
  readonly cardPages: "platform" | "processor"
  readonly notice?: string | undefined
  readonly error?: string | undefined
  /** Where the card form's or the settings form's own message goes. */
  readonly cardError?: string | undefined
  readonly settingsError?: string | undefined
  /** The settings form as posted, when it was refused (so the person does not type it again). */
  readonly posted?: { readonly enabled: boolean; readonly threshold: string; readonly amount: string } | undefined
}

/** What the billing page adds to the account pages' look (http/pages/PageFrame.ts). */
const BILLING_STYLE = `
  main { max-width: 46rem; }
  .big { font-size: 2rem; font-weight: 600; margin: .25rem 0; }
  .bar { background: #eceef2; border-radius: 6px; height: .9rem; overflow: hidden; }
  .bar > span { display: block; height: 100%; background: #3a5bd9; }
  .bar.over > span { background: #c0392b; }
  .chart { width: 100%; height: auto; display: block; }
  .chart text { font-size: 11px; fill: #6b7280; }
  .chart .day { fill: #3a5bd9; } .chart .axis { stroke: #c8ccd4; } .chart .grid { stroke: #eceef2; }
  .badge { font-size: .7rem; border-radius: 4px; padding: .1rem .35rem; background: #eef1fb; color: #2c46a8; white-space: nowrap; }
  .badge.new { background: #fff3d6; color: #8a5a00; }
  ul.list li.alert { display: block; } ul.list li.alert .when { color: #6b7280; font-size: .8rem; }
  .row { display: flex; gap: .75rem; } .row > div { flex: 1; }
  table.grants { width: 100%; border-collapse: collapse; font-size: .9rem; }
  table.grants th { text-align: left; font-weight: 600; color: #6b7280; font-size: .8rem; }
  table.grants th, table.grants td { padding: .4rem .5rem .4rem 0; border-bottom: 1px solid #eceef2; }
  input[type=checkbox] { width: auto; }
  @media print { body { background: #fff; } main { box-shadow: none; margin: 0 auto; } .no-print { display: none; } }`

const page = (ctx: PageContext, title: string, body: string): string => layout(ctx, title, body, { style: BILLING_STYLE })

/** Credits for a person: grouped, up to 6 decimals (the amounts are exact to the micro-credit). */
export const formatCredits = (credits: number): string => credits.toLocaleString("en-US", { maximumFractionDigits: 6 })

const formatUsd = (usd: number): string =>
  `$${usd.toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 })}`

/** "2025-03-07T12:34:56.000Z" as "2025-03-07 12:34 UTC". */
const when = (at: string) => `${at.replace("T", " ").slice(0, 16)} UTC`

const MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"]

/** "2025-03" as "March 2025". */
export const monthName = (period: string): string => `${MONTHS[Number(period.slice(5, 7)) - 1] ?? period} ${period.slice(0, 4)}`

/** A round upper bound for the chart's scale: 1, 2 or 5 times a power of ten, at least `max`. */
export const niceCeiling = (max: number): number => {
  if (!(max > 0)) return 1
  const power = 10 ** Math.floor(Math.log10(max))
  for (const step of [1, 2, 5, 10]) if (step * power >= max) return step * power
  return 10 * power
}

const daysInMonth = (period: string): number => new Date(Date.UTC(Number(period.slice(0, 4)), Number(period.slice(5, 7)), 0)).getUTCDate()

/**
 * The month's usage as an SVG bar chart: a bar per day (days without usage empty), the credit
 * scale on the left (0, half, top), day numbers below, and a title and description for screen
 * readers (each bar also has its own title).
 */
export const usageChart = (period: string, days: ReadonlyArray<UsageDay>): string => {
  const n = daysInMonth(period)
  const byDay = new Map(days.map((d) => [Number(d.day.slice(8, 10)), d]))
  const top = niceCeiling(Math.max(0, ...days.map((d) => d.credits)))
  const [W, H, left, right, upper, bottom] = [640, 230, 64, 8, 12, 34]
  const plotW = W - left - right
  const plotH = H - upper - bottom
  const slot = plotW / n
  const barW = Math.max(2, slot * 0.7)
  const y = (credits: number) => upper + plotH - (credits / top) * plotH
  const total = days.reduce((sum, d) => sum + d.credits, 0)
  const busiest = days.reduce<UsageDay | undefined>((best, d) => (best === undefined || d.credits > best.credits ? d : best), undefined)
  const title = `Usage by day, ${monthName(period)}`
  const desc = days.length === 0
    ? "No usage this month yet."
    : `${formatCredits(total)} credits over ${days.length} day${days.length === 1 ? "" : "s"} with usage; the most on ${busiest!.day}: ${
      formatCredits(busiest!.credits)
    } credits.`
  const ticks = [0, top / 2, top].map((t) =>
    `<line class="grid" x1="${left}" x2="${W - right}" y1="${y(t).toFixed(1)}" y2="${y(t).toFixed(1)}"/>` +
    `<text x="${left - 6}" y="${(y(t) + 4).toFixed(1)}" text-anchor="end">${escapeHtml(formatCredits(t))}</text>`
  ).join("")
  const labelled = new Set([1, 5, 10, 15, 20, 25, n])
  const xLabels = [...labelled].map((d) =>
    `<text x="${(left + (d - 0.5) * slot).toFixed(1)}" y="${H - bottom + 16}" text-anchor="middle">${d}</text>`
  ).join("")
  const bars = [...byDay.entries()].filter(([, d]) => d.credits > 0).map(([day, d]) => {
    // At least a pixel high, so a day with a little usage is still seen beside a large one.
    const h = Math.max(1, (d.credits / top) * plotH)
    return `<rect class="day" data-day="${escapeHtml(d.day)}" x="${(left + (day - 1) * slot + (slot - barW) / 2).toFixed(1)}" y="${
      (upper + plotH - h).toFixed(1)
    }" width="${barW.toFixed(1)}" height="${h.toFixed(1)}"><title>${escapeHtml(`${d.day}: ${formatCredits(d.credits)} credits, ${d.calls} calls`)}</title></rect>`
  }).join("")
  return `<svg id="usage-chart" class="chart" viewBox="0 0 ${W} ${H}" role="img" aria-labelledby="usage-chart-title usage-chart-desc" xmlns="http://www.w3.org/2000/svg">
<title id="usage-chart-title">${escapeHtml(title)}</title>
<desc id="usage-chart-desc">${escapeHtml(desc)}</desc>
${ticks}
<line class="axis" x1="${left}" x2="${W - right}" y1="${upper + plotH}" y2="${upper + plotH}"/>
${bars}
${days.length === 0 ? `<text x="${left + plotW / 2}" y="${upper + plotH / 4}" text-anchor="middle">No usage this month yet</text>` : ""}
${xLabels}
<text x="${left}" y="${H - 2}" text-anchor="start">day of ${escapeHtml(monthName(period))} (UTC)</text>
<text x="12" y="${upper + plotH / 2}" text-anchor="middle" transform="rotate(-90 12 ${upper + plotH / 2})">credits</text>
</svg>`
}

const ALERT_NAMES: Record<Alert["kind"], string> = {
  org_spend: "Spend alert",
  monthly_limit_reached: "Monthly limit reached",
  key_monthly_limit_reached: "Key limit reached",
  low_balance: "Low balance",
  auto_reload_paid: "Automatic top-up paid",
  auto_reload_failed: "Automatic top-up failed",
  plan_renewal_failed: "A plan was not renewed"
}

const alertsList = (alerts: ReadonlyArray<Alert>) =>
  alerts.length === 0
    ? `<p class="note" id="alerts">No alerts.</p>`
    : `<ul class="list" id="alerts">
${
      alerts.map((a) =>
        `<li class="alert" data-alert-id="${escapeHtml(a.id)}" data-kind="${escapeHtml(a.kind)}"><strong>${escapeHtml(ALERT_NAMES[a.kind])}</strong> ${
          a.seen ? "" : `<span class="badge new">new</span>`
        } <span class="when">${escapeHtml(when(a.created_at))}</span><br>${escapeHtml(a.message)}</li>`
      ).join("\n")
    }
</ul>`

const receiptsList = (ctx: PageContext, receipts: ReadonlyArray<Receipt>) =>
  receipts.length === 0
    ? `<p class="note" id="receipts">No payments yet.</p>`
    : `<ul class="list" id="receipts">
${
      receipts.map((r) =>
        `<li data-receipt-id="${escapeHtml(r.id)}"${r.auto_reload ? ` data-auto-reload="true"` : ""}><span>${escapeHtml(r.title)}${
          r.auto_reload ? ` <span class="badge">automatic top-up</span>` : ""
        }<br><span class="note">${escapeHtml(when(r.paid_at))} · ${escapeHtml(formatCredits(r.credits))} credits</span></span>` +
        `<span>${escapeHtml(r.amount.text)} <a href="${escapeHtml(ctx.base)}/billing/receipts/${encodeURIComponent(r.id)}">receipt</a></span></li>`
      ).join("\n")
    }
</ul>`

const spendBar = (month: BillingPageView["month"]) => {
  const share = month.limit_credits > 0 ? month.spent_credits / month.limit_credits : month.spent_credits > 0 ? 1 : 0
  const percent = Math.min(100, Math.max(0, share * 100))
  // Any spend shows at least a sliver, so a small spend is not read as none.
  const width = month.spent_credits > 0 ? `max(3px, ${percent.toFixed(2)}%)` : "0"
  return `<p id="month-spend"><strong>${escapeHtml(formatCredits(month.spent_credits))}</strong> of ${
    escapeHtml(formatCredits(month.limit_credits))
  } credits spent in ${escapeHtml(monthName(month.period))} (${month.own_limit ? "your own monthly limit" : "your tier's monthly limit"})</p>
<div class="bar${share >= 1 ? " over" : ""}" role="progressbar" aria-label="This month's spend against the monthly limit" aria-valuemin="0" aria-valuemax="100" aria-valuenow="${
    percent.toFixed(0)
  }"><span style="width: ${width}"></span></div>`
}

const cardForm = (ctx: PageContext, view: BillingPageView) =>
  `<h2>Card for automatic top-ups</h2>
<p id="saved-card">${view.autoReload.card === null ? "No card saved." : `Saved card: <strong>${escapeHtml(view.autoReload.card)}</strong>`}</p>
${view.cardError === undefined ? "" : `<p class="error" role="alert" id="card-error">${escapeHtml(view.cardError)}</p>`}
<form method="post" action="${escapeHtml(ctx.base)}/billing/card" id="card-form" autocomplete="off">
${csrfField(ctx)}
<label for="card-number">Card number</label>
<input id="card-number" name="card_number" type="text" inputmode="numeric" autocomplete="cc-number" required placeholder="4242 4242 4242 4242">
<div class="row"><div><label for="card-expiry">Expiry (MM/YY)</label>
<input id="card-expiry" name="expiry" type="text" autocomplete="cc-exp" required placeholder="12/30"></div>
<div><label for="card-cvc">CVC</label>
<input id="card-cvc" name="cvc" type="text" inputmode="numeric" autocomplete="cc-csc" required placeholder="123"></div></div>
<button type="submit" id="save-card">${view.autoReload.card === null ? "Save the card" : "Replace the card"}</button>
</form>
<p class="note">The card details go to the card processor; this service keeps only its reference and description.</p>`

/** The card for top-ups when the processor shows its own page: buttons that open it, and a purchase that keeps its card. */
const processorCardForms = (ctx: PageContext, view: BillingPageView) =>
  `<h2>Card for automatic top-ups</h2>
<p id="saved-card">${view.autoReload.card === null ? "No card saved." : `Saved card: <strong>${escapeHtml(view.autoReload.card)}</strong>`}</p>
${view.cardError === undefined ? "" : `<p class="error" role="alert" id="card-error">${escapeHtml(view.cardError)}</p>`}
<form method="post" action="${escapeHtml(ctx.base)}/billing/card" id="card-form">
${csrfField(ctx)}
<button type="submit" id="save-card">${view.autoReload.card === null ? "Save a card" : "Replace the card"}</button>
</form>
${
    view.autoReload.card === null ? "" : `<form method="post" action="${escapeHtml(ctx.base)}/billing/card/remove" id="remove-card-form">
${csrfField(ctx)}
<button type="submit" id="remove-card" class="secondary">Remove the card</button>
</form>`
  }
<h3>Buy credits and keep the card</h3>
<form method="post" action="${escapeHtml(ctx.base)}/billing/buy" id="buy-form">
${csrfField(ctx)}
<label for="buy-keep-amount">Amount (USD, 5 to 5000)</label>
<input id="buy-keep-amount" name="amount_usd" type="text" inputmode="numeric" required value="25">
<button type="submit" id="buy-keep-card">Buy and keep the card</button>
</form>
<p class="note">The card is typed on the card processor's page; this service keeps only its reference and description.</p>`

const settingsForm = (ctx: PageContext, view: BillingPageView) => {
  const a = view.autoReload
  const values = view.posted ?? { enabled: a.enabled, threshold: String(a.threshold_credits), amount: a.amount_usd === 0 ? "" : String(a.amount_usd) }
  return `<h2>Automatic top-ups</h2>
<p id="auto-reload-state">${
    a.enabled
      ? `On: when the balance falls below ${escapeHtml(formatCredits(a.threshold_credits))} credits, ${escapeHtml(formatUsd(a.amount_usd))} is charged to the saved card.`
      : "Off."
  }</p>
${a.last_error === null ? "" : `<p class="error" role="alert" id="auto-reload-error">The last automatic top-up failed: ${escapeHtml(a.last_error)}</p>`}
${view.settingsError === undefined ? "" : `<p class="error" role="alert" id="settings-error">${escapeHtml(view.settingsError)}</p>`}
<form method="post" action="${escapeHtml(ctx.base)}/billing/auto-reload" id="auto-reload-form">
${csrfField(ctx)}
<label class="check"><input type="checkbox" name="enabled" value="true" id="auto-reload-enabled"${values.enabled ? " checked" : ""}> Top up automatically</label>
<div class="row"><div><label for="auto-reload-threshold">When the balance falls below (credits)</label>
<input id="auto-reload-threshold" name="threshold_credits" type="text" inputmode="decimal" required value="${escapeHtml(values.threshold)}"></div>
<div><label for="auto-reload-amount">Buy (USD, 5 to 5000)</label>
<input id="auto-reload-amount" name="amount_usd" type="text" inputmode="numeric" value="${escapeHtml(values.amount)}"></div></div>
<button type="submit" id="save-auto-reload">Save the settings</button>
</form>
<p class="note">At most a few automatic top-ups a day; after a failure none until the settings or the card change.</p>`
}

const grantCell = (g: ServiceGrants["allowance"]) =>
  g.size === 0 ? "none" : `${escapeHtml(formatCredits(g.used))} of ${escapeHtml(formatCredits(g.size))} credits used`

/** What calls may use before credits: each service's allowance this month and its trial. */
const grantsTable = (grants: ReadonlyArray<ServiceGrants>) =>
  grants.length === 0 ? "" : `<h2>Free allowance and trial</h2>
<table id="grants" class="grants"><thead><tr><th>Service</th><th>This month's allowance</th><th>Trial (once)</th></tr></thead><tbody>
${grants.map((g) => `<tr data-service="${escapeHtml(g.service)}"><td>${escapeHtml(g.name)}</td><td>${grantCell(g.allowance)}</td><td>${grantCell(g.trial)}</td></tr>`).join("\n")}
</tbody></table>
<p class="note">Calls use these first, then credits. The allowance starts again each month; the trial does not.</p>`

/** The billing page of the signed-in person's account. */
export const billingPage = (ctx: PageContext, view: BillingPageView): string =>
  page(
    ctx,
    "Billing",
    `<nav class="no-print"><span>${escapeHtml(view.email)}</span><a href="${escapeHtml(ctx.base)}/manage" id="manage-link">Your account</a></nav>
<h1>Billing</h1>
${okLine(view.notice)}
${errorLine(view.error)}
<p class="note" style="margin:0">Balance</p>
<p class="big" id="balance">${escapeHtml(formatCredits(view.balance.credits))} credits</p>
<p class="note" style="margin:0" id="balance-usd">about ${escapeHtml(formatUsd(view.balance.usd))}</p>
<h2>This month</h2>
${spendBar(view.month)}
<h2>Usage by day</h2>
${usageChart(view.month.period, view.days)}
${grantsTable(view.grants)}
<h2>Alerts</h2>
${alertsList(view.alerts)}
<h2>Receipts</h2>
${receiptsList(ctx, view.receipts)}
${view.cardPages === "processor" ? processorCardForms(ctx, view) : cardForm(ctx, view)}
${settingsForm(ctx, view)}`
  )

/**
 * The way to the card processor's page where a card is saved: a link, since the account pages'
 * forms may only post to this site (their CSP's form-action), redirects included.
 */
export const cardSetupPage = (ctx: PageContext, email: string, checkoutUrl: string): string =>
  page(
    ctx,
    "Save a card",
    `<nav class="no-print"><span>${escapeHtml(email)}</span><a href="${escapeHtml(ctx.base)}/billing" id="billing-link">Back to billing</a></nav>
<h1>Save a card</h1>
<p>The card is typed on the card processor's page; you come back here once it is saved.</p>
<p><a href="${escapeHtml(checkoutUrl)}" id="card-setup-link" class="button">Continue to the card page</a></p>`
  )

/** A receipt to print (or save as PDF from the browser's print dialog). */
export const receiptPage = (ctx: PageContext, email: string, r: Receipt): string =>
  page(
    ctx,
    `Receipt ${r.id}`,
    `<nav class="no-print"><a href="${escapeHtml(ctx.base)}/billing" id="billing-link">Back to billing</a><span>Print this page to keep it.</span></nav>
<h1>Receipt</h1>
<p class="note" style="margin-top:0">Model Platform</p>
<dl id="receipt">
<dt>Receipt</dt><dd id="receipt-id">${escapeHtml(r.id)}</dd>
<dt>Paid</dt><dd>${escapeHtml(when(r.paid_at))}</dd>
<dt>Account</dt><dd>${escapeHtml(email)}</dd>
<dt>Item</dt><dd id="receipt-title">${escapeHtml(r.title)}</dd>
<dt>Payment</dt><dd id="receipt-kind">${r.auto_reload ? "automatic top-up, charged to the saved card" : "a purchase"}</dd>
<dt>Credits</dt><dd>${escapeHtml(formatCredits(r.credits))}</dd>
<dt>Paid with</dt><dd>${escapeHtml(r.paid_with)}</dd>
<dt>Amount</dt><dd class="big" id="receipt-amount">${escapeHtml(r.amount.text)}</dd>
</dl>`
  )
