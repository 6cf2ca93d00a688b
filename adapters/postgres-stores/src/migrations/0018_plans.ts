/**
 * Plans and rentals (core/src/plans/PlanStore.ts, PgPlanStore.ts) and what a rental or
 * subscription order buys (core/src/payments/OrderStore.ts `OrderDetails`, PgOrderStore.ts):
 * - `orders.details`: the order's details as a jsonb object, NULL for credits and package orders
 *   (every order written before this migration is one of those, so existing rows stay NULL). The
 *   store reads it back through a Schema, never trusting the JSON's shape.
 * - `subscriptions` and `rentals`: a column per record field. `order_id` is UNIQUE, so an insert
 *   is one `INSERT ... ON CONFLICT DO NOTHING` and concurrent inserts of one order's plan or rental
 *   write one row. The port's input rules (subscriptionProblem, rentalProblem) are CHECKs too.
 *   Resource counts are int8 (any safe integer the rules accept; read back as numbers).
 * - The listings are an account's records newest first, then by id in byte order (core's
 *   `newestFirst` compares ids as JS strings): the indexes are in that order, ids under "C".
 * No foreign keys (./migrations.ts): an order, a plan and a rental may live in different stores.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export const plans = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  // Adding a nullable column without a default rewrites nothing; the check is NOT VALID so it
  // scans nothing either (every existing row is NULL) and still holds every row written from now.
  yield* sql`ALTER TABLE orders ADD COLUMN details jsonb`
  yield* sql`
    ALTER TABLE orders ADD CONSTRAINT orders_details_object
      CHECK (details IS NULL OR jsonb_typeof(details) = 'object') NOT VALID`
  yield* sql`
    CREATE TABLE subscriptions (
      id text PRIMARY KEY CHECK (id <> ''),
      account_id text NOT NULL CHECK (account_id <> ''),
      order_id text NOT NULL UNIQUE CHECK (order_id <> ''),
      machine_id text NOT NULL,
      plan_id text NOT NULL,
      paid_with text NOT NULL CHECK (paid_with IN ('card', 'stablecoin')),
      auto_renews boolean NOT NULL,
      cancel_at_period_end boolean NOT NULL,
      current_period_start timestamptz NOT NULL,
      current_period_end timestamptz NOT NULL,
      created_at timestamptz NOT NULL,
      CHECK (current_period_end > current_period_start)
    )`
  yield* sql`CREATE INDEX subscriptions_newest ON subscriptions (account_id, created_at DESC, id COLLATE "C")`
  yield* sql`
    CREATE TABLE rentals (
      id text PRIMARY KEY CHECK (id <> ''),
      account_id text NOT NULL CHECK (account_id <> ''),
      order_id text NOT NULL UNIQUE CHECK (order_id <> ''),
      machine_id text NOT NULL,
      cpu_cores bigint NOT NULL CHECK (cpu_cores >= 1),
      memory_gb bigint NOT NULL CHECK (memory_gb >= 1),
      gpu bigint NOT NULL CHECK (gpu >= 0),
      storage_gb bigint NOT NULL CHECK (storage_gb >= 0),
      hours bigint NOT NULL CHECK (hours >= 1),
      starts_at timestamptz NOT NULL,
      ends_at timestamptz NOT NULL,
      created_at timestamptz NOT NULL,
      CHECK (ends_at > starts_at)
    )`
  yield* sql`CREATE INDEX rentals_newest ON rentals (account_id, created_at DESC, id COLLATE "C")`
})
