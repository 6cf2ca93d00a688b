/** What a refund or a dispute takes back (payments/Reversals.ts), and the report checks of a processor's payment (CardCheckouts.ts). */
import { describe, expect, it } from "vitest"
import { reportMismatch } from "../../src/billing/CardCheckouts.ts"
import { reversalRef, reversedCredits } from "../../src/payments/Reversals.ts"

describe("Reversals", () => {
  const order = { credits: 25_000_000_000n, amount_cents: 2_500n }

  it("takes back the order's credits in proportion to the amount, rounded down to the micro-credit", () => {
    expect(reversedCredits(order, 2_500n)).toBe(25_000_000_000n)
    expect(reversedCredits(order, 1_250n)).toBe(12_500_000_000n)
    expect(reversedCredits({ credits: 10n, amount_cents: 3n }, 1n)).toBe(3n)
    expect(reversedCredits({ credits: 0n, amount_cents: 999n }, 999n)).toBe(0n)
  })

  it("a refund and a dispute of one payment are two references", () => {
    expect(reversalRef({ kind: "refund", reference: "re_1" })).toBe("refund:re_1")
    expect(reversalRef({ kind: "dispute", reference: "dp_1" })).not.toBe(reversalRef({ kind: "refund", reference: "dp_1" }))
  })
})

describe("CardCheckouts: a processor's report of a payment against the stored order", () => {
  const stored = { account_id: "acct_a", amount_cents: 2_500n, currency: "USD" }
  const paid = {
    _tag: "Paid" as const, session_id: "cs_1", order_id: "ord_1", account_id: "acct_a", amount_cents: 2_500n, currency: "USD",
    payment_id: "pi_1", paid_at: 0, saved_card: null
  }

  it("matches the order's account, amount and currency exactly, or says what differs", () => {
    expect(reportMismatch(stored, paid)).toBeUndefined()
    expect(reportMismatch(stored, { ...paid, account_id: "acct_b" })).toContain("acct_b")
    expect(reportMismatch(stored, { ...paid, amount_cents: 2_499n })).toContain("2499")
    expect(reportMismatch(stored, { ...paid, currency: "EUR" })).toContain("EUR")
  })
})
