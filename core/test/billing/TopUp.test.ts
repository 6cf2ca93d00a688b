/**
 * The rules of alerts and automatic top-ups (billing/Alerts.ts, billing/TopUp.ts) and the test
 * processor's saved cards: which step a check takes, what a crossing does, which alert points
 * are passed, and Stripe's 0341 card.
 */
import { describe, expect, it } from "@effect/vitest"
import * as fc from "fast-check"
import { alertMail, limitReachedAlert, orgSpendAlert, pointsPassed } from "../../src/billing/Alerts.ts"
import { DEFAULT_BILLING_SETTINGS } from "../../src/billing/Settings.ts"
import { MAX_TOP_UPS_PER_DAY, planCrossing, STALE_CHARGE_MS, stepOf } from "../../src/billing/TopUp.ts"
import { isAutoReloadOrder } from "../../src/payments/OrderRules.ts"
import type { TopUpState } from "../../src/billing/AlertStore.ts"
import { chargeSavedTestCard, saveTestCard } from "../../src/payments/TestCardProcessor.ts"

const NOW = Date.UTC(2026, 10, 23, 12)
const state = (overrides: Partial<TopUpState>): TopUpState => ({
  version: 3, phase: "armed", order_id: null, day: "2026-11-23", charges_on_day: 0, last_error: null,
  updated_at: new Date(NOW).toISOString(), ...overrides
})
const card = { processor: "test", reference: "pm_test_4242_122099_x", description: "Visa •••• 4242", saved_at: "2026-11-23T00:00:00.000Z" }
const on = { ...DEFAULT_BILLING_SETTINGS.auto_reload, enabled: true, threshold: 100n, amount_usd: 10, card }

describe("automatic top-ups: a check's step", () => {
  it("armed (or never crossed) and below: a crossing; at or above: nothing", () => {
    expect(stepOf(undefined, 99n, 100n, NOW)).toBe("cross")
    expect(stepOf(state({}), 99n, 100n, NOW)).toBe("cross")
    expect(stepOf(state({}), 100n, 100n, NOW)).toBe("nothing")
    expect(stepOf(undefined, -5n, 0n, NOW)).toBe("cross")
  })

  it("below: re-armed only when the balance is seen at or above the threshold again", () => {
    expect(stepOf(state({ phase: "below" }), 99n, 100n, NOW)).toBe("nothing")
    expect(stepOf(state({ phase: "below" }), 100n, 100n, NOW)).toBe("rearm")
  })

  it("charging: nothing while the claim is fresh, taken over once it is stale", () => {
    const charging = state({ phase: "charging", order_id: "ord_auto_1" })
    expect(stepOf(charging, 0n, 100n, NOW + STALE_CHARGE_MS - 1)).toBe("nothing")
    expect(stepOf(charging, 0n, 100n, NOW + STALE_CHARGE_MS)).toBe("resume")
    expect(stepOf(charging, 1_000n, 100n, NOW + STALE_CHARGE_MS)).toBe("resume")
  })

  it("property: a crossing only from armed below the threshold, a re-arm only from below at or above it", () => {
    const phases = fc.constantFrom<TopUpState["phase"]>("armed", "below")
    fc.assert(fc.property(phases, fc.bigInt({ min: -10n, max: 10n }), fc.bigInt({ min: 0n, max: 10n }), (phase, posted, threshold) => {
      const step = stepOf(state({ phase }), posted, threshold, NOW)
      if (step === "cross") expect(phase === "armed" && posted < threshold).toBe(true)
      if (step === "rearm") expect(phase === "below" && posted >= threshold).toBe(true)
      expect(step).not.toBe("resume")
    }))
  })
})

describe("automatic top-ups: what a crossing does", () => {
  it("charges when on, with a card, no failure waiting, payments set up and under the day's cap", () => {
    expect(planCrossing(on, undefined, "2026-11-23", true)).toEqual({ _tag: "Charge", chargesOnDay: 1 })
    expect(planCrossing(on, state({ charges_on_day: 2 }), "2026-11-23", true)).toEqual({ _tag: "Charge", chargesOnDay: 3 })
    // A new UTC day starts the count again.
    expect(planCrossing(on, state({ charges_on_day: MAX_TOP_UPS_PER_DAY, day: "2026-11-22" }), "2026-11-23", true))
      .toEqual({ _tag: "Charge", chargesOnDay: 1 })
  })

  it("otherwise only low_balance, saying why", () => {
    const why = (plan: ReturnType<typeof planCrossing>) => (plan._tag === "AlertOnly" ? plan.why : "charge")
    expect(why(planCrossing({ ...on, enabled: false }, undefined, "2026-11-23", true))).toContain("off")
    expect(why(planCrossing({ ...on, card: null }, undefined, "2026-11-23", true))).toContain("No card")
    expect(why(planCrossing(on, state({ last_error: "declined" }), "2026-11-23", true))).toContain("declined")
    expect(why(planCrossing(on, undefined, "2026-11-23", false))).toContain("not set up")
    expect(why(planCrossing(on, state({ charges_on_day: MAX_TOP_UPS_PER_DAY }), "2026-11-23", true))).toContain(`${MAX_TOP_UPS_PER_DAY}`)
  })

  it("top-up orders are told apart by their id", () => {
    expect(isAutoReloadOrder("ord_auto_abc")).toBe(true)
    expect(isAutoReloadOrder("ord_abc")).toBe(false)
    expect(isAutoReloadOrder("ord_autoabc")).toBe(false)
  })
})

describe("alerts: rules", () => {
  it("alert points passed: spend >= point% of the limit, exactly, none without spend or limit", () => {
    expect(pointsPassed([50, 90, 100], 4_999_999n, 10_000_000n)).toEqual([])
    expect(pointsPassed([50, 90, 100], 5_000_000n, 10_000_000n)).toEqual([50])
    expect(pointsPassed([50, 90, 100], 10_000_000n, 10_000_000n)).toEqual([50, 90, 100])
    expect(pointsPassed([50], 0n, 10n)).toEqual([])
    expect(pointsPassed([50], 10n, 0n)).toEqual([])
    // Passed points are a prefix of the ascending points: passing one passes every lower one.
    const points = fc.uniqueArray(fc.integer({ min: 1, max: 100 })).map((xs) => [...xs].sort((a, b) => a - b))
    fc.assert(fc.property(points, fc.bigInt({ min: 1n, max: 10n ** 18n }), fc.bigInt({ min: 1n, max: 10n ** 18n }), (ps, spent, limit) => {
      const passed = pointsPassed(ps, spent, limit)
      expect(passed).toEqual(ps.slice(0, passed.length))
      for (const p of ps) expect(passed.includes(p)).toBe(spent * 100n >= BigInt(p) * limit)
    }))
  })

  it("a limit reached: the account's targets the account, a key's its key id", () => {
    expect(limitReachedAlert("account", "2026-11", 5n)).toMatchObject({ kind: "monthly_limit_reached", target: "account", point: 0 })
    expect(limitReachedAlert("key:key_1", "2026-11", 5n)).toMatchObject({ kind: "key_monthly_limit_reached", target: "key_1", point: 0 })
  })

  it("the mail names what happened, the account and where alerts are listed", () => {
    const draft = orgSpendAlert("2026-11", 90, 9_000_000n, 10_000_000n)
    const mail = alertMail("a@b.test", {
      ...draft, id: "alrt_1", account_id: "acct_1", seen: false, created_at: "2026-11-23T00:00:00.000Z"
    })
    expect(mail).toMatchObject({ to: "a@b.test", subject: "Model Platform: Spend alert" })
    expect(mail.text).toContain("passed 90% of the monthly limit: 9 of 10 credits")
    expect(mail.text).toContain("acct_1")
  })
})

describe("the test processor's saved cards", () => {
  const details = (number: string, exp_year = 2099) => ({ number, exp_month: 12, exp_year, cvc: "123" })

  it("approved test cards and 0341 save; declining, invalid and real cards do not", () => {
    expect(saveTestCard(details("4242424242424242"), NOW)).toEqual({ _tag: "Saved", last4: "4242", brand: "Visa" })
    expect(saveTestCard(details("4000 0000 0000 0341"), NOW)).toEqual({ _tag: "Saved", last4: "0341", brand: "Visa" })
    expect(saveTestCard(details("4000000000000002"), NOW)).toMatchObject({ _tag: "Declined", reason: "card_declined" })
    expect(saveTestCard(details("4242424242424241"), NOW)).toMatchObject({ _tag: "Declined", reason: "incorrect_number" })
    expect(saveTestCard({ ...details("4000000000000341"), cvc: "1" }, NOW)).toMatchObject({ _tag: "Declined", reason: "incorrect_cvc" })
  })

  it("a saved card's charge: approved for 4242, declined for 0341 every time, expired past its month", () => {
    expect(chargeSavedTestCard("pm_test_4242_122099_abc", NOW)).toEqual({ _tag: "Approved" })
    expect(chargeSavedTestCard("pm_test_0341_122099_abc", NOW)).toMatchObject({ _tag: "Declined", reason: "card_declined" })
    expect(chargeSavedTestCard("pm_test_4242_102026_abc", NOW)).toMatchObject({ _tag: "Declined", reason: "expired_card" })
    expect(chargeSavedTestCard("pm_test_4242_112026_abc", NOW)).toEqual({ _tag: "Approved" })
    expect(chargeSavedTestCard("pm_live_123", NOW)).toMatchObject({ _tag: "Declined", reason: "card_declined" })
  })
})
