/**
 * The plans page for a person (docs/plans.md "The plans page"), as pure functions from data to
 * HTML in the account pages' look (http/pages/PageFrame.ts); its routes are http/PlansPageRoutes.ts.
 * Every value that reaches the page is HTML-escaped; the page carries no script. Elements tests
 * look for carry stable ids (#plans, #rentals, #offers, and per row data-plan / data-offer).
 */
import { csrfField, errorLine, layout, okLine, type PageContext } from "./PageFrame.ts"
import { escapeHtml } from "./CheckoutPage.ts"
import type { Rental, Subscription } from "../../plans/Schemas.ts"

/** One plan a machine offers, as the page lists it. */
export interface OfferedPlan {
  readonly machine_id: string
  readonly machine_name: string
  readonly plan_id: string
  readonly name: string
  readonly usd_per_period: number
  readonly period_days: number
  readonly models: ReadonlyArray<string>
}

export interface PlansPageView {
  readonly email: string
  readonly plans: ReadonlyArray<Subscription>
  readonly rentals: ReadonlyArray<Rental>
  readonly offers: ReadonlyArray<OfferedPlan>
  readonly notice?: string | undefined
  readonly error?: string | undefined
}

const PLANS_STYLE = `
  main { max-width: 46rem; }
  table.list { width: 100%; border-collapse: collapse; font-size: .9rem; margin-bottom: .75rem; }
  table.list th { text-align: left; font-weight: 600; color: #6b7280; font-size: .8rem; }
  table.list th, table.list td { padding: .4rem .5rem .4rem 0; border-bottom: 1px solid #eceef2; vertical-align: middle; }
  table.list form { margin: 0; } table.list button { width: auto; padding: .3rem .7rem; font-size: .85rem; }
  .badge { font-size: .7rem; border-radius: 4px; padding: .1rem .35rem; background: #eef1fb; color: #2c46a8; }
  .badge.ended { background: #f1f1f1; color: #6b7280; }
`

const day = (at: string) => at.slice(0, 10)
const usd = (n: number) => `$${n.toFixed(2)}`

const planRow = (ctx: PageContext, p: Subscription) => {
  const renewal = p.status === "ended"
    ? p.renewal_error === null ? "ended" : `ended: not renewed (${p.renewal_error})`
    : p.cancel_at_period_end
    ? `ends ${day(p.current_period_end)}`
    : p.auto_renews
    ? `renews ${day(p.current_period_end)}`
    : `paid to ${day(p.current_period_end)}`
  const action = p.status !== "active" || p.paid_with !== "card"
    ? ""
    : `<form method="post" action="${escapeHtml(ctx.base)}/plans/${p.cancel_at_period_end ? "resume" : "cancel"}">${csrfField(ctx)}
<input type="hidden" name="id" value="${escapeHtml(p.id)}"><button type="submit" class="${p.cancel_at_period_end ? "" : "secondary"}">${
      p.cancel_at_period_end ? "Resume" : "Cancel at period end"
    }</button></form>`
  return `<tr data-plan="${escapeHtml(p.id)}" data-status="${escapeHtml(p.status)}"><td>${escapeHtml(p.plan_id)}</td><td>${escapeHtml(p.machine_id)}</td>
<td><span class="badge${p.status === "ended" ? " ended" : ""}">${escapeHtml(p.status)}</span> <span class="renewal">${escapeHtml(renewal)}</span></td>
<td>${escapeHtml(p.paid_with)}</td><td>${action}</td></tr>`
}

const rentalRow = (r: Rental) =>
  `<tr data-rental="${escapeHtml(r.id)}"><td>${escapeHtml(r.machine_id)}</td><td>${r.cpu_cores} cores, ${r.memory_gb} GB${
    r.gpu > 0 ? `, ${r.gpu} GPU` : ""
  }</td><td><span class="badge${r.status === "ended" ? " ended" : ""}">${escapeHtml(r.status)}</span></td><td>until ${escapeHtml(r.ends_at.replace("T", " ").slice(0, 16))} UTC</td></tr>`

const offerRow = (ctx: PageContext, o: OfferedPlan) =>
  `<tr data-offer="${escapeHtml(`${o.machine_id}/${o.plan_id}`)}"><td>${escapeHtml(o.name)}</td><td>${escapeHtml(o.machine_name)}</td>
<td>${escapeHtml(o.models.join(", "))}</td><td>${escapeHtml(usd(o.usd_per_period))} / ${o.period_days} days</td>
<td><form method="post" action="${escapeHtml(ctx.base)}/plans/buy">${csrfField(ctx)}
<input type="hidden" name="machine_id" value="${escapeHtml(o.machine_id)}"><input type="hidden" name="plan_id" value="${escapeHtml(o.plan_id)}">
<button type="submit">Buy</button></form></td></tr>`

/** The plans page of the signed-in person's account. */
export const plansPage = (ctx: PageContext, view: PlansPageView): string =>
  layout(
    ctx,
    "Plans and rentals",
    `<nav class="no-print"><span>${escapeHtml(view.email)}</span><a href="${escapeHtml(ctx.base)}/manage" id="manage-link">Your account</a></nav>
<h1>Plans and rentals</h1>
${okLine(view.notice)}
${errorLine(view.error)}
<h2>Your plans</h2>
${
      view.plans.length === 0
        ? `<p class="note" id="plans">No plans yet.</p>`
        : `<table class="list" id="plans"><thead><tr><th>Plan</th><th>Machine</th><th>Status</th><th>Paid with</th><th></th></tr></thead><tbody>
${view.plans.map((p) => planRow(ctx, p)).join("\n")}
</tbody></table>`
    }
<p class="note">A key made for a plan calls only the plan's models, on its machine.</p>
<h2>Your rentals</h2>
${
      view.rentals.length === 0
        ? `<p class="note" id="rentals">No rentals yet.</p>`
        : `<table class="list" id="rentals"><thead><tr><th>Machine</th><th>What</th><th>Status</th><th>Runs</th></tr></thead><tbody>
${view.rentals.map(rentalRow).join("\n")}
</tbody></table>`
    }
<h2>Buy a plan</h2>
${
      view.offers.length === 0
        ? `<p class="note" id="offers">No machine offers plans.</p>`
        : `<table class="list" id="offers"><thead><tr><th>Plan</th><th>Machine</th><th>Models</th><th>Price</th><th></th></tr></thead><tbody>
${view.offers.map((o) => offerRow(ctx, o)).join("\n")}
</tbody></table>`
    }`,
    { style: PLANS_STYLE }
  )
