/**
 * The plans page's plan rows (core/src/http/pages/PlansPage.ts): what a person reads of each plan's
 * renewal, including why a renewal failed, escaped; and which plans offer cancel or resume.
 */
import { describe, expect, it } from "@effect/vitest"
import { plansPage } from "../../src/http/pages/PlansPage.ts"
import type { Subscription } from "../../src/plans/Schemas.ts"

const plan = (overrides: Partial<Subscription>): Subscription => ({
  id: "sub_1", machine_id: "eu-gpu-1", plan_id: "builder", status: "active", auto_renews: true, cancel_at_period_end: false,
  current_period_start: "2026-11-01T00:00:00.000Z", current_period_end: "2026-12-01T00:00:00.000Z", paid_with: "card",
  renewal_error: null, ...overrides
})
const rowOf = (html: string, id: string) => html.match(new RegExp(`<tr data-plan="${id}"[\\s\\S]*?</tr>`))?.[0] ?? ""

describe("the plans page", () => {
  it("says when each plan renews or ends, and why a renewal failed", () => {
    const html = plansPage({ base: "/accounts", csrf: "t" }, {
      email: "a@b.test",
      rentals: [],
      offers: [],
      plans: [
        plan({ id: "renews" }),
        plan({ id: "cancelled", auto_renews: false, cancel_at_period_end: true }),
        plan({ id: "failed", status: "ended", auto_renews: false, renewal_error: "Your card has expired. <b>(expired_card)</b>" }),
        plan({ id: "coin", paid_with: "stablecoin", auto_renews: false })
      ]
    })
    expect(rowOf(html, "renews")).toContain("renews 2026-12-01")
    expect(rowOf(html, "renews")).toContain("Cancel at period end")
    expect(rowOf(html, "cancelled")).toContain("ends 2026-12-01")
    expect(rowOf(html, "cancelled")).toContain("Resume")
    expect(rowOf(html, "failed")).toContain("ended: not renewed (Your card has expired. &lt;b&gt;(expired_card)&lt;/b&gt;)")
    expect(rowOf(html, "failed")).not.toContain("<form")
    expect(rowOf(html, "coin")).toContain("paid to 2026-12-01")
    expect(rowOf(html, "coin")).not.toContain("<form")
  })
})
