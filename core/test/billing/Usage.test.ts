/**
 * The rules of usage reports that need no store: which days a query asks for (billing/Usage.ts)
 * and the CSV's text (billing/UsageCsv.ts): exact credits, RFC 4180 quoting that a reader undoes,
 * the formula guard.
 */
import { describe, expect, it } from "@effect/vitest"
import { Result } from "effect"
import * as fc from "fast-check"
import { MAX_USAGE_DAYS, usageCsvFilename, usageRange } from "../../src/billing/Usage.ts"
import { creditsText, csvField, csvText, parseCsv, usageGroupLine } from "../../src/billing/UsageCsv.ts"
import { microToCredits } from "../../src/kernel/Money.ts"

const range = (query: Parameters<typeof usageRange>[0], today = "2026-03-17") => {
  const result = usageRange(query, today)
  return Result.isSuccess(result) ? result.success : { reason: result.failure.reason, message: result.failure.message }
}

describe("usageRange", () => {
  it("defaults: the first day of this month to today", () => {
    expect(range({})).toEqual({ from: "2026-03-01", to: "2026-03-17" })
    expect(range({}, "2026-03-01")).toEqual({ from: "2026-03-01", to: "2026-03-01" })
  })
  it("from alone runs to today; to alone starts on its month's first day; both included", () => {
    expect(range({ from: "2026-02-10" })).toEqual({ from: "2026-02-10", to: "2026-03-17" })
    expect(range({ to: "2025-12-31" })).toEqual({ from: "2025-12-01", to: "2025-12-31" })
    expect(range({ from: "2026-01-05", to: "2026-01-05" })).toEqual({ from: "2026-01-05", to: "2026-01-05" })
  })
  it("month: its first to its last day, leap years included", () => {
    expect(range({ month: "2024-02" })).toEqual({ from: "2024-02-01", to: "2024-02-29" })
    expect(range({ month: "2025-02" })).toEqual({ from: "2025-02-01", to: "2025-02-28" })
    expect(range({ month: "2025-12" })).toEqual({ from: "2025-12-01", to: "2025-12-31" })
  })
  it("refusals name the field", () => {
    expect(range({ month: "2026-01", from: "2026-01-01" })).toMatchObject({ reason: "usage_range_invalid", message: expect.stringContaining("\"month\"") })
    expect(range({ month: "2026-01", to: "2026-01-31" })).toMatchObject({ message: expect.stringContaining("\"month\"") })
    expect(range({ from: "2026-03-18" })).toMatchObject({ message: expect.stringContaining("\"from\"") })
    expect(range({ from: "2026-02-02", to: "2026-02-01" })).toMatchObject({ message: expect.stringContaining("\"from\"") })
    expect(range({ from: "2024-01-01", to: "2025-01-01" })).toMatchObject({ message: expect.stringContaining("\"to\"") })
  })
  it(`at most ${MAX_USAGE_DAYS} days`, () => {
    expect(range({ from: "2024-01-01", to: "2024-12-31" })).toEqual({ from: "2024-01-01", to: "2024-12-31" })
    expect(range({ from: "2025-01-01", to: "2026-01-02" })).toMatchObject({ reason: "usage_range_invalid" })
  })
  it("file names", () => {
    expect(usageCsvFilename({ from: "2026-01-01", to: "2026-01-31" }, undefined)).toBe("usage-2026-01-01-2026-01-31.csv")
    expect(usageCsvFilename({ from: "2026-01-01", to: "2026-01-31" }, "model")).toBe("usage-by-model-2026-01-01-2026-01-31.csv")
  })
})

describe("usage CSV text", () => {
  it("credits: exact decimals of micro-credits, the number JSON shows", () => {
    expect([0n, 1n, 1_500n, 1_000_000n, 1_234_567n, 10n ** 30n + 1n].map(creditsText))
      .toEqual(["0", "0.000001", "0.0015", "1", "1.234567", "1000000000000000000000000.000001"])
    fc.assert(fc.property(fc.bigInt({ min: 0n, max: 2n ** 53n }), (micro) => {
      expect(Number(creditsText(micro))).toBe(microToCredits(micro))
    }))
  })
  it("quotes a field with a comma, quote, CR or LF, doubling quotes; leaves others as they are", () => {
    expect(["plain", "a,b", "say \"hi\"", "line\nbreak", "cr\rhere", ""].map(csvField))
      .toEqual(["plain", "\"a,b\"", "\"say \"\"hi\"\"\"", "\"line\nbreak\"", "\"cr\rhere\"", ""])
  })
  it("guards text that a spreadsheet would run as a formula", () => {
    expect(["=SUM(A1)", "+1", "-2", "@cmd", "\tx", "\rx", "safe=1", "'quoted"].map(csvText))
      .toEqual(["'=SUM(A1)", "'+1", "'-2", "'@cmd", "'\tx", "\"'\rx\"", "safe=1", "'quoted"])
    expect(usageGroupLine({ key: "k", label: "=HYPERLINK(\"x\",\"y\")", calls: 2n, list_credits: 3n, credits: 0n }))
      .toBe("k,\"'=HYPERLINK(\"\"x\"\",\"\"y\"\")\",2,0.000003,0\r\n")
  })
  it("property: a reader gets every field back", () => {
    const text = fc.string({ unit: fc.constantFrom("a", "é", ",", "\"", "\r", "\n", " ") })
    const rowsArb = fc.array(fc.array(text, { minLength: 1, maxLength: 5 }), { minLength: 1, maxLength: 5 })
    fc.assert(fc.property(rowsArb, (rows) => {
      expect(parseCsv(rows.map((row) => `${row.map(csvField).join(",")}\r\n`).join(""))).toEqual(rows)
    }))
  })
})
