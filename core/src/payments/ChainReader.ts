/**
 * Port: reading EVM chains, for the deposit watcher (core/src/payments/DepositWatcher.ts,
 * docs/payments.md "Stablecoin on an EVM chain"). The shells give one over each chain's JSON-RPC
 * endpoint (adapters/evm/src/ViemChainReader.ts); tests may give a chain of their own.
 *
 * Every answer is what the chain's node holds when asked: after a reorg the same block number may
 * have another hash, and a transfer seen before may be gone.
 */
import { Context, type Effect, Schema } from "effect"
import type { Timestamp } from "../kernel/Time.ts"

/** A `Transfer(from, to, value)` log of a token contract. */
export interface TransferLog {
  readonly tx_hash: string
  readonly log_index: number
  readonly block_number: number
  readonly block_hash: string
  /** The receiving address, EIP-55 checksummed as the watched addresses are. */
  readonly to: string
  /** Base units. */
  readonly amount: bigint
  /** The block's time. */
  readonly at: Timestamp
}

export interface TransferQuery {
  readonly chain: string
  /** The token contract. */
  readonly contract: string
  /** Only transfers to these addresses. */
  readonly to: ReadonlyArray<string>
  /** Both included. */
  readonly fromBlock: number
  readonly toBlock: number
}

/** The chain's node could not be reached or gave no usable answer: the pass stops, the next tries again. */
export class ChainUnavailable extends Schema.TaggedError<ChainUnavailable>()("ChainUnavailable", {
  chain: Schema.String,
  reason: Schema.String
}) {}

export class ChainReader extends Context.Service<ChainReader, {
  /** The newest block's number. */
  readonly head: (chain: string) => Effect.Effect<number, ChainUnavailable>
  /** The token's transfers to the addresses in the blocks, lowest block and log first. */
  readonly transfers: (query: TransferQuery) => Effect.Effect<ReadonlyArray<TransferLog>, ChainUnavailable>
  /** The hash of the chain's block at that number now, undefined when the chain is shorter. */
  readonly blockHash: (chain: string, block: number) => Effect.Effect<string | undefined, ChainUnavailable>
}>()("@model-platform/core/payments/ChainReader") {}
