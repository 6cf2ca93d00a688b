/**
 * The deposit watcher of the "evm" stablecoin rail (docs/payments.md "Stablecoin on an EVM
 * chain"): one `pass` reads each accepted token's transfers to the platform's deposit addresses
 * and pays orders through `Orders.recordDeposit` once the transfers are confirmed. Any number of
 * passes may run at once, in one process or several (Node runs them on a timer, Lambda on a
 * schedule): every step that must happen once is a store operation (DepositWatchStore).
 *
 * A pass, for each (chain, token) of the catalogue's options:
 * 1. reads the chain's head, then the chain's watched addresses (in that order: an address handed
 *    out after the head was read cannot have a transfer in a block at or below that head);
 * 2. scans the token's Transfer logs to those addresses from the cursor's next block to the head
 *    (at most max_blocks_per_pass), keeping each once by (chain, tx hash, log index) with its block;
 * 3. re-checks every unapplied transfer's block hash: a block that left the chain (a reorg) drops
 *    its transfers, which a later scan finds again wherever they were mined again; a transfer whose
 *    block is still there and has the required confirmations is applied: handed to
 *    Orders.recordDeposit (which records it once, as counted, late or wrong_asset, and pays the
 *    order when its counted deposits cover it: exact, short then topped up, or in excess), then
 *    marked applied;
 * 4. moves the cursor forward to the last block that is confirmed, scanned, and below every block
 *    a reorg just dropped, so those blocks are scanned again.
 */
import { Clock, Context, Duration, Effect, Layer } from "effect"
import { Catalogue } from "../catalogue/Catalogue.ts"
import { ChainReader, type ChainUnavailable } from "./ChainReader.ts"
import { DepositWatchStore, type StoredTransfer } from "./DepositWatchStore.ts"
import {
  DEFAULT_MAX_BLOCKS_PER_PASS,
  DEFAULT_WATCH_DAYS,
  type EvmChain,
  type StablecoinOption
} from "../catalogue/StablecoinConfig.ts"
import * as Time from "../kernel/Time.ts"
import { repeatInBackground } from "../kernel/BackgroundJobs.ts"
import { formatUnits } from "./OrderRules.ts"
import { Orders } from "./OrderService.ts"

const DAY_MS = 24 * 60 * 60 * 1000

/** How many blocks hold a block, itself included, when the chain's newest is `head`. */
export const confirmationsOf = (head: number, block: number): number => Math.max(0, head - block + 1)

/** The id a chain transfer is recorded under (unique per chain): one transaction may carry several. */
export const transferId = (txHash: string, logIndex: number): string => `${txHash}:${logIndex}`

/**
 * The blocks a pass scans: from the cursor's next (or the configured start, or the newest
 * confirmed block on a first pass) to the head, at most `maxBlocks`; undefined when there is none.
 */
export const scanRange = (
  cursor: number | undefined,
  head: number,
  chain: Pick<EvmChain, "confirmations" | "start_block" | "max_blocks_per_pass">
): { readonly from: number; readonly to: number } | undefined => {
  const from = cursor !== undefined ? cursor + 1 : chain.start_block ?? Math.max(0, head - chain.confirmations + 1)
  const to = Math.min(head, from + (chain.max_blocks_per_pass ?? DEFAULT_MAX_BLOCKS_PER_PASS) - 1)
  return from <= to ? { from, to } : undefined
}

/** What one pass did for one (chain, token). */
export interface WatchReport {
  readonly chain: string
  readonly token: string
  readonly head: number | null
  readonly scanned: { readonly from: number; readonly to: number } | null
  /** Transfers seen for the first time, or seen in another block than before. */
  readonly seen: number
  /** Confirmed, handed to Orders.recordDeposit and marked applied by this pass. */
  readonly applied: number
  /** Dropped by a reorg. */
  readonly dropped: number
  /** Seen, still waiting for confirmations. */
  readonly awaiting: number
  /** The cursor after the pass. */
  readonly cursor: number | null
  /** Why the pass stopped early for this token (the chain unreachable): the next pass tries again. */
  readonly error: string | null
}

export interface DepositWatchLoopOptions {
  readonly intervalMs: number
}

/** A pass every 15 s: a few blocks on most chains, and well within providers' rate limits. */
export const defaultDepositWatchLoopOptions: DepositWatchLoopOptions = { intervalMs: 15_000 }

export class DepositWatcher extends Context.Service<DepositWatcher, {
  /**
   * One pass over every accepted token. A chain that cannot be reached is in its token's report
   * (and logged); a store failure is a defect, as everywhere: the next pass starts over.
   */
  readonly pass: Effect.Effect<ReadonlyArray<WatchReport>>
}>()("@model-platform/core/payments/DepositWatcher") {
  static readonly layer: Layer.Layer<DepositWatcher, never, Catalogue | ChainReader | DepositWatchStore | Orders> =
    Layer.effect(DepositWatcher, Effect.suspend(() => makeWatcher))

  /**
   * Passes in a background fiber every `intervalMs` for as long as the layer lives, the first at
   * once (the Node server; Lambda runs one pass per scheduled invocation). A failed pass is logged,
   * never fatal.
   */
  static readonly loop = (options: Partial<DepositWatchLoopOptions> = {}): Layer.Layer<never, never, DepositWatcher> => {
    const { intervalMs } = { ...defaultDepositWatchLoopOptions, ...options }
    return Layer.effectDiscard(Effect.gen(function*() {
      const watcher = yield* DepositWatcher
      const once = watcher.pass.pipe(
        Effect.asVoid,
        Effect.catchCause((cause) => Effect.logWarning("deposit watcher pass failed; retrying later", cause))
      )
      yield* repeatInBackground(once, Duration.millis(intervalMs))
    }))
  }
}

const makeWatcher = Effect.gen(function*() {
  const catalogue = yield* Catalogue
  const reader = yield* ChainReader
  const store = yield* DepositWatchStore
  const orders = yield* Orders
  const stablecoin = catalogue.config.payments.stablecoin

  const watchOption = Effect.fnUntraced(function*(option: StablecoinOption, chain: EvmChain) {
    const report = { chain: option.chain, token: option.token, seen: 0, applied: 0, dropped: 0, awaiting: 0 }
    const head = yield* reader.head(option.chain)
    const now = yield* Clock.currentTimeMillis
    const since = Time.toTimestamp(now - (chain.watch_days ?? DEFAULT_WATCH_DAYS) * DAY_MS)
    const addresses = (yield* store.watchedAddresses(option.chain, since)).map((a) => a.address)
    const cursor = yield* store.cursor(option.chain, option.token)
    const range = scanRange(cursor, head, chain)
    if (range !== undefined && addresses.length > 0 && option.contract !== undefined) {
      const logs = yield* reader.transfers({ chain: option.chain, contract: option.contract, to: addresses, fromBlock: range.from, toBlock: range.to })
      for (const log of logs) {
        if (log.amount <= 0n) continue // a zero transfer pays nothing and owes nothing back
        const saved = yield* store.saveTransfer({ ...log, chain: option.chain, token: option.token })
        if (saved !== "unchanged") report.seen++
      }
    }

    const hashes = new Map<number, string | undefined>()
    const canonical = Effect.fnUntraced(function*(block: number) {
      if (!hashes.has(block)) hashes.set(block, yield* reader.blockHash(option.chain, block))
      return hashes.get(block)
    })
    let lowestDropped = Number.POSITIVE_INFINITY
    for (const transfer of yield* store.unapplied(option.chain, option.token)) {
      if ((yield* canonical(transfer.block_number)) !== transfer.block_hash) {
        if (yield* store.dropTransfer(transfer.chain, transfer.tx_hash, transfer.log_index, transfer.block_hash)) report.dropped++
        lowestDropped = Math.min(lowestDropped, transfer.block_number)
      } else if (confirmationsOf(head, transfer.block_number) >= chain.confirmations) {
        if (yield* apply(transfer, option)) report.applied++
      } else {
        report.awaiting++
      }
    }

    const confirmed = head - chain.confirmations + 1
    const target = Math.min(range?.to ?? -1, confirmed, lowestDropped - 1)
    const after = target >= 0 && (cursor === undefined || target > cursor)
      ? yield* store.advanceCursor(option.chain, option.token, target)
      : cursor
    if (report.applied > 0 || report.dropped > 0) {
      yield* Effect.logInfo("deposit watcher", { ...report, head, cursor: after ?? null })
    }
    return { ...report, head, scanned: range ?? null, cursor: after ?? null, error: null } satisfies WatchReport
  })

  /**
   * A confirmed transfer to its order (once: recordDeposit keeps one per (chain, id)), then marked
   * applied; true for the one pass that marked it (another may have raced this one to it).
   */
  const apply = Effect.fnUntraced(function*(transfer: StoredTransfer, option: StablecoinOption) {
    const result = yield* orders.recordDeposit({
      tx: transferId(transfer.tx_hash, transfer.log_index),
      chain: transfer.chain,
      token: transfer.token,
      to: transfer.to,
      amount: formatUnits(transfer.amount, option.decimals),
      at: transfer.at
    }).pipe(Effect.orDie)
    // Owed back: the whole transfer (late, wrong asset, no order), or the excess it paid over.
    const owed = result.order?.refund_due
    if (result.recorded && (result.outcome !== "counted" || (owed !== undefined && /[1-9]/.test(owed)))) {
      yield* Effect.logWarning("stablecoin deposit owed back", {
        outcome: result.outcome,
        refund_due: owed ?? null,
        chain: transfer.chain,
        token: transfer.token,
        tx: transfer.tx_hash,
        log_index: transfer.log_index,
        to: transfer.to,
        amount: formatUnits(transfer.amount, option.decimals),
        order_id: result.order?.order_id ?? null
      })
    }
    return yield* store.markApplied(transfer.chain, transfer.tx_hash, transfer.log_index, transfer.block_hash)
  })

  const failed = (option: StablecoinOption, error: ChainUnavailable): WatchReport => ({
    chain: option.chain,
    token: option.token,
    head: null,
    scanned: null,
    seen: 0,
    applied: 0,
    dropped: 0,
    awaiting: 0,
    cursor: null,
    error: `${error.chain}: ${error.reason}`
  })

  const pass = Effect.gen(function*() {
    if (stablecoin === null || stablecoin.processor !== "evm") return []
    return yield* Effect.forEach(stablecoin.options, (option) => {
      const chain = stablecoin.evm?.[option.chain]
      if (chain === undefined) return Effect.die(new Error(`no payments.stablecoin.evm["${option.chain}"]`))
      return watchOption(option, chain).pipe(
        Effect.catchTag("ChainUnavailable", (error) =>
          Effect.as(Effect.logWarning("deposit watcher: chain unavailable", { chain: error.chain, reason: error.reason }), failed(option, error)))
      )
    })
  }).pipe(Effect.withSpan("DepositWatcher.pass"))

  return DepositWatcher.of({ pass })
})
