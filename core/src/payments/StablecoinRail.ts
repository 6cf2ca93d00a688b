/**
 * Port: a stablecoin rail (docs/payments.md).
 *
 * - `depositAddress` gives an order its own address (and memo, for chains that need one). The
 *   service asks once per order and keeps the answer; every address is unique to one order.
 * - Deposits flow the other way: whatever watches the chain (the simulated chain of the test
 *   harness, or a real watcher) hands each transfer to `Orders.recordDeposit` as a `Transfer`, at
 *   least once. Replays are harmless: transfers are recorded once per (chain, tx).
 *
 * Amounts are exact decimal strings in token units with at most the token's decimals
 * ("25.000000" USDC); the service compares them as bigint base units, never as floats.
 *
 * `layerSimulated` is the built-in rail of the catalogue's `"simulated"` processor: it makes
 * random EVM-style addresses (20 bytes from the CSPRNG) and no memo. It does no I/O: the
 * simulated chain that produces transfers lives in adapters/test-harness/src/SimulatedChain.ts.
 * The `"evm"` processor's rail is the shell's (adapters/evm/src/EvmRail.ts: addresses derived
 * from an xpub); its transfers come from payments/DepositWatcher.ts, each with `tx` "<hash>:<log index>".
 */
import { Context, Effect, Layer } from "effect"
import { type OrderId, randomBytes } from "../kernel/Ids.ts"
import type { Timestamp } from "../kernel/Time.ts"

export interface DepositInstructions {
  readonly address: string
  readonly memo: string | null
}

/** A transfer seen on the rail. */
export interface Transfer {
  /** Transaction id, unique per chain. */
  readonly tx: string
  readonly chain: string
  readonly token: string
  /** The receiving address. */
  readonly to: string
  /** Exact decimal string in token units, e.g. "25.000000". */
  readonly amount: string
  /** When it happened on the chain. */
  readonly at: Timestamp
}

export class StablecoinRail extends Context.Service<StablecoinRail, {
  /** The rail's name, as the catalogue's payments.stablecoin.processor names it (e.g. "simulated"). */
  readonly processor: string
  /** A fresh address for an order's deposit on this chain and token. */
  readonly depositAddress: (orderId: OrderId, chain: string, token: string) => Effect.Effect<DepositInstructions>
}>()("@model-platform/core/payments/StablecoinRail") {
  /** The built-in simulated rail: a random 20-byte address per order, no memo. */
  static readonly layerSimulated: Layer.Layer<StablecoinRail> = Layer.succeed(StablecoinRail, {
    processor: "simulated",
    depositAddress: () =>
      Effect.map(randomBytes(20), (bytes) => ({
        address: "0x" + Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join(""),
        memo: null
      }))
  })
}
