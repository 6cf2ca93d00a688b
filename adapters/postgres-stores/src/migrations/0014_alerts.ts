/**
 * Billing alerts and each account's automatic top-up state (PgAlertStore.ts). The alert's
 * identity (account, kind, target, period, point) is a unique constraint, so a raise is one
 * `INSERT ... ON CONFLICT DO NOTHING` and concurrent raises of one alert insert it once. The
 * top-up state is one row per account, replaced by a compare-and-set on its version.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export const alerts = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE alerts (
      id text PRIMARY KEY,
      account_id text NOT NULL,
      kind text NOT NULL,
      target text NOT NULL,
      period text NOT NULL CHECK (period ~ '^[0-9]{4}-(0[1-9]|1[0-2])$'),
      point integer NOT NULL CHECK (point BETWEEN 0 AND 100),
      message text NOT NULL,
      seen boolean NOT NULL,
      created_at timestamptz NOT NULL,
      UNIQUE (account_id, kind, target, period, point)
    )`
  yield* sql`CREATE INDEX alerts_newest ON alerts (account_id, created_at DESC, id DESC)`
  yield* sql`
    CREATE TABLE top_up_states (
      account_id text PRIMARY KEY,
      version integer NOT NULL CHECK (version >= 1),
      phase text NOT NULL CHECK (phase IN ('armed', 'charging', 'below')),
      order_id text,
      day text NOT NULL,
      charges_on_day integer NOT NULL CHECK (charges_on_day >= 0),
      last_error text,
      updated_at timestamptz NOT NULL
    )`
})
