/**
 * Port: what the chain watchers of a real stablecoin rail keep (docs/payments.md "Stablecoin on an
 * EVM chain"): the next index of each extended public key, the deposit addresses derived from it
 * (address -> order, and its index, for sweeping), one cursor per (chain, token), and each
 * transfer seen on the chain with the block it was in, until it is applied to its order or a
 * reorg drops it. The rules (confirmations, reorgs, what a transfer pays) live in
 * core/src/payments/DepositWatcher.ts; a store applies what it is given, but the operations marked
 * ATOMIC hold between processes too, because several watchers may run at once:
 *
 * - `allocateIndex` answers each index of a key once, so two orders never share an address;
 * - `advanceCursor` only moves a cursor forward;
 * - `saveTransfer` keeps one transfer per (chain, tx hash, log index); `markApplied` and
 *   `dropTransfer` are conditional on the block hash the caller checked, and an applied transfer
 *   is never dropped nor moved.
 *
 * Amounts are bigints in the token's base units; block numbers and log indexes are integers.
 * Broken input (an address kept twice, a non-positive amount) is a defect, as in SQL.
 */
import { Context, type Effect } from "effect"
import type { Timestamp } from "../kernel/Time.ts"
import type { OrderId } from "../kernel/Ids.ts"

/** A deposit address derived for one order. */
export interface WatchedAddress {
  /** As the chain writes it (EVM: EIP-55 checksummed). Unique. */
  readonly address: string
  readonly chain: string
  readonly token: string
  readonly order_id: OrderId
  /** The extended public key it was derived from (its identifier, never the key) and its index. */
  readonly key_id: string
  readonly index: number
  /** When it was handed out: it is watched from then on (DepositWatcher's watch window). */
  readonly opened_at: Timestamp
}

/** A token transfer to a watched address, as a block of the chain holds it. */
export interface SeenTransfer {
  readonly chain: string
  readonly token: string
  readonly tx_hash: string
  readonly log_index: number
  readonly block_number: number
  readonly block_hash: string
  /** The receiving address (a watched one). */
  readonly to: string
  /** Base units, positive. */
  readonly amount: bigint
  /** The block's time. */
  readonly at: Timestamp
}

export interface StoredTransfer extends SeenTransfer {
  /** Handed to Orders.recordDeposit once confirmed; an applied transfer never changes again. */
  readonly applied: boolean
}

/**
 * What saveTransfer did: `new`; `moved` (it was kept, unapplied, from another block: a reorg mined
 * it again, and the block is now this one); `unchanged` (kept with this block, or applied).
 */
export type SaveOutcome = "new" | "moved" | "unchanged"

export class DepositWatchStore extends Context.Service<DepositWatchStore, {
  // ---- addresses ----
  /** ATOMIC: the next unused index of `keyId`, from 0: each index is answered once, ever. */
  readonly allocateIndex: (keyId: string) => Effect.Effect<number>
  /** Keeps an address; one already kept is a defect. */
  readonly addAddress: (address: WatchedAddress) => Effect.Effect<void>
  /** The address as kept, if it is. */
  readonly getAddress: (address: string) => Effect.Effect<WatchedAddress | undefined>
  /**
   * The addresses of a chain opened at or after `since`, oldest first, whatever their token (a
   * transfer of another accepted token to one is recorded too, as owed back).
   */
  readonly watchedAddresses: (chain: string, since: Timestamp) => Effect.Effect<ReadonlyArray<WatchedAddress>>

  // ---- cursors ----
  /** The last block of (chain, token) whose transfers are all applied, or undefined before the first. */
  readonly cursor: (chain: string, token: string) => Effect.Effect<number | undefined>
  /** ATOMIC: the cursor becomes `block` unless it is already at or past it; answers it afterwards. */
  readonly advanceCursor: (chain: string, token: string, block: number) => Effect.Effect<number>

  // ---- transfers ----
  /**
   * ATOMIC: keeps the transfer unless (chain, tx_hash, log_index) is kept; a kept unapplied one
   * seen in another block takes this block (number, hash, time) and is `moved`.
   */
  readonly saveTransfer: (transfer: SeenTransfer) => Effect.Effect<SaveOutcome>
  /** The kept transfer, if any. */
  readonly getTransfer: (chain: string, txHash: string, logIndex: number) => Effect.Effect<StoredTransfer | undefined>
  /** The unapplied transfers of (chain, token), lowest block first. */
  readonly unapplied: (chain: string, token: string) => Effect.Effect<ReadonlyArray<StoredTransfer>>
  /** Every transfer kept to an address, applied or not, lowest block first. */
  readonly transfersTo: (address: string) => Effect.Effect<ReadonlyArray<StoredTransfer>>
  /**
   * ATOMIC, conditional: applied only while unapplied in block `blockHash`. true for the one call
   * that did it.
   */
  readonly markApplied: (chain: string, txHash: string, logIndex: number, blockHash: string) => Effect.Effect<boolean>
  /**
   * ATOMIC, conditional: forgets the transfer only while unapplied in block `blockHash` (the block
   * left the chain). true for the one call that did it.
   */
  readonly dropTransfer: (chain: string, txHash: string, logIndex: number, blockHash: string) => Effect.Effect<boolean>
}>()("@model-platform/core/payments/DepositWatchStore") {}
