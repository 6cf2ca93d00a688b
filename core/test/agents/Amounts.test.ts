/**
 * An agent's amounts at the boundary (core/src/agents/Amounts.ts): token decimal strings <-> wei
 * exactly (18 decimals, "" and null unset), credits <-> micro-credits.
 */
import { describe, expect, it } from "@effect/vitest"
import fc from "fast-check"
import {
  approvedCreditLimitToMicro,
  creditLimitToMicro,
  formatTokens,
  microToCreditLimit,
  parseTokens,
  tokenCapToWei,
  WEI_PER_TOKEN,
  weiFromWire,
  weiToProposedCap,
  weiToTokenCap
} from "../../src/agents/Amounts.ts"

describe("network-token amounts", () => {
  it("parses decimal token strings to exact wei", () => {
    expect(parseTokens("1")).toBe(WEI_PER_TOKEN)
    expect(parseTokens("1.5")).toBe(1_500_000_000_000_000_000n)
    expect(parseTokens("0.000000000000000001")).toBe(1n)
    expect(parseTokens("0")).toBe(0n)
    expect(parseTokens("123456789012345678901234567890.123456789012345678")).toBe(
      123456789012345678901234567890123456789012345678n
    )
    // 0.1 + 0.2 is exact in wei, as it never is in floats.
    expect(parseTokens("0.1")! + parseTokens("0.2")!).toBe(parseTokens("0.3"))
  })

  it("refuses what is not a decimal amount with at most 18 decimals", () => {
    for (const bad of ["", "-1", "1.", ".5", "1e18", "0x10", " 1", "1.0000000000000000001", "NaN"]) {
      expect(parseTokens(bad), bad).toBeUndefined()
    }
  })

  it("formats wei as tokens without trailing zeros", () => {
    expect(formatTokens(0n)).toBe("0")
    expect(formatTokens(1n)).toBe("0.000000000000000001")
    expect(formatTokens(1_500_000_000_000_000_000n)).toBe("1.5")
    expect(formatTokens(10n * WEI_PER_TOKEN)).toBe("10")
  })

  it("round-trips every wei amount exactly", () => {
    fc.assert(fc.property(fc.bigInt({ min: 0n, max: 10n ** 40n }), (wei) => {
      expect(parseTokens(formatTokens(wei))).toBe(wei)
    }))
  })

  it("round-trips every token string to its canonical form", () => {
    const decimal = fc.tuple(fc.bigInt({ min: 0n, max: 10n ** 24n }), fc.string({ unit: fc.constantFrom(..."0123456789"), minLength: 0, maxLength: 18 }))
      .map(([whole, fraction]) => fraction === "" ? `${whole}` : `${whole}.${fraction}`)
    fc.assert(fc.property(decimal, (text) => {
      const wei = parseTokens(text)!
      const canonical = text.includes(".") ? text.replace(/0+$/, "").replace(/\.$/, "") : text
      expect(formatTokens(wei)).toBe(canonical)
    }))
  })

  it("caps: \"\" and null are unset; limits show null, proposals show \"\"", () => {
    expect(tokenCapToWei(null)).toBeNull()
    expect(tokenCapToWei("")).toBeNull()
    expect(tokenCapToWei("2.25")).toBe(2_250_000_000_000_000_000n)
    expect(() => tokenCapToWei("abc")).toThrow()
    expect(weiToTokenCap(null)).toBeNull()
    expect(weiToTokenCap(2_250_000_000_000_000_000n)).toBe("2.25")
    expect(weiToProposedCap(null)).toBe("")
    expect(weiToProposedCap(1n)).toBe("0.000000000000000001")
  })

  it("reads wei as the account service answers it", () => {
    expect(weiFromWire(null)).toBeNull()
    expect(weiFromWire("1500000000000000000")).toBe(1_500_000_000_000_000_000n)
    expect(weiFromWire("99999999999999999999999999999")).toBe(99999999999999999999999999999n)
    expect(() => weiFromWire("1.5")).toThrow()
  })
})

describe("credit limits", () => {
  it("credits <-> micro-credits exactly; null unset", () => {
    expect(creditLimitToMicro(null)).toBeNull()
    expect(creditLimitToMicro(10)).toBe(10_000_000n)
    expect(creditLimitToMicro(0.1)).toBe(100_000n)
    expect(creditLimitToMicro(0.000001)).toBe(1n)
    expect(() => creditLimitToMicro(0.0000001)).toThrow()
    expect(microToCreditLimit(null)).toBeNull()
    expect(microToCreditLimit(100_000n)).toBe(0.1)
    expect(microToCreditLimit(12_345_678n)).toBe(12.345678)
  })

  it("round-trips every amount of at most 6 decimals", () => {
    fc.assert(fc.property(fc.bigInt({ min: 0n, max: 10n ** 15n }), (micro) => {
      expect(creditLimitToMicro(microToCreditLimit(micro))).toBe(micro)
    }))
  })

  it("an approved limit with more than 6 decimals is rounded down, never up", () => {
    expect(approvedCreditLimitToMicro(null)).toBeNull()
    expect(approvedCreditLimitToMicro(5)).toBe(5_000_000n)
    expect(approvedCreditLimitToMicro(1.0000009)).toBe(1_000_000n)
    expect(approvedCreditLimitToMicro(0.1234567)).toBe(123_456n)
    expect(approvedCreditLimitToMicro(1e22)).toBe(10n ** 22n * 1_000_000n)
    expect(approvedCreditLimitToMicro(-1)).toBe(0n)
    expect(approvedCreditLimitToMicro(Number.NaN)).toBe(0n)
  })
})
