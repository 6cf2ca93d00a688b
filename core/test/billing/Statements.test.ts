/** The statement's rule (billing/Statements.ts): figures, payments, the CSV, and month arithmetic. */
import { describe, expect, it } from "vitest"
import { parseCsv } from "../../src/billing/UsageCsv.ts"
import { activeMonths, lastDayOf, previousMonth, statementCsv, statementJson, statementOf } from "../../src/billing/Statements.ts"
import type { ReceiptRecord } from "../../src/payments/OrderStore.ts"
import type { Timestamp } from "../../src/kernel/Time.ts"

const receipt = (id: string, paid_at: string, cents: bigint, credits: bigint): ReceiptRecord => ({
  id,
  account_id: "acct_1",
  order_id: `order_${id}`,
  kind: "credits",
  title: `=${id}, "top-up"`,
  paid_at: paid_at as Timestamp,
  amount_cents: cents,
  currency: "usd",
  credits,
  paid_with: "card",
  auto_reload: false,
  counts_toward_tier: true
})
const group = (key: string, credits: bigint, calls = 1n) => ({
  key,
  calls,
  list_credits: credits,
  credits,
  from_allowance: 0n,
  from_trial: 0n
})

describe("statements", () => {
  const sources = {
    credits: [
      { month: "2025-01", type: "credit_added" as const, amount: 10_000_000n },
      { month: "2025-02", type: "credit_added" as const, amount: 5_000_000n },
      { month: "2025-02", type: "plan_credit_granted" as const, amount: 1_000_000n },
      { month: "2025-03", type: "credit_added" as const, amount: 7n }
    ],
    usageByDay: [group("2025-01-31", 2_000_000n), group("2025-02-01", 999n)],
    usageByService: [group("chat", 1_000n, 3n), group("gone", 5n), group("embeddings", 2_000n)],
    receipts: [
      receipt("r2", "2025-02-28T23:59:59.999Z", 1_999n, 5_000_000n),
      receipt("r1", "2025-02-01T00:00:00.000Z", 1n, 0n),
      receipt("r0", "2025-01-31T23:59:59.999Z", 1_000n, 10_000_000n)
    ]
  }
  const s = statementOf("2025-02", sources, new Map([["chat", "Chat"], ["embeddings", "Embeddings"]]))

  it("opens at what came before, adds the month's credits by kind, splits usage, closes exactly", () => {
    expect(s).toMatchObject({ opening: 8_000_000n, purchased: 5_000_000n, plan: 1_000_000n, used: 3_005n, other: 5n })
    expect(s.closing).toBe(8_000_000n + 6_000_000n - 3_005n)
    expect(s.byService.map((g) => g.key)).toEqual(["embeddings", "chat"])
  })

  it("payments are the month's receipts, oldest first, summed in cents", () => {
    expect(s.receipts.map((r) => r.id)).toEqual(["r1", "r2"])
    const json = statementJson(s)
    expect(json.payments_total_usd).toBe(20)
    expect(json.payments[1]).toMatchObject({ id: "r2", amount: { value: 19.99, currency: "usd", text: "$19.99" }, credits: 5 })
    expect(json.closing_credits).toBe(13.996995)
  })

  it("the CSV: payments quoted and guarded, USD with two decimals", () => {
    const rows = parseCsv(statementCsv(s))
    expect(rows.at(-3)).toEqual(["payment", "r1", "'=r1, \"top-up\"", "", "", "0", "0.01"])
    expect(rows.at(-1)).toEqual(["payments_total", "", "Payments", "", "", "", "20.00"])
  })

  it("active months newest first; month arithmetic across years and leap days", () => {
    expect(activeMonths(sources.credits, [group("2024-12-31", 0n)], sources.receipts)).toEqual([
      "2025-03", "2025-02", "2025-01", "2024-12"
    ])
    expect(activeMonths([], [{ ...group("2024-11-01", 0n), calls: 0n }], [])).toEqual([])
    expect([lastDayOf("2024-02"), lastDayOf("2100-02"), lastDayOf("2000-02"), lastDayOf("2025-04"), lastDayOf("0001-12")])
      .toEqual(["2024-02-29", "2100-02-28", "2000-02-29", "2025-04-30", "0001-12-31"])
    expect([previousMonth("2025-01"), previousMonth("2025-10"), previousMonth("0001-01")]).toEqual(["2024-12", "2025-09", "0000-12"])
  })
})
