/**
 * What the chain watchers of the "evm" stablecoin rail keep (PgDepositWatchStore.ts,
 * core/src/payments/DepositWatchStore.ts): the next index of each extended public key, the deposit
 * addresses derived from it, one cursor per (chain, token), and the transfers seen on the chain
 * (unique per (chain, tx hash, log index)). Amounts are numeric(78,0), as in stablecoin_deposits.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export const depositWatch = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE deposit_key_indexes (
      key_id text PRIMARY KEY,
      next_index integer NOT NULL CHECK (next_index > 0)
    )`
  yield* sql`
    CREATE TABLE deposit_watch_addresses (
      address text PRIMARY KEY,
      chain text NOT NULL,
      token text NOT NULL,
      order_id text NOT NULL,
      key_id text NOT NULL,
      key_index integer NOT NULL CHECK (key_index >= 0),
      opened_at timestamptz NOT NULL,
      seq bigint GENERATED ALWAYS AS IDENTITY
    )`
  yield* sql`CREATE INDEX deposit_watch_addresses_opened ON deposit_watch_addresses (chain, opened_at, seq)`
  yield* sql`
    CREATE TABLE chain_cursors (
      chain text NOT NULL,
      token text NOT NULL,
      block bigint NOT NULL CHECK (block >= 0),
      PRIMARY KEY (chain, token)
    )`
  yield* sql`
    CREATE TABLE chain_transfers (
      chain text NOT NULL,
      tx_hash text NOT NULL,
      log_index integer NOT NULL CHECK (log_index >= 0),
      token text NOT NULL,
      block_number bigint NOT NULL CHECK (block_number >= 0),
      block_hash text NOT NULL,
      address text NOT NULL,
      amount numeric(78, 0) NOT NULL CHECK (amount > 0),
      at timestamptz NOT NULL,
      applied boolean NOT NULL DEFAULT false,
      PRIMARY KEY (chain, tx_hash, log_index)
    )`
  yield* sql`CREATE INDEX chain_transfers_unapplied ON chain_transfers (chain, token, block_number, log_index) WHERE NOT applied`
  yield* sql`CREATE INDEX chain_transfers_address ON chain_transfers (address, block_number, log_index)`
})
