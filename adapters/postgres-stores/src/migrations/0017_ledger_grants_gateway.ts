/**
 * The gateway's functions as migration 0017_ledger_grants (./0017_ledger_grants.ts) creates
 * them: the grants passed through to ledger_reserve_in_order and ledger_finish, the batch
 * functions locking the grants' month rows with the budgets' (one ordered lock, as 0012 describes),
 * and the usage record of a call whose reservation is no longer pending written as
 * core/src/gateway/GatewayStore.ts `composeGatewayStore` writes it. SQL text only; kept apart for size.
 */

/** 0012's, with the grant claims passed to ledger_reserve_in_order and its grant holds answered. */
export const gatewayAdmit = `
  CREATE FUNCTION gateway_admit(
    p_account_id text, p_key_id text, p_touch_at timestamptz,
    p_bucket text, p_window_start bigint, p_window_end bigint, p_limit integer,
    p_ref text, p_machine_id text, p_order text[], p_amount bigint,
    p_created_at timestamptz, p_expires_at timestamptz,
    p_budgets text[], p_budget_months text[], p_budget_defaults bigint[],
    p_grants text[], p_grant_periods text[], p_grant_sizes bigint[],
    OUT result text, OUT hits integer, OUT scopes text[], OUT amounts bigint[], OUT available bigint,
    OUT budget text, OUT lim bigint, OUT used bigint,
    OUT grant_names text[], OUT grant_periods text[], OUT grant_amounts bigint[]
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
    SELECT r.result, r.scopes, r.amounts, r.available, r.budget, r.lim, r.used,
           r.grant_names, r.grant_periods, r.grant_amounts
      INTO result, scopes, amounts, available, budget, lim, used, grant_names, grant_periods, grant_amounts
      FROM ledger_reserve_in_order(p_ref, p_account_id, p_machine_id, p_order, p_amount,
                                   p_created_at, p_expires_at, p_budgets, p_budget_months, p_budget_defaults,
                                   p_grants, p_grant_periods, p_grant_sizes) AS r;
  END
  $$`

/**
 * 0012's, with the batch's grant rows locked in the same call as its budget month rows, before
 * gateway_admit per item of the JSON array, in its order.
 */
export const gatewayAdmitBatch = `
  CREATE FUNCTION gateway_admit_batch(p_items jsonb)
  RETURNS TABLE (n integer, result text, hits integer, scopes text[], amounts bigint[], available bigint,
                 budget text, lim bigint, used bigint,
                 grant_names text[], grant_periods text[], grant_amounts bigint[]) LANGUAGE plpgsql AS $$
  DECLARE
    e record;
    a record;
    claim_accounts text[];
    claim_names text[];
    claim_months text[];
  BEGIN
    SELECT array_agg(c.account_id), array_agg(c.name), array_agg(c.month)
      INTO claim_accounts, claim_names, claim_months
      FROM (SELECT i.value->>'account_id' AS account_id, t.name, t.month
            FROM jsonb_array_elements(p_items) AS i,
                 ROWS FROM (jsonb_array_elements_text(i.value->'budgets'),
                            jsonb_array_elements_text(i.value->'budget_months')) AS t(name, month)
            UNION ALL
            SELECT i.value->>'account_id', t.name, t.month
            FROM jsonb_array_elements(p_items) AS i,
                 ROWS FROM (jsonb_array_elements_text(i.value->'grants'),
                            jsonb_array_elements_text(i.value->'grant_periods')) AS t(name, month)) AS c;
    PERFORM ledger_budgets_lock(claim_accounts, claim_names, claim_months);
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
              ORDER BY x.k),
        ARRAY(SELECT x.g FROM jsonb_array_elements_text(e.v->'grants') WITH ORDINALITY AS x(g, k) ORDER BY x.k),
        ARRAY(SELECT x.p FROM jsonb_array_elements_text(e.v->'grant_periods') WITH ORDINALITY AS x(p, k) ORDER BY x.k),
        ARRAY(SELECT x.s::bigint FROM jsonb_array_elements_text(e.v->'grant_sizes') WITH ORDINALITY AS x(s, k)
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
      grant_names := a.grant_names;
      grant_periods := a.grant_periods;
      grant_amounts := a.grant_amounts;
      RETURN NEXT;
    END LOOP;
  END
  $$`

/**
 * 0012's, with the batch's grant rows locked with its budget month rows (between its reservations
 * and its balances), each settlement's grant charges passed to ledger_finish, and the record of a
 * call whose reservation is no longer pending written as composeGatewayStore writes it: settled
 * (a replay of a commit that died between its writes, or the same call twice in a batch): credits
 * as the reservation was charged, from_allowance and from_trial as given; expired or voided:
 * credits, from_allowance and from_trial 0 (nothing was charged, nothing was covered).
 */
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
    claim_names text[];
    claim_months text[];
    finished_status text;
    finished_charged bigint;
  BEGIN
    batch_refs := ARRAY(SELECT e.value->'settlement'->>'ref' FROM jsonb_array_elements(p_items) AS e
                        WHERE jsonb_typeof(e.value->'settlement') = 'object');
    PERFORM 1 FROM ledger_reservations lr WHERE lr.ref = ANY (batch_refs)
      ORDER BY lr.ref COLLATE "C"
      FOR UPDATE;
    SELECT array_agg(c.account_id), array_agg(c.name), array_agg(c.month)
      INTO claim_accounts, claim_names, claim_months
      FROM (SELECT lr.account_id, t.name, t.month
            FROM ledger_reservations lr, unnest(lr.budgets, lr.budget_months) AS t(name, month)
            WHERE lr.ref = ANY (batch_refs) AND lr.status = 'pending'
            UNION ALL
            SELECT lr.account_id, t.name, t.month
            FROM ledger_reservations lr, unnest(lr.grant_names, lr.grant_periods) AS t(name, month)
            WHERE lr.ref = ANY (batch_refs) AND lr.status = 'pending') AS c;
    PERFORM ledger_budgets_lock(claim_accounts, claim_names, claim_months);
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
        ARRAY(SELECT x::timestamptz FROM jsonb_array_elements_text(s->'created_at') AS x),
        ARRAY(SELECT x.g FROM jsonb_array_elements_text(s->'grants') WITH ORDINALITY AS x(g, k) ORDER BY x.k),
        ARRAY(SELECT x.p FROM jsonb_array_elements_text(s->'grant_periods') WITH ORDINALITY AS x(p, k) ORDER BY x.k),
        ARRAY(SELECT x.a::bigint FROM jsonb_array_elements_text(s->'grant_amounts') WITH ORDINALITY AS x(a, k)
              ORDER BY x.k)
      ) THEN
        settlement := 'settled';
      ELSE
        settlement := 'not_pending';
      END IF;
      rec := jsonb_populate_record(NULL::usage_records, item.value->'record');
      IF settlement = 'not_pending' THEN
        SELECT lr.status, lr.charged INTO finished_status, finished_charged
          FROM ledger_reservations lr WHERE lr.ref = s->>'ref';
        IF finished_status = 'settled' THEN
          rec.credits := finished_charged;
        ELSE
          rec.credits := 0;
          rec.from_allowance := 0;
          rec.from_trial := 0;
        END IF;
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
