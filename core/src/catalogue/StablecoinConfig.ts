/**
 * The catalogue's `payments.stablecoin` (docs/payments.md, docs/catalogue.md): the rail
 * (`processor`), the assets a deposit may be made in (`options`), and, for the `"evm"` rail, how
 * each chain is watched (`evm`). Secrets are not in the catalogue: a chain names the environment
 * variables holding its RPC URL (which often carries a provider's key) and its extended public key.
 */
import { Schema } from "effect"

const PositiveInt = Schema.Int.check(Schema.isGreaterThanOrEqualTo(1))
const NonNegativeInt = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))

/** An EVM address: 0x and 40 hex digits (any case; EIP-55 checksums are not checked here). */
export const EVM_ADDRESS = /^0x[0-9a-fA-F]{40}$/

export const StablecoinOption = Schema.Struct({
  chain: Schema.String,
  token: Schema.String,
  decimals: PositiveInt,
  /** The token's contract on its chain: required by the "evm" rail, unused by "simulated". */
  contract: Schema.optionalKey(Schema.String)
})
export type StablecoinOption = typeof StablecoinOption.Type

/** Blocks scanned per pass at most, when the chain does not say (a provider's usual getLogs range). */
export const DEFAULT_MAX_BLOCKS_PER_PASS = 1_000
/** Days an address is watched after it was handed out, when the chain does not say. */
export const DEFAULT_WATCH_DAYS = 30

export const EvmChain = Schema.Struct({
  /**
   * How many blocks must hold a transfer's block, itself included, before it counts: 1 is "mined",
   * 12 means 11 blocks on top of it. A reorg shallower than this cannot undo a payment.
   */
  confirmations: PositiveInt,
  /** The environment variable holding the chain's JSON-RPC URL. */
  rpc_url_env: Schema.String,
  /** The environment variable holding the extended public key (xpub) deposit addresses come from. */
  xpub_env: Schema.String,
  /** Where the first pass starts when the chain has no cursor yet (default: near the head then). */
  start_block: Schema.optionalKey(NonNegativeInt),
  /** Blocks a pass scans at most (default DEFAULT_MAX_BLOCKS_PER_PASS); a watcher behind catches up over passes. */
  max_blocks_per_pass: Schema.optionalKey(PositiveInt),
  /** Days an address is watched after it was handed out (default DEFAULT_WATCH_DAYS). */
  watch_days: Schema.optionalKey(PositiveInt)
})
export type EvmChain = typeof EvmChain.Type

export const StablecoinConfig = Schema.Struct({
  /** "simulated" (the built-in simulated chain) or "evm" (ERC-20 tokens on EVM chains). */
  processor: Schema.String,
  options: Schema.Array(StablecoinOption),
  /** The "evm" rail: each chain of the options, by its name. */
  evm: Schema.optionalKey(Schema.Record(Schema.String, EvmChain))
})
export type StablecoinConfig = typeof StablecoinConfig.Type

/** Problems of a stablecoin configuration, for validateCatalogue; empty when it is consistent. */
export const stablecoinProblems = (stablecoin: StablecoinConfig | null): ReadonlyArray<string> => {
  if (stablecoin === null) return []
  const problems: Array<string> = []
  const seen = new Set<string>()
  for (const option of stablecoin.options) {
    const key = JSON.stringify([option.chain, option.token])
    if (seen.has(key)) problems.push(`stablecoin option ${option.token} on ${option.chain} appears twice`)
    seen.add(key)
  }
  if (stablecoin.processor !== "evm") return problems
  for (const option of stablecoin.options) {
    if (option.contract === undefined || !EVM_ADDRESS.test(option.contract)) {
      problems.push(`stablecoin option ${option.token} on ${option.chain} needs "contract": the token's address (0x and 40 hex digits)`)
    }
    if (stablecoin.evm?.[option.chain] === undefined) {
      problems.push(`stablecoin option ${option.token} on ${option.chain} needs payments.stablecoin.evm["${option.chain}"]`)
    }
  }
  return problems
}
