/** The rules of monthly limits (billing/Limits.ts): the month a call counts in, the claims, the tier bound. */
import { describe, expect, it } from "@effect/vitest"
import * as fc from "fast-check"
import { budgetClaims, keyBudget, limitProblem } from "../../src/billing/Limits.ts"
import { ACCOUNT_BUDGET } from "../../src/billing/Tiers.ts"
import { monthOf } from "../../src/kernel/Time.ts"
import { budgetClaimsProblem } from "../../src/ledger/LedgerStoreRules.ts"

describe("monthly limits: rules", () => {
  it("a call counts in the UTC month of its admission, to the millisecond", () => {
    expect(monthOf(Date.UTC(2026, 11, 31, 23, 59, 59, 999))).toBe("2026-12")
    expect(monthOf(Date.UTC(2027, 0, 1, 0, 0, 0, 0))).toBe("2027-01")
    expect(monthOf(Date.UTC(2028, 1, 29, 12))).toBe("2028-02")
    fc.assert(fc.property(fc.integer({ min: 0, max: Date.UTC(9999, 11, 31) }), (ms) => {
      const d = new Date(ms)
      expect(monthOf(ms)).toBe(`${String(d.getUTCFullYear()).padStart(4, "0")}-${String(d.getUTCMonth() + 1).padStart(2, "0")}`)
    }))
  })

  it("a priced call claims the account's budget at the tier's limit, then its key's without a default", () => {
    const claims = budgetClaims("key_abc", "2026-11", 1_000_000_000n)
    expect(claims).toEqual([
      { budget: ACCOUNT_BUDGET, month: "2026-11", default_limit: 1_000_000_000n },
      { budget: keyBudget("key_abc"), month: "2026-11", default_limit: null }
    ])
    expect(budgetClaimsProblem(claims)).toBeUndefined()
  })

  it("an own limit may be anything up to the tier's, never above; none is always fine", () => {
    expect(limitProblem(0n, 1_000n)).toBeUndefined()
    expect(limitProblem(1_000n, 1_000n)).toBeUndefined()
    expect(limitProblem(1_001n, 1_000n)).toContain("monthly_limit_credits")
    expect(limitProblem(null, 1_000n)).toBeUndefined()
    expect(limitProblem(10n ** 30n, null)).toBeUndefined()
  })
})
