/**
 * Renewals of plans (core/src/plans/PlanStore.ts `renew`, `failRenewal`, `dueRenewals`;
 * PgPlanStore.ts):
 * - `subscriptions.card_reference` (the saved card a card plan's renewals are charged to) and
 *   `subscriptions.renewal_error` (why the last renewal failed): nullable, no default, so adding
 *   them rewrites nothing and every existing plan reads back with both null.
 * - `plan_renewals`: one row per order that renewed a plan, `order_id` the primary key, so an
 *   order renews once; written in the same transaction as the plan's new period. It keeps the
 *   period the renewal moved from and to, for the record. No foreign key (./migrations.ts).
 * - `subscriptions_due`: the plans that renew by themselves, in `dueRenewals` order (period end,
 *   then id in byte order as core's `earliestEndFirst`); partial, so plans that do not renew
 *   (stablecoin, cancelled, failed) cost the index nothing.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export const planRenewals = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE subscriptions ADD COLUMN card_reference text, ADD COLUMN renewal_error text`
  yield* sql`
    CREATE TABLE plan_renewals (
      order_id text PRIMARY KEY CHECK (order_id <> ''),
      subscription_id text NOT NULL CHECK (subscription_id <> ''),
      after_period_end timestamptz NOT NULL,
      current_period_start timestamptz NOT NULL,
      current_period_end timestamptz NOT NULL,
      CHECK (current_period_end > current_period_start)
    )`
  yield* sql`
    CREATE INDEX subscriptions_due ON subscriptions (current_period_end, id COLLATE "C") WHERE auto_renews`
})
