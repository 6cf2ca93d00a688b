/**
 * The deposit watch store port (core/src/payments/DepositWatchStore.ts) on Postgres (a real server or
 * embedded PGlite). The tables are created by the `0022_deposit_watch` migration.
 *
 * Every rule that must hold between watchers is ONE statement:
 * - allocateIndex and advanceCursor: `INSERT ... ON CONFLICT DO UPDATE` (the row lock serialises
 *   concurrent calls: each gets the counter as the previous one left it; GREATEST keeps a cursor
 *   from moving back);
 * - saveTransfer: `INSERT ... ON CONFLICT DO UPDATE ... WHERE NOT applied AND block_hash <> new`,
 *   `xmax = 0` telling an insert from an update;
 * - markApplied and dropTransfer: a conditional UPDATE / DELETE on (not applied, block hash).
 * A second address is a primary key violation: a defect. Amounts travel as decimal text.
 */
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import {
  DepositWatchStore,
  type SaveOutcome,
  type SeenTransfer,
  type StoredTransfer,
  type WatchedAddress
} from "@model-platform/core/payments"

const iso = (date: Date): string => date.toISOString()

interface AddressRow {
  readonly address: string
  readonly chain: string
  readonly token: string
  readonly order_id: string
  readonly key_id: string
  readonly key_index: number
  readonly opened_at: Date
}

const toAddress = (row: AddressRow): WatchedAddress => ({
  address: row.address,
  chain: row.chain,
  token: row.token,
  order_id: row.order_id,
  key_id: row.key_id,
  index: row.key_index,
  opened_at: iso(row.opened_at)
})

interface TransferRow {
  readonly chain: string
  readonly tx_hash: string
  readonly log_index: number
  readonly token: string
  readonly block_number: bigint
  readonly block_hash: string
  readonly address: string
  readonly amount: string
  readonly at: Date
  readonly applied: boolean
}

const toTransfer = (row: TransferRow): StoredTransfer => ({
  chain: row.chain,
  token: row.token,
  tx_hash: row.tx_hash,
  log_index: row.log_index,
  block_number: Number(row.block_number),
  block_hash: row.block_hash,
  to: row.address,
  amount: BigInt(row.amount),
  at: iso(row.at),
  applied: row.applied
})

export const DepositWatchStorePg: Layer.Layer<DepositWatchStore, never, SqlClient.SqlClient> = Layer.effect(
  DepositWatchStore,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const addressColumns = sql.literal("address, chain, token, order_id, key_id, key_index, opened_at")
    const transferColumns = sql.literal(
      "chain, tx_hash, log_index, token, block_number, block_hash, address, amount::text AS amount, at, applied"
    )

    const allocateIndex = (keyId: string) =>
      sql<{ readonly next_index: number }>`
        INSERT INTO deposit_key_indexes (key_id, next_index) VALUES (${keyId}, 1)
        ON CONFLICT (key_id) DO UPDATE SET next_index = deposit_key_indexes.next_index + 1
        RETURNING next_index`.pipe(
        Effect.map((rows) => rows[0]!.next_index - 1),
        Effect.orDie,
        Effect.withSpan("DepositWatchStore.allocateIndex")
      )

    const addAddress = (a: WatchedAddress) =>
      sql`INSERT INTO deposit_watch_addresses (address, chain, token, order_id, key_id, key_index, opened_at)
          VALUES (${a.address}, ${a.chain}, ${a.token}, ${a.order_id}, ${a.key_id}, ${a.index}, ${a.opened_at})`.pipe(
        Effect.asVoid,
        Effect.orDie,
        Effect.withSpan("DepositWatchStore.addAddress")
      )

    const getAddress = (address: string) =>
      sql<AddressRow>`SELECT ${addressColumns} FROM deposit_watch_addresses WHERE address = ${address}`.pipe(
        Effect.map((rows) => rows[0] === undefined ? undefined : toAddress(rows[0])),
        Effect.orDie
      )

    const watchedAddresses = (chain: string, since: string) =>
      sql<AddressRow>`SELECT ${addressColumns} FROM deposit_watch_addresses
                      WHERE chain = ${chain} AND opened_at >= ${since}
                      ORDER BY opened_at, seq`.pipe(Effect.map((rows) => rows.map(toAddress)), Effect.orDie)

    const cursor = (chain: string, token: string) =>
      sql<{ readonly block: bigint }>`SELECT block FROM chain_cursors WHERE chain = ${chain} AND token = ${token}`.pipe(
        Effect.map((rows) => rows[0] === undefined ? undefined : Number(rows[0].block)),
        Effect.orDie
      )

    const advanceCursor = (chain: string, token: string, block: number) =>
      sql<{ readonly block: bigint }>`
        INSERT INTO chain_cursors (chain, token, block) VALUES (${chain}, ${token}, ${block})
        ON CONFLICT (chain, token) DO UPDATE SET block = GREATEST(chain_cursors.block, EXCLUDED.block)
        RETURNING block`.pipe(
        Effect.map((rows) => Number(rows[0]!.block)),
        Effect.orDie,
        Effect.withSpan("DepositWatchStore.advanceCursor")
      )

    const saveTransfer = (t: SeenTransfer) =>
      t.amount <= 0n
        ? Effect.die(new Error("DepositWatchStore.saveTransfer: amount must be positive"))
        : sql<{ readonly inserted: boolean }>`
          INSERT INTO chain_transfers (chain, tx_hash, log_index, token, block_number, block_hash, address, amount, at)
          VALUES (${t.chain}, ${t.tx_hash}, ${t.log_index}, ${t.token}, ${t.block_number}, ${t.block_hash}, ${t.to},
                  ${t.amount.toString()}::numeric, ${t.at})
          ON CONFLICT (chain, tx_hash, log_index) DO UPDATE
            SET block_number = EXCLUDED.block_number, block_hash = EXCLUDED.block_hash, at = EXCLUDED.at
            WHERE NOT chain_transfers.applied AND chain_transfers.block_hash <> EXCLUDED.block_hash
          RETURNING (xmax = 0) AS inserted`.pipe(
          Effect.map((rows): SaveOutcome => rows[0] === undefined ? "unchanged" : rows[0].inserted ? "new" : "moved"),
          Effect.orDie,
          Effect.withSpan("DepositWatchStore.saveTransfer")
        )

    const getTransfer = (chain: string, txHash: string, logIndex: number) =>
      sql<TransferRow>`SELECT ${transferColumns} FROM chain_transfers
                       WHERE chain = ${chain} AND tx_hash = ${txHash} AND log_index = ${logIndex}`.pipe(
        Effect.map((rows) => rows[0] === undefined ? undefined : toTransfer(rows[0])),
        Effect.orDie
      )

    const unapplied = (chain: string, token: string) =>
      sql<TransferRow>`SELECT ${transferColumns} FROM chain_transfers
                       WHERE chain = ${chain} AND token = ${token} AND NOT applied
                       ORDER BY block_number, log_index`.pipe(Effect.map((rows) => rows.map(toTransfer)), Effect.orDie)

    const transfersTo = (address: string) =>
      sql<TransferRow>`SELECT ${transferColumns} FROM chain_transfers WHERE address = ${address}
                       ORDER BY block_number, log_index`.pipe(Effect.map((rows) => rows.map(toTransfer)), Effect.orDie)

    const markApplied = (chain: string, txHash: string, logIndex: number, blockHash: string) =>
      sql`UPDATE chain_transfers SET applied = true
          WHERE chain = ${chain} AND tx_hash = ${txHash} AND log_index = ${logIndex}
            AND NOT applied AND block_hash = ${blockHash}
          RETURNING tx_hash`.pipe(
        Effect.map((rows) => rows.length === 1),
        Effect.orDie,
        Effect.withSpan("DepositWatchStore.markApplied")
      )

    const dropTransfer = (chain: string, txHash: string, logIndex: number, blockHash: string) =>
      sql`DELETE FROM chain_transfers
          WHERE chain = ${chain} AND tx_hash = ${txHash} AND log_index = ${logIndex}
            AND NOT applied AND block_hash = ${blockHash}
          RETURNING tx_hash`.pipe(
        Effect.map((rows) => rows.length === 1),
        Effect.orDie,
        Effect.withSpan("DepositWatchStore.dropTransfer")
      )

    return DepositWatchStore.of({
      allocateIndex,
      addAddress,
      getAddress,
      watchedAddresses,
      cursor,
      advanceCursor,
      saveTransfer,
      getTransfer,
      unapplied,
      transfersTo,
      markApplied,
      dropTransfer
    })
  })
)
