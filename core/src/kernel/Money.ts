/**
 * Money is exact (docs/architecture.md "Money"): credits are kept as integer micro-credits (1 credit = 1,000,000),
 * US dollars as integer cents. JSON shows credits as numbers; conversion happens here, at the
 * boundary, and refuses any amount that is not a whole number of micro-credits.
 */
import { Schema } from "effect"

export const MICRO_PER_CREDIT = 1_000_000n

/** Exact conversion of a decimal credit amount to micro-credits, or undefined when it is not exact. */
export const creditsToMicro = (credits: number): bigint | undefined => {
  if (!Number.isFinite(credits)) return undefined
  // Go through the shortest decimal text of the number, so 0.1 is exactly 100000 micro-credits.
  const match = /^(-?)(\d+)(?:\.(\d{1,6}))?$/.exec(String(credits))
  if (match === null) return undefined
  const [, sign, whole, frac = ""] = match
  const micro = BigInt(whole!) * MICRO_PER_CREDIT + BigInt(frac.padEnd(6, "0"))
  return sign === "-" ? -micro : micro
}

/** Micro-credits as the credit number JSON shows (the nearest double to the exact decimal). */
export const microToCredits = (micro: bigint): number => {
  const negative = micro < 0n
  const abs = negative ? -micro : micro
  const text = `${abs / MICRO_PER_CREDIT}.${(abs % MICRO_PER_CREDIT).toString().padStart(6, "0")}`
  return Number(negative ? `-${text}` : text)
}

/** A credit amount as JSON carries it: a finite number with at most 6 decimals. */
export const CreditAmount = Schema.Number.check(
  Schema.makeFilter((n: number) => creditsToMicro(n) !== undefined, {
    expected: "a number of credits with at most 6 decimals"
  })
)
