/**
 * The Postgres schema, as a record of migrations keyed `<id>_<name>` and run in id order by
 * Effect's migrator (`fromRecord`, so a bundle needs no migration files on disk). A migration
 * that has shipped is never edited: change the schema with a new entry.
 *
 * Conventions: timestamps are `timestamptz` (microseconds, so the ISO-with-milliseconds strings
 * of the API round-trip exactly); `seq` identity columns break ties between equal created_at so
 * "oldest first" is stable; no foreign keys between the tables of different ports, because each
 * port's store is tested (and may be deployed) on its own.
 */
import { Effect } from "effect"
import { Migrator, SqlClient } from "effect/sql"

const accountsKeysIdempotency = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE accounts (
      id text PRIMARY KEY,
      email text NOT NULL UNIQUE,
      created_at timestamptz NOT NULL,
      seq bigint GENERATED ALWAYS AS IDENTITY
    )`
  yield* sql`CREATE INDEX accounts_created_at ON accounts (created_at, seq)`
  yield* sql`
    CREATE TABLE api_keys (
      id text PRIMARY KEY,
      account_id text NOT NULL,
      name text NOT NULL,
      prefix text NOT NULL,
      secret_hash text NOT NULL UNIQUE,
      permissions text[] NOT NULL,
      machine_id text,
      subscription_id text,
      rental_id text,
      agent_id text,
      created_at timestamptz NOT NULL,
      last_used_at timestamptz,
      revoked_at timestamptz,
      seq bigint GENERATED ALWAYS AS IDENTITY
    )`
  yield* sql`CREATE INDEX api_keys_account ON api_keys (account_id, created_at, seq)`
  yield* sql`
    CREATE TABLE idempotency_records (
      scope text NOT NULL,
      key text NOT NULL,
      fingerprint text NOT NULL,
      created_at timestamptz NOT NULL,
      response_status integer,
      response_body text,
      PRIMARY KEY (scope, key),
      CHECK ((response_status IS NULL) = (response_body IS NULL))
    )`
})

/**
 * The credit ledger (PgLedgerStore.ts). Amounts are int8 micro-credits. `ledger_balances` caches,
 * per (account, scope), the sum of the scope's entries (`posted`) and of its pending holds
 * (`held`); scope '' is account-wide, else the machine id (a primary key cannot hold NULL).
 */
const ledger = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE ledger_entries (
      id text PRIMARY KEY,
      account_id text NOT NULL,
      machine_id text CHECK (machine_id <> ''),
      amount bigint NOT NULL,
      type text NOT NULL,
      ref text NOT NULL,
      created_at timestamptz NOT NULL,
      seq bigint GENERATED ALWAYS AS IDENTITY,
      UNIQUE (account_id, ref),
      CHECK (CASE type WHEN 'usage' THEN amount < 0
                       WHEN 'credit_added' THEN amount > 0
                       WHEN 'plan_credit_granted' THEN amount > 0
                       ELSE false END)
    )`
  yield* sql`CREATE INDEX ledger_entries_newest ON ledger_entries (account_id, created_at DESC, seq DESC)`
  yield* sql`
    CREATE TABLE ledger_balances (
      account_id text NOT NULL,
      scope text NOT NULL,
      posted bigint NOT NULL,
      held bigint NOT NULL CHECK (held >= 0),
      PRIMARY KEY (account_id, scope)
    )`
  yield* sql`
    CREATE TABLE ledger_reservations (
      ref text PRIMARY KEY,
      account_id text NOT NULL,
      machine_id text CHECK (machine_id <> ''),
      scopes text[] NOT NULL,
      amounts bigint[] NOT NULL,
      status text NOT NULL CHECK (status IN ('pending', 'settled', 'voided', 'expired')),
      created_at timestamptz NOT NULL,
      expires_at timestamptz NOT NULL,
      finished_at timestamptz,
      charged bigint,
      excess bigint,
      seq bigint GENERATED ALWAYS AS IDENTITY,
      CHECK (cardinality(scopes) = cardinality(amounts)),
      CHECK ((status = 'pending') = (finished_at IS NULL)),
      CHECK ((status = 'settled') = (charged IS NOT NULL AND excess IS NOT NULL))
    )`
  yield* sql`CREATE INDEX ledger_reservations_due ON ledger_reservations (expires_at) WHERE status = 'pending'`
  yield* sql`
    CREATE INDEX ledger_reservations_pending ON ledger_reservations (account_id, created_at, seq)
    WHERE status = 'pending'`
})

export const migrations: Record<string, Effect.Effect<void, unknown, SqlClient.SqlClient>> = {
  "0001_accounts_keys_idempotency": accountsKeysIdempotency,
  "0002_ledger": ledger
}

/** Runs the pending migrations; several processes may race here, the migrator locks its table. */
export const migrate = Migrator.make({})({ loader: Migrator.fromRecord(migrations) })
