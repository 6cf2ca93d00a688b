/**
 * Two coarser levels beside the per-day rollups of 0011, so that a report over months reads
 * hundreds of rows where the daily rollups hold tens of thousands (PgUsageStore.ts `report`,
 * docs/performance.md "Usage reports"):
 * - usage_rollups_monthly: the same dimensions per UTC calendar month (`month` is its first day);
 *   a report by service, model, key or agent takes whole months from here and only the days at
 *   the range's ends from usage_rollups.
 * - usage_day_totals: each account's day, all dimensions summed; a report by day without filters
 *   reads one row per day.
 * The trigger of 0011 now adds the inserted rows to the three levels, each in key order and in
 * the same order of tables for every writer (day rollups, months, day totals), so concurrent
 * writers still wait for each other rather than deadlock. Existing rollups are summed into the new
 * levels here, with writers kept out until the trigger is replaced.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

const sums = `calls bigint NOT NULL,
      list_credits numeric NOT NULL,
      credits numeric NOT NULL,
      from_allowance numeric NOT NULL,
      from_trial numeric NOT NULL`

const added = (table: string) => `
      ON CONFLICT ON CONSTRAINT ${table}_pkey DO UPDATE SET
        calls = r.calls + excluded.calls,
        list_credits = r.list_credits + excluded.list_credits,
        credits = r.credits + excluded.credits,
        from_allowance = r.from_allowance + excluded.from_allowance,
        from_trial = r.from_trial + excluded.from_trial`

export const usageRollupLevels = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql.unsafe(`
    CREATE TABLE usage_rollups_monthly (
      account_id text NOT NULL,
      month date NOT NULL,
      service text NOT NULL,
      model text NOT NULL,
      key_id text NOT NULL,
      agent_id text NOT NULL,
      ${sums},
      PRIMARY KEY (account_id, month, service, model, key_id, agent_id)
    )`)
  yield* sql.unsafe(`
    CREATE TABLE usage_day_totals (
      account_id text NOT NULL,
      day date NOT NULL,
      ${sums},
      PRIMARY KEY (account_id, day)
    )`)
  yield* sql`LOCK TABLE usage_records IN SHARE ROW EXCLUSIVE MODE`
  yield* sql`
    INSERT INTO usage_rollups_monthly
    SELECT account_id, date_trunc('month', day)::date, service, model, key_id, agent_id,
           sum(calls), sum(list_credits), sum(credits), sum(from_allowance), sum(from_trial)
    FROM usage_rollups GROUP BY 1, 2, 3, 4, 5, 6`
  yield* sql`
    INSERT INTO usage_day_totals
    SELECT account_id, day, sum(calls), sum(list_credits), sum(credits), sum(from_allowance), sum(from_trial)
    FROM usage_rollups GROUP BY 1, 2`
  yield* sql.unsafe(`
    CREATE OR REPLACE FUNCTION usage_rollups_add() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO usage_rollups AS r
      SELECT account_id, (at AT TIME ZONE 'UTC')::date, service, model, key_id, COALESCE(agent_id, ''),
             count(*), sum(list_credits), sum(credits), sum(from_allowance), sum(from_trial)
      FROM inserted
      GROUP BY 1, 2, 3, 4, 5, 6
      ORDER BY 1, 2, 3, 4, 5, 6
      ${added("usage_rollups")};
      INSERT INTO usage_rollups_monthly AS r
      SELECT account_id, date_trunc('month', at AT TIME ZONE 'UTC')::date, service, model, key_id, COALESCE(agent_id, ''),
             count(*), sum(list_credits), sum(credits), sum(from_allowance), sum(from_trial)
      FROM inserted
      GROUP BY 1, 2, 3, 4, 5, 6
      ORDER BY 1, 2, 3, 4, 5, 6
      ${added("usage_rollups_monthly")};
      INSERT INTO usage_day_totals AS r
      SELECT account_id, (at AT TIME ZONE 'UTC')::date,
             count(*), sum(list_credits), sum(credits), sum(from_allowance), sum(from_trial)
      FROM inserted
      GROUP BY 1, 2
      ORDER BY 1, 2
      ${added("usage_day_totals")};
      RETURN NULL;
    END
    $$`)
})
