/**
 * An agent's amounts at the boundary (docs/agents.md "Endpoints"): network-token caps as the API
 * shows them (decimal strings of tokens, at most 18 decimals) and as they are kept and sent to the
 * network (wei, 1 token = 10^18 wei); credit limits as the API shows them (numbers of credits) and
 * as they are kept (micro-credits, Money.ts). Exact integer arithmetic only, never floats; a cap
 * or limit that is unset is null (a token cap shown in `proposed` is "" when unset).
 */
import { creditsToMicro, MICRO_PER_CREDIT, microToCredits } from "../kernel/Money.ts"

export const TOKEN_DECIMALS = 18
export const WEI_PER_TOKEN = 10n ** BigInt(TOKEN_DECIMALS)

const TOKEN_PATTERN = /^(\d+)(?:\.(\d{1,18}))?$/

/** Exact wei of a decimal amount of tokens ("1.5" -> 1.5 * 10^18), or undefined when it is not one. */
export const parseTokens = (text: string): bigint | undefined => {
  const match = TOKEN_PATTERN.exec(text)
  if (match === null) return undefined
  const [, whole, fraction = ""] = match
  return BigInt(whole!) * WEI_PER_TOKEN + BigInt(fraction.padEnd(TOKEN_DECIMALS, "0"))
}

/** A whole number of wei as a decimal amount of tokens, without trailing zeros ("1.5", "0", "0.000000000000000001"). */
export const formatTokens = (wei: bigint): string => {
  const negative = wei < 0n
  const abs = negative ? -wei : wei
  const whole = abs / WEI_PER_TOKEN
  const fraction = (abs % WEI_PER_TOKEN).toString().padStart(TOKEN_DECIMALS, "0").replace(/0+$/, "")
  return `${negative ? "-" : ""}${whole}${fraction === "" ? "" : `.${fraction}`}`
}

/**
 * A token cap from a body (already checked by its schema: TokenAmountOrEmpty) in wei: null for
 * unset ("" or null). A malformed amount is a defect here: the body's schema refuses it first.
 */
export const tokenCapToWei = (cap: string | null): bigint | null => {
  if (cap === null || cap === "") return null
  const wei = parseTokens(cap)
  if (wei === undefined) throw new Error(`not a decimal amount of network tokens: ${JSON.stringify(cap)}`)
  return wei
}

/** A token cap kept in wei as `limits` shows it: a decimal string of tokens, null when unset. */
export const weiToTokenCap = (wei: bigint | null): string | null => wei === null ? null : formatTokens(wei)

/** A token cap kept in wei as `proposed` shows it: "" when unset. */
export const weiToProposedCap = (wei: bigint | null): string => wei === null ? "" : formatTokens(wei)

/** A wei amount as the account service answers it (a decimal string of an integer), null when unset. */
export const weiFromWire = (wei: string | null): bigint | null => {
  if (wei === null) return null
  if (!/^\d+$/.test(wei)) throw new Error(`not an integer amount of wei: ${JSON.stringify(wei)}`)
  return BigInt(wei)
}

/** A credit limit from a body (a number with at most 6 decimals, checked by its schema) in micro-credits. */
export const creditLimitToMicro = (credits: number | null): bigint | null => {
  if (credits === null) return null
  const micro = creditsToMicro(credits)
  if (micro === undefined) throw new Error(`not a whole number of micro-credits: ${credits}`)
  return micro
}

/**
 * A credit limit from an answer of the account service, which declares it only as a number: the
 * exact micro-credits when it has at most 6 decimals, else rounded down to whole micro-credits (a
 * limit is never loosened by rounding); null when unset, and for an amount that is not a finite,
 * non-negative number (nothing to enforce: as unset would loosen it, so such a limit is 0).
 */
export const approvedCreditLimitToMicro = (credits: number | null): bigint | null => {
  if (credits === null) return null
  if (!Number.isFinite(credits) || credits < 0) return 0n
  // A whole number beyond what its decimal text shows plainly (1e22): exact as an integer.
  if (Number.isInteger(credits)) return BigInt(credits) * MICRO_PER_CREDIT
  const exact = creditsToMicro(credits)
  if (exact !== undefined) return exact
  // More than 6 decimals: cut the decimal text after the sixth (toFixed(7) stays exact enough for
  // the whole part of any limit JSON can carry; the seventh digit is dropped, never rounded up).
  const text = credits.toFixed(7)
  return creditsToMicro(Number(text.slice(0, -1))) ?? 0n
}

/** A credit limit kept in micro-credits as the API shows it: a number of credits, null when unset. */
export const microToCreditLimit = (micro: bigint | null): number | null => micro === null ? null : microToCredits(micro)
