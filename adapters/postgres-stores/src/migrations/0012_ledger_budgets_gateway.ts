/**
 * The gateway's functions as migration 0012_ledger_budgets (./0012_ledger_budgets.ts) creates
 * them: the claims passed through to ledger_reserve_in_order, and the batch functions taking the
 * budget month rows' locks in the order that file describes. SQL text only; kept apart for size.
 */

/** 0007's, passing the claims to ledger_reserve_in_order and its over_budget answer back. */
export const gatewayAdmit = `
  CREATE FUNCTION gateway_admit(
    p_account_id text, p_key_id text, p_touch_at timestamptz,
    p_bucket text, p_window_start bigint, p_window_end bigint, p_limit integer,
    p_ref text, p_machine_id text, p_order text[], p_amount bigint,
    p_created_at timestamptz, p_expires_at timestamptz,
    p_budgets text[], p_budget_months text[], p_budget_defaults bigint[],
    OUT result text, OUT hits integer, OUT scopes text[], OUT amounts bigint[], OUT available bigint,
    OUT budget text, OUT lim bigint, OUT used bigint
  ) LANGUAGE plpgsql AS $$
  DECLARE
    revoked timestamptz;
  BEGIN
    SELECT k.revoked_at INTO revoked FROM api_keys k WHERE k.id = p_key_id AND k.account_id = p_account_id;
    IF NOT FOUND OR revoked IS NOT NULL THEN
      result := 'key_revoked';
      RETURN;
    END IF;
    IF p_touch_at IS NOT NULL THEN
      UPDATE api_keys k SET last_used_at = p_touch_at
        WHERE k.id = p_key_id AND (k.last_used_at IS NULL OR k.last_used_at < p_touch_at);
    END IF;
    INSERT INTO rate_limit_windows AS w (bucket, window_start, window_end, count)
      VALUES (p_bucket, p_window_start, p_window_end, 1)
      ON CONFLICT (bucket, window_start) DO UPDATE SET count = w.count + 1
      RETURNING w.count INTO hits;
    IF hits > p_limit THEN
      result := 'rate_limited';
      RETURN;
    END IF;
    IF p_ref IS NULL THEN
      result := 'admitted';
      RETURN;
    END IF;
    SELECT r.result, r.scopes, r.amounts, r.available, r.budget, r.lim, r.used
      INTO result, scopes, amounts, available, budget, lim, used
      FROM ledger_reserve_in_order(p_ref, p_account_id, p_machine_id, p_order, p_amount,
                                   p_created_at, p_expires_at, p_budgets, p_budget_months, p_budget_defaults) AS r;
  END
  $$`

/**
 * A batch of admissions (PgGatewayStore.admit): the batch's budget month rows locked first
 * (0012_ledger_budgets.ts: lock order), then gateway_admit per item of the JSON array, in its order.
 */
export const gatewayAdmitBatch = `
  CREATE FUNCTION gateway_admit_batch(p_items jsonb)
  RETURNS TABLE (n integer, result text, hits integer, scopes text[], amounts bigint[], available bigint,
                 budget text, lim bigint, used bigint) LANGUAGE plpgsql AS $$
  DECLARE
    e record;
    a record;
    claim_accounts text[];
    claim_budgets text[];
    claim_months text[];
  BEGIN
    SELECT array_agg(i.value->>'account_id'), array_agg(t.budget), array_agg(t.month)
      INTO claim_accounts, claim_budgets, claim_months
      FROM jsonb_array_elements(p_items) AS i,
           ROWS FROM (jsonb_array_elements_text(i.value->'budgets'),
                      jsonb_array_elements_text(i.value->'budget_months')) AS t(budget, month);
    PERFORM ledger_budgets_lock(claim_accounts, claim_budgets, claim_months);
    FOR e IN SELECT x.value AS v, x.ordinality::integer AS i FROM jsonb_array_elements(p_items) WITH ORDINALITY AS x
             ORDER BY x.ordinality LOOP
      SELECT * INTO a FROM gateway_admit(
        e.v->>'account_id', e.v->>'key_id', (e.v->>'touch_at')::timestamptz,
        e.v->>'bucket', (e.v->>'window_start')::bigint, (e.v->>'window_end')::bigint,
        (e.v->>'limit')::integer, e.v->>'ref', e.v->>'machine_id',
        ARRAY(SELECT jsonb_array_elements_text(e.v->'order')), (e.v->>'amount')::bigint,
        (e.v->>'created_at')::timestamptz, (e.v->>'expires_at')::timestamptz,
        ARRAY(SELECT jsonb_array_elements_text(e.v->'budgets')),
        ARRAY(SELECT jsonb_array_elements_text(e.v->'budget_months')),
        ARRAY(SELECT d::bigint FROM jsonb_array_elements_text(e.v->'budget_defaults') WITH ORDINALITY AS x(d, k)
              ORDER BY x.k));
      n := e.i;
      result := a.result;
      hits := a.hits;
      scopes := a.scopes;
      amounts := a.amounts;
      available := a.available;
      budget := a.budget;
      lim := a.lim;
      used := a.used;
      RETURN NEXT;
    END LOOP;
  END
  $$`

/** 0011's, with the batch's budget month rows locked between its reservations and its balances. */
export const gatewayCommit = `
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
    claim_accounts text[];
    claim_budgets text[];
    claim_months text[];
  BEGIN
    batch_refs := ARRAY(SELECT e.value->'settlement'->>'ref' FROM jsonb_array_elements(p_items) AS e
                        WHERE jsonb_typeof(e.value->'settlement') = 'object');
    PERFORM 1 FROM ledger_reservations lr WHERE lr.ref = ANY (batch_refs)
      ORDER BY lr.ref COLLATE "C"
      FOR UPDATE;
    SELECT array_agg(lr.account_id), array_agg(t.budget), array_agg(t.month)
      INTO claim_accounts, claim_budgets, claim_months
      FROM ledger_reservations lr, unnest(lr.budgets, lr.budget_months) AS t(budget, month)
      WHERE lr.ref = ANY (batch_refs) AND lr.status = 'pending';
    PERFORM ledger_budgets_lock(claim_accounts, claim_budgets, claim_months);
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
    RETURN QUERY
      SELECT u.i, outcomes[u.i], u.r = ANY (inserted) AND u.i = min(u.i) OVER (PARTITION BY u.r)
      FROM (SELECT g AS i, (recs[g]).ref AS r FROM generate_subscripts(recs, 1) AS g) AS u
      ORDER BY u.i;
  END
  $$`
