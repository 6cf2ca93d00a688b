/**
 * Per-day usage rollups (PgUsageStore.ts `report`, docs/billing.md "Usage reports"): one row per
 * account x UTC day x service x model x key x agent ('' for none: a key column cannot be null)
 * with the calls and the sums of the amounts.
 *
 * - Kept by a statement trigger on usage_records: its transition table holds only the rows the
 *   statement inserted, so a duplicate (`ON CONFLICT (ref) DO NOTHING`) adds nothing, and the
 *   rollup changes in the same transaction as the record, whoever inserts it (PgUsageStore.record,
 *   gateway_commit, a bulk load).
 * - The trigger upserts its groups in key order, and gateway_commit (replaced here) inserts a
 *   batch's records in ONE statement: every writer locks rollup rows in the same order, so
 *   concurrent batches of one account wait for each other instead of deadlocking.
 * - Sums are numeric: exact past 2^63 (a day of large amounts must not overflow int8).
 * - Existing records are rolled up here, under a lock that keeps writers out until the trigger
 *   exists.
 * - Keyset pages of the CSV export read (account_id, at, ref COLLATE "C") in index order; that
 *   index replaces (account_id, at), which it also serves.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export const usageRollups = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE usage_rollups (
      account_id text NOT NULL,
      day date NOT NULL,
      service text NOT NULL,
      model text NOT NULL,
      key_id text NOT NULL,
      agent_id text NOT NULL,
      calls bigint NOT NULL,
      list_credits numeric NOT NULL,
      credits numeric NOT NULL,
      from_allowance numeric NOT NULL,
      from_trial numeric NOT NULL,
      PRIMARY KEY (account_id, day, service, model, key_id, agent_id)
    )`
  yield* sql`LOCK TABLE usage_records IN SHARE ROW EXCLUSIVE MODE`
  yield* sql`
    INSERT INTO usage_rollups
    SELECT account_id, (at AT TIME ZONE 'UTC')::date, service, model, key_id, COALESCE(agent_id, ''),
           count(*), sum(list_credits), sum(credits), sum(from_allowance), sum(from_trial)
    FROM usage_records
    GROUP BY 1, 2, 3, 4, 5, 6`
  yield* sql.unsafe(`
    CREATE FUNCTION usage_rollups_add() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO usage_rollups AS r
      SELECT account_id, (at AT TIME ZONE 'UTC')::date, service, model, key_id, COALESCE(agent_id, ''),
             count(*), sum(list_credits), sum(credits), sum(from_allowance), sum(from_trial)
      FROM inserted
      GROUP BY 1, 2, 3, 4, 5, 6
      ORDER BY 1, 2, 3, 4, 5, 6
      ON CONFLICT (account_id, day, service, model, key_id, agent_id) DO UPDATE SET
        calls = r.calls + excluded.calls,
        list_credits = r.list_credits + excluded.list_credits,
        credits = r.credits + excluded.credits,
        from_allowance = r.from_allowance + excluded.from_allowance,
        from_trial = r.from_trial + excluded.from_trial;
      RETURN NULL;
    END
    $$`)
  yield* sql.unsafe(`
    CREATE TRIGGER usage_records_rollup AFTER INSERT ON usage_records
    REFERENCING NEW TABLE AS inserted
    FOR EACH STATEMENT EXECUTE FUNCTION usage_rollups_add()`)
  yield* sql`CREATE INDEX usage_records_account_at_ref ON usage_records (account_id, at, ref COLLATE "C")`
  yield* sql`DROP INDEX usage_records_account_at`
  // As 0007's, except that the batch's records go in one INSERT after the settlements (see above).
  // A ref twice in one batch: the first is recorded, as before (the insert keeps the batch order).
  yield* sql.unsafe(`
    CREATE OR REPLACE FUNCTION gateway_commit(p_items jsonb)
    RETURNS TABLE (n integer, settlement text, recorded boolean) LANGUAGE plpgsql AS $$
    DECLARE
      item record;
      s jsonb;
      rec usage_records;
      batch_refs text[];
      recs usage_records[] := '{}';
      outcomes text[] := '{}';
      inserted text[];
    BEGIN
      batch_refs := ARRAY(SELECT e.value->'settlement'->>'ref' FROM jsonb_array_elements(p_items) AS e
                          WHERE jsonb_typeof(e.value->'settlement') = 'object');
      PERFORM 1 FROM ledger_reservations lr WHERE lr.ref = ANY (batch_refs)
        ORDER BY lr.ref COLLATE "C"
        FOR UPDATE;
      PERFORM 1 FROM ledger_balances lb
        WHERE lb.account_id IN (SELECT lr.account_id FROM ledger_reservations lr
                                WHERE lr.ref = ANY (batch_refs) AND lr.status = 'pending')
        ORDER BY lb.account_id COLLATE "C", lb.scope COLLATE "C"
        FOR UPDATE OF lb;
      FOR item IN SELECT e.value FROM jsonb_array_elements(p_items) WITH ORDINALITY AS e ORDER BY e.ordinality LOOP
        s := item.value->'settlement';
        IF s IS NULL OR jsonb_typeof(s) = 'null' THEN
          settlement := 'none';
        ELSIF ledger_finish(
          s->>'ref', 'settled', (s->>'at')::timestamptz, (s->>'charged')::bigint, (s->>'excess')::bigint,
          ARRAY(SELECT jsonb_array_elements_text(s->'ids')),
          ARRAY(SELECT jsonb_array_elements_text(s->'account_ids')),
          ARRAY(SELECT jsonb_array_elements_text(s->'scopes')),
          ARRAY(SELECT x::bigint FROM jsonb_array_elements_text(s->'amounts') AS x),
          ARRAY(SELECT jsonb_array_elements_text(s->'refs')),
          ARRAY(SELECT x::timestamptz FROM jsonb_array_elements_text(s->'created_at') AS x)
        ) THEN
          settlement := 'settled';
        ELSE
          settlement := 'not_pending';
        END IF;
        rec := jsonb_populate_record(NULL::usage_records, item.value->'record');
        IF settlement = 'not_pending' THEN
          rec.credits := 0;
        END IF;
        recs := recs || rec;
        outcomes := outcomes || settlement;
      END LOOP;
      WITH written AS (
        INSERT INTO usage_records SELECT * FROM unnest(recs) ON CONFLICT (ref) DO NOTHING RETURNING ref
      )
      SELECT COALESCE(array_agg(written.ref), '{}') INTO inserted FROM written;
      -- recorded: the item's ref went in, and no earlier item of the batch has it
      RETURN QUERY
        SELECT u.i, outcomes[u.i], u.r = ANY (inserted) AND u.i = min(u.i) OVER (PARTITION BY u.r)
        FROM (SELECT g AS i, (recs[g]).ref AS r FROM generate_subscripts(recs, 1) AS g) AS u
        ORDER BY u.i;
    END
    $$`)
})
