/**
 * A model EVM chain in memory (the ChainReader port, core/src/payments/ChainReader.ts) for properties
 * that need thousands of chains: one token contract, blocks of transfers, mining, and reorgs that
 * replace the newest blocks, re-mining their transfers (same tx hashes, new blocks) or dropping
 * them. The real chain is tested on anvil (adapters/evm); this one is for interleavings.
 */
import { Effect, Layer } from "effect"
import { ChainReader, type TransferLog } from "@model-platform/core/payments"
import { toTimestamp } from "@model-platform/core/kernel"

interface Block {
  readonly hash: string
  readonly transfers: ReadonlyArray<{ readonly tx_hash: string; readonly to: string; readonly amount: bigint }>
}

const hex = (bytes: number) => Array.from(crypto.getRandomValues(new Uint8Array(bytes)), (b) => b.toString(16).padStart(2, "0")).join("")

export const makeFakeChain = (name: string, contract: string) => {
  const blocks: Array<Block> = [{ hash: `0x${hex(32)}`, transfers: [] }]
  const T0 = Date.now()
  const logsOf = (number: number): ReadonlyArray<TransferLog> =>
    blocks[number]!.transfers.map((t, i) => ({
      tx_hash: t.tx_hash,
      log_index: i,
      block_number: number,
      block_hash: blocks[number]!.hash,
      to: t.to,
      amount: t.amount,
      at: toTimestamp(T0 + number * 1000)
    }))
  const newBlock = (transfers: Block["transfers"] = []) => blocks.push({ hash: `0x${hex(32)}`, transfers })

  const reader = ChainReader.of({
    head: () => Effect.sync(() => blocks.length - 1),
    blockHash: (_chain, number) => Effect.sync(() => blocks[number]?.hash),
    transfers: (query) =>
      Effect.sync(() => {
        if (query.chain !== name || query.contract !== contract) return []
        const to = new Set(query.to)
        const found: Array<TransferLog> = []
        for (let n = query.fromBlock; n <= Math.min(query.toBlock, blocks.length - 1); n++) {
          found.push(...logsOf(n).filter((log) => to.has(log.to)))
        }
        return found
      })
  })

  return {
    layer: Layer.succeed(ChainReader, reader),
    /** A new block holding one transfer; its tx hash. */
    send: (to: string, amount: bigint): string => {
      const tx_hash = `0x${hex(32)}`
      newBlock([{ tx_hash, to, amount }])
      return tx_hash
    },
    mine: (n: number) => {
      for (let i = 0; i < n; i++) newBlock()
    },
    /** The newest `depth` blocks replaced by as many new ones; their transfers in the first (remine) or gone. */
    reorg: (wanted: number, remine: boolean) => {
      // Never the genesis block.
      const depth = Math.min(wanted, blocks.length - 1)
      if (depth === 0) return
      const gone = blocks.splice(blocks.length - depth, depth)
      const transfers = remine ? gone.flatMap((b) => b.transfers) : []
      newBlock(transfers)
      for (let i = 1; i < gone.length; i++) newBlock()
    },
    /** The transfers on the chain now. */
    canonical: () => blocks.flatMap((b) => b.transfers)
  }
}
