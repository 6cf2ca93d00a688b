/**
 * One rule for the usage tier (issue 10, finding 10): the rpm the gateway enforces (rpmAt over the
 * table it orders once) equals the rpm GET /billing shows (usageTierFor), for any tier table and
 * any purchased credits, and both follow the rule of billing/Tiers.ts.
 */
import { describe, expect, it } from "@effect/vitest"
import * as fc from "fast-check"
import { type TierConfig, DEFAULT_RPM, monthlyLimitAt, rpmAt, thresholdOf, tierTable } from "../../src/billing/Tiers.ts"
import { microToCredits } from "../../src/kernel/Money.ts"
import { usageTierFor } from "../../src/billing/Summary.ts"

const credits = fc.oneof(
  fc.integer({ min: 0, max: 1_000_000 }),
  fc.double({ min: 0, max: 1e6, noNaN: true }), // more than 6 decimals: rounded up
  fc.constantFrom(0, 0.0000005, 1e21, 1e300, Infinity, Number.NaN) // beyond creditsToMicro, or never reached
)
const tier: fc.Arbitrary<TierConfig> = fc.record({
  tier: fc.nat(10),
  name: fc.string({ maxLength: 8 }),
  purchased_credits: credits,
  rpm: fc.integer({ min: 1, max: 100_000 }),
  monthly_limit_credits: fc.integer({ min: 0, max: 1_000_000 })
})
/** Any table: any order, ties, thresholds that are not whole micro-credits, none at 0. */
const table = fc.array(tier, { maxLength: 6 })
/** Purchased micro-credits, near the interesting values too. */
const purchased = fc.oneof(
  fc.bigInt({ min: 0n, max: 2_000_000_000_000n }),
  fc.constantFrom(0n, 1n, 499_999n, 500_000n, 1_000_000n, 10n ** 27n, 10n ** 28n)
)

describe("usage tiers: one rule", () => {
  it("the gateway's rpm equals the summary's rpm for any tier table and any purchased credits", () => {
    fc.assert(
      fc.property(table, purchased, (tiers, p) => {
        expect(rpmAt(tierTable(tiers), p)).toBe(usageTierFor(tiers, p).rpm)
      }),
      { numRuns: 2000 }
    )
  })

  it("the gateway's monthly limit (the account budget's default) equals the summary's, exactly", () => {
    fc.assert(
      fc.property(table, purchased, (tiers, p) => {
        const limit = monthlyLimitAt(tierTable(tiers), p)
        const shown = usageTierFor(tiers, p)
        expect(limit === null ? 0 : microToCredits(limit)).toBe(shown.monthly_limit_credits)
      }),
      { numRuns: 2000 }
    )
  })

  it("the rule: the highest tier reached (by threshold, ties in listed order), else the lowest; DEFAULT_RPM without tiers", () => {
    fc.assert(
      fc.property(table, purchased, (tiers, p) => {
        const shown = usageTierFor(tiers, p)
        if (tiers.length === 0) {
          expect(shown.rpm).toBe(DEFAULT_RPM)
          return
        }
        const keyed = tiers.map((t, i) => ({ t, i, th: thresholdOf(t.purchased_credits) }))
        const reached = keyed.filter((k) => k.th !== undefined && k.th <= p)
        const expected = reached.length > 0
          ? reached.reduce((best, k) => (k.th! > best.th! || (k.th === best.th && k.i > best.i) ? k : best)).t
          // none reached: the lowest threshold (never-reached ones last), first listed among ties
          : keyed.reduce((low, k) =>
            low.th === undefined ? (k.th === undefined ? low : k) : k.th !== undefined && k.th < low.th ? k : low
          ).t
        expect(shown.rpm).toBe(expected.rpm)
        expect(shown.tier).toBe(expected.tier)
      }),
      { numRuns: 2000 }
    )
  })

  it("a threshold that is not a whole micro-credit is rounded up; one that is not finite is never reached", () => {
    expect(thresholdOf(0.0000005)).toBe(1n)
    expect(thresholdOf(1e21)).toBe(10n ** 27n)
    expect(thresholdOf(Infinity)).toBeUndefined()
    const tiers: ReadonlyArray<TierConfig> = [
      { tier: 0, name: "a", purchased_credits: 0, rpm: 3, monthly_limit_credits: 0 },
      { tier: 1, name: "b", purchased_credits: 1e21, rpm: 9, monthly_limit_credits: 0 }
    ]
    // The gateway used to read a threshold it could not convert as 0, so it was reached at once.
    expect(rpmAt(tierTable(tiers), 0n)).toBe(3)
    expect(usageTierFor(tiers, 0n)).toMatchObject({ tier: 0, rpm: 3, next: { tier: 1 } })
  })
})
