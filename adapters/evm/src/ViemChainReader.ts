/**
 * The chain reader port (core/src/payments/ChainReader.ts) over each chain's JSON-RPC endpoint, with
 * viem. Nothing is cached (every pass must see reorgs); a failed or refused call is
 * ChainUnavailable, so the pass stops for that token and the next one tries again.
 *
 * Transfers are read with eth_getLogs on the token's `Transfer(address,address,uint256)` event,
 * filtered on the indexed `to` (at most ADDRESSES_PER_QUERY addresses a query, as providers cap
 * filter sizes); a log's time is its block's (`blockTimestamp` when the node gives it, else the
 * block read by its hash, so a time always belongs to the block the log came from).
 */
import { Effect, Layer } from "effect"
import { type Address, createPublicClient, getAddress, type Hash, http, parseAbiItem, type PublicClient } from "viem"
import { ChainReader, ChainUnavailable, type TransferLog } from "@model-platform/core/payments"
import { Time } from "@model-platform/core/kernel"

export const TRANSFER_EVENT = parseAbiItem("event Transfer(address indexed from, address indexed to, uint256 value)")

export const ADDRESSES_PER_QUERY = 100

const reasonOf = (error: unknown) =>
  error instanceof Error ? (error as { shortMessage?: string }).shortMessage ?? error.message : String(error)

export interface ChainEndpoint {
  /** The chain's JSON-RPC URL (it may carry a provider's key: never logged). */
  readonly rpcUrl: string
  /** Milliseconds an RPC call may take (default 10 s). */
  readonly timeoutMs?: number
}

/** The reader over the endpoint of each chain (by the catalogue's chain name). */
export const layer = (endpoints: ReadonlyMap<string, ChainEndpoint>): Layer.Layer<ChainReader> =>
  Layer.sync(ChainReader, () => {
    const clients = new Map<string, PublicClient>()
    for (const [chain, endpoint] of endpoints) {
      clients.set(chain, createPublicClient({ transport: http(endpoint.rpcUrl, { timeout: endpoint.timeoutMs ?? 10_000, retryCount: 1 }), cacheTime: 0 }))
    }

    const rpc = <A>(chain: string, f: (client: PublicClient) => Promise<A>) =>
      Effect.suspend(() => {
        const client = clients.get(chain)
        if (client === undefined) return Effect.fail(new ChainUnavailable({ chain, reason: "no RPC endpoint is configured for this chain" }))
        return Effect.tryPromise({ try: () => f(client), catch: (error) => new ChainUnavailable({ chain, reason: reasonOf(error) }) })
      })

    const head = (chain: string) => rpc(chain, (client) => client.getBlockNumber({ cacheTime: 0 })).pipe(Effect.map(Number))

    const blockHash = (chain: string, block: number) =>
      rpc(chain, async (client) => {
        // A block number past the head answers null (or BlockNotFoundError): the chain is shorter.
        const found = await client.getBlock({ blockNumber: BigInt(block) }).catch((error: unknown) => {
          if (error instanceof Error && error.name === "BlockNotFoundError") return undefined
          throw error
        })
        return found?.hash ?? undefined
      })

    const transfers = Effect.fn("ChainReader.transfers")(function*(query: {
      readonly chain: string
      readonly contract: string
      readonly to: ReadonlyArray<string>
      readonly fromBlock: number
      readonly toBlock: number
    }) {
      const found: Array<TransferLog> = []
      const times = new Map<Hash, bigint>()
      for (let start = 0; start < query.to.length; start += ADDRESSES_PER_QUERY) {
        const to = query.to.slice(start, start + ADDRESSES_PER_QUERY) as Array<Address>
        const logs = yield* rpc(query.chain, (client) =>
          client.getLogs({
            address: query.contract as Address,
            event: TRANSFER_EVENT,
            args: { to },
            fromBlock: BigInt(query.fromBlock),
            toBlock: BigInt(query.toBlock),
            strict: true
          }))
        for (const log of logs) {
          if (log.blockHash === null || log.blockNumber === null || log.transactionHash === null || log.logIndex === null) continue
          let time = log.blockTimestamp ?? times.get(log.blockHash)
          if (time === undefined) {
            const blockHash = log.blockHash
            time = (yield* rpc(query.chain, (client) => client.getBlock({ blockHash }))).timestamp
          }
          times.set(log.blockHash, time)
          found.push({
            tx_hash: log.transactionHash,
            log_index: log.logIndex,
            block_number: Number(log.blockNumber),
            block_hash: log.blockHash,
            to: getAddress(log.args.to),
            amount: log.args.value,
            at: Time.toTimestamp(Number(time) * 1000)
          })
        }
      }
      return found.sort((a, b) => a.block_number - b.block_number || a.log_index - b.log_index)
    })

    return ChainReader.of({ head, transfers, blockHash })
  })
