/**
 * What credit leases need of the store (docs/performance.md "Credit leases").
 *
 * Draws from a lease (core/src/ledger/LedgerStore.ts `draw`) as one more kind of request of `ledger_finish_batch` (0024_ledger_batches.ts), so a draw takes
 * the same locks in the same order as the settlements it is batched with, and the rules of
 * charging (balances, budgets, grants, entries) stay written once:
 *
 * - A request with status 'drawn' names its `lease` and what the call drew of it (`drawn_*`); its
 *   `ref` is the call's usage ref. The lease's row is locked with the batch's reservations.
 * - A call whose ref is a reservation already (or drawn earlier in the batch) is a duplicate:
 *   `finished` false, with that reservation's status and charge.
 * - While the lease is pending, what the call was charged of what it drew (core's `chargedOf`)
 *   comes off the lease's holds (the row's arrays, and the scopes', budgets' and grants' `held`),
 *   and the rest of the draw stays with the lease: 'drawn'. A draw past what the lease holds in a
 *   scope or grant raises (core's `takeDrawn` rule). A lease that has finished charges the call
 *   with nothing to release: 'charged'.
 * - Either way the call is charged as a settlement is (its entries posted, its charge spent in
 *   the lease's budgets, its grant charges spent, each within what it drew) and recorded as a
 *   settled reservation of its own: what it drew, the lease's budgets.
 *
 * An admission of `gateway_admit_batch` takes `hits` hits of its rpm window (a lease's calls'
 * ahead, docs/performance.md "Credit leases"), 1 when absent.
 *
 * Account notices (0027) also go out when a key is revoked and when a monthly limit is set or
 * removed: a lease must stop lending at once.
 *
 * `ledger_finish` (a batch of one, 0024) is rewritten for the request's new attributes, and
 * `gateway_commit` meters a call that drew from a lease (its settlement names the lease). The plan
 * cache mode 0026 set is kept (a replaced function keeps only the settings it names).
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

const BY_KEY = "SET enable_hashjoin = off SET enable_mergejoin = off SET enable_seqscan = off"
const GENERIC = "SET plan_cache_mode = force_generic_plan"

export const creditLeases = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql.unsafe(`
    ALTER TYPE ledger_finish_request
      ADD ATTRIBUTE lease text,
      ADD ATTRIBUTE drawn_scopes text[],
      ADD ATTRIBUTE drawn_amounts bigint[],
      ADD ATTRIBUTE drawn_grants text[],
      ADD ATTRIBUTE drawn_grant_periods text[],
      ADD ATTRIBUTE drawn_grant_amounts bigint[]`)
  yield* sql.unsafe("ALTER TYPE gateway_admission ADD ATTRIBUTE hits integer")
  yield* sql.unsafe(admitBatch)
  yield* sql.unsafe(finishBatch)
  yield* sql.unsafe(finish)
  yield* sql.unsafe(commit)
  // A lease lends without a store step, so every process must hear at once of what would refuse
  // its calls (0027 sends the rest): a key revoked, a monthly limit set or removed.
  yield* sql.unsafe(`
    CREATE TRIGGER api_keys_revoked_notice AFTER UPDATE OF revoked_at ON api_keys
      FOR EACH ROW WHEN (NEW.revoked_at IS DISTINCT FROM OLD.revoked_at) EXECUTE FUNCTION account_state_notice('account_id')`)
  yield* sql.unsafe(`
    CREATE TRIGGER ledger_budget_limits_notice AFTER INSERT OR UPDATE OR DELETE ON ledger_budget_limits
      FOR EACH ROW EXECUTE FUNCTION account_state_notice('account_id')`)
})

const finishBatch = `
  CREATE OR REPLACE FUNCTION ledger_finish_batch(p_requests ledger_finish_request[])
  RETURNS SETOF ledger_finish_outcome LANGUAGE plpgsql
  ${BY_KEY} ${GENERIC} AS $$
  #variable_conflict use_column
  DECLARE
    cnt integer := coalesce(cardinality(p_requests), 0);
    s ledger_finish_request;
    r ledger_reservations;
    rs ledger_reservations[];
    rs_index jsonb;
    rs_status text[];
    rs_charged bigint[];
    outs ledger_finish_outcome[] := '{}';
    fin_req integer[] := '{}';
    fin_res integer[] := '{}';
    -- Draws that charge: the request, its lease, whether it drew from the lease's holds.
    dr_req integer[] := '{}';
    dr_lease integer[] := '{}';
    dr_held boolean[] := '{}';
    -- Per draw, what its charge took off its lease's scopes in all (the budgets' hold released).
    dr_released bigint[] := '{}';
    -- What the draws' charges took off their leases' scopes: the balances' holds released.
    rel_accounts text[] := '{}';
    rel_scopes text[] := '{}';
    rel_amounts bigint[] := '{}';
    released bigint;
    taken bigint;
    e integer;
    drained integer[] := '{}';
    drawn jsonb := '{}';
    i integer; j integer; k integer; h integer;
    covered boolean;
  BEGIN
    IF cnt = 0 THEN
      RETURN;
    END IF;
    -- The reservations and the leases drawn from, locked first (by ref, "C"), whatever their status.
    SELECT array_agg(y.lr ORDER BY y.o), jsonb_object_agg((y.lr).ref, y.o), array_agg((y.lr).status ORDER BY y.o),
           array_agg((y.lr).charged ORDER BY y.o)
      INTO rs, rs_index, rs_status, rs_charged
      FROM (SELECT x.lr, row_number() OVER (ORDER BY (x.lr).ref COLLATE "C") AS o
            FROM (SELECT lr FROM ledger_reservations lr
                  WHERE lr.ref = ANY (ARRAY(SELECT q.ref FROM unnest(p_requests) AS q
                                            UNION ALL
                                            SELECT q.lease FROM unnest(p_requests) AS q WHERE q.lease IS NOT NULL))
                  ORDER BY lr.ref COLLATE "C"
                  FOR UPDATE) AS x) AS y;
    rs_index := coalesce(rs_index, '{}');
    FOR i IN 1 .. cnt LOOP
      s := p_requests[i];
      j := (rs_index ->> s.ref)::integer;
      IF s.status = 'drawn' THEN
        IF j IS NOT NULL THEN
          outs := outs || ROW(i, false, rs_status[j], rs_charged[j])::ledger_finish_outcome;
          CONTINUE;
        ELSIF drawn ? s.ref THEN
          outs := outs || ROW(i, false, 'settled', (drawn ->> s.ref)::bigint)::ledger_finish_outcome;
          CONTINUE;
        END IF;
        j := (rs_index ->> s.lease)::integer;
        IF j IS NULL THEN
          RAISE EXCEPTION 'LedgerStore.draw: unknown lease %', s.lease;
        END IF;
      ELSIF j IS NULL OR rs_status[j] <> 'pending' THEN
        outs := outs || ROW(i, false, CASE WHEN j IS NOT NULL THEN rs_status[j] END, CASE WHEN j IS NOT NULL THEN rs_charged[j] END)::ledger_finish_outcome;
        CONTINUE;
      END IF;
      r := rs[j];
      -- The rules that need the reservation (0005, 0017): raised, rolling the whole batch back.
      FOR k IN 1 .. coalesce(cardinality(s.account_ids), 0) LOOP
        IF s.account_ids[k] <> r.account_id THEN
          RAISE EXCEPTION 'LedgerStore.settle: an entry of another account';
        END IF;
      END LOOP;
      FOR k IN 1 .. coalesce(cardinality(s.scopes), 0) LOOP
        IF s.scopes[k] <> '' AND s.scopes[k] IS DISTINCT FROM r.machine_id THEN
          RAISE EXCEPTION 'LedgerStore.settle: charges credits pinned to another machine than the call''s';
        END IF;
      END LOOP;
      IF s.status = 'drawn' THEN
        -- A draw's grant charges are within what it drew; what it drew is within what the lease
        -- still holds, while the lease is pending (core/src/ledger/Lease.ts takeDrawn).
        FOR k IN 1 .. coalesce(cardinality(s.grants), 0) LOOP
          h := coalesce(array_position(s.drawn_grants, s.grants[k]), 0);
          WHILE h > 0 AND s.drawn_grant_periods[h] <> s.grant_periods[k] LOOP
            h := coalesce(array_position(s.drawn_grants, s.grants[k], h + 1), 0);
          END LOOP;
          IF h = 0 OR s.grant_amounts[k] > s.drawn_grant_amounts[h] THEN
            RAISE EXCEPTION 'LedgerStore.draw: charges a grant beyond what the call drew of it';
          END IF;
        END LOOP;
        FOR k IN 1 .. coalesce(cardinality(s.drawn_scopes), 0) LOOP
          IF s.drawn_amounts[k] <= 0 OR (s.drawn_scopes[k] <> '' AND s.drawn_scopes[k] IS DISTINCT FROM r.machine_id)
             OR array_position(s.drawn_scopes, s.drawn_scopes[k]) <> k THEN
            RAISE EXCEPTION 'LedgerStore.draw: a draw of % in scope %', s.drawn_amounts[k], s.drawn_scopes[k];
          END IF;
        END LOOP;
        FOR k IN 1 .. coalesce(cardinality(s.drawn_grants), 0) LOOP
          IF s.drawn_grant_amounts[k] <= 0 THEN
            RAISE EXCEPTION 'LedgerStore.draw: a draw of % of grant %', s.drawn_grant_amounts[k], s.drawn_grants[k];
          END IF;
        END LOOP;
        released := 0;
        IF rs_status[j] = 'pending' THEN
          -- What the call was charged of each scope, up to what it drew there (core's chargedOf),
          -- comes off the lease; the rest of its draw stays with it.
          FOR k IN 1 .. coalesce(cardinality(s.drawn_scopes), 0) LOOP
            h := array_position(r.scopes, s.drawn_scopes[k]);
            IF h IS NULL OR s.drawn_amounts[k] > r.amounts[h] THEN
              RAISE EXCEPTION 'LedgerStore.draw: drew % of scope %, past what the lease holds', s.drawn_amounts[k], s.drawn_scopes[k];
            END IF;
            e := array_position(s.scopes, s.drawn_scopes[k]);
            taken := CASE WHEN e IS NULL THEN 0 ELSE least(s.drawn_amounts[k], -s.amounts[e]) END;
            IF taken > 0 THEN
              r.amounts[h] := r.amounts[h] - taken;
              released := released + taken;
              rel_accounts := rel_accounts || r.account_id;
              rel_scopes := rel_scopes || s.drawn_scopes[k];
              rel_amounts := rel_amounts || taken;
            END IF;
          END LOOP;
          FOR k IN 1 .. coalesce(cardinality(s.drawn_grants), 0) LOOP
            h := coalesce(array_position(r.grant_names, s.drawn_grants[k]), 0);
            WHILE h > 0 AND r.grant_periods[h] <> s.drawn_grant_periods[k] LOOP
              h := coalesce(array_position(r.grant_names, s.drawn_grants[k], h + 1), 0);
            END LOOP;
            IF h = 0 OR s.drawn_grant_amounts[k] > r.grant_amounts[h] THEN
              RAISE EXCEPTION 'LedgerStore.draw: drew % of grant %, past what the lease holds', s.drawn_grant_amounts[k], s.drawn_grants[k];
            END IF;
          END LOOP;
          -- Each grant charge (within what was drawn of it, checked above) comes off the lease.
          FOR k IN 1 .. coalesce(cardinality(s.grants), 0) LOOP
            h := coalesce(array_position(r.grant_names, s.grants[k]), 0);
            WHILE h > 0 AND r.grant_periods[h] <> s.grant_periods[k] LOOP
              h := coalesce(array_position(r.grant_names, s.grants[k], h + 1), 0);
            END LOOP;
            r.grant_amounts[h] := r.grant_amounts[h] - s.grant_amounts[k];
          END LOOP;
          rs[j] := r;
          IF NOT j = ANY (drained) THEN
            drained := drained || j;
          END IF;
        END IF;
        dr_req := dr_req || i;
        dr_lease := dr_lease || j;
        dr_held := dr_held || (rs_status[j] = 'pending');
        dr_released := dr_released || released;
        drawn := drawn || jsonb_build_object(s.ref, s.charged::text);
        outs := outs || ROW(i, true, CASE WHEN rs_status[j] = 'pending' THEN 'drawn' ELSE 'charged' END, s.charged)::ledger_finish_outcome;
        CONTINUE;
      END IF;
      FOR k IN 1 .. coalesce(cardinality(s.grants), 0) LOOP
        covered := false;
        FOR h IN 1 .. cardinality(r.grant_names) LOOP
          IF r.grant_names[h] = s.grants[k] AND r.grant_periods[h] = s.grant_periods[k] AND s.grant_amounts[k] <= r.grant_amounts[h] THEN
            covered := true;
          END IF;
        END LOOP;
        IF NOT covered THEN
          RAISE EXCEPTION 'LedgerStore.settle: charges a grant beyond what the reservation holds of it';
        END IF;
      END LOOP;
      rs_status[j] := s.status;
      rs_charged[j] := CASE WHEN s.status = 'settled' THEN s.charged END;
      fin_req := fin_req || i;
      fin_res := fin_res || j;
      outs := outs || ROW(i, true, s.status, rs_charged[j])::ledger_finish_outcome;
    END LOOP;
    IF cardinality(fin_req) > 0 OR cardinality(dr_req) > 0 THEN
      -- Their budget and grant month rows, then every balance row of their accounts (a charge may
      -- go to a scope the reservation did not hold), each locked once, in lock order.
      PERFORM 1 FROM ledger_budget_months m
        WHERE (m.account_id, m.month, m.budget) IN (
          SELECT (rs[t.j]).account_id, c.month, c.name
          FROM unnest(fin_res || dr_lease) AS t(j),
               unnest((rs[t.j]).budgets || (rs[t.j]).grant_names, (rs[t.j]).budget_months || (rs[t.j]).grant_periods)
                 AS c(name, month)
          UNION ALL
          SELECT (rs[t.j]).account_id, c.month, c.name
          FROM unnest(dr_req, dr_lease) AS t(i, j),
               unnest((p_requests[t.i]).grants, (p_requests[t.i]).grant_periods) AS c(name, month))
        ORDER BY m.account_id COLLATE "C", m.month COLLATE "C", m.budget COLLATE "C"
        FOR UPDATE;
      PERFORM 1 FROM ledger_balances b
        WHERE b.account_id IN (SELECT (rs[t.j]).account_id FROM unnest(fin_res || dr_lease) AS t(j))
        ORDER BY b.account_id COLLATE "C", b.scope COLLATE "C"
        FOR UPDATE;
      -- The leases drawn from keep what is left of their holds (none of zero).
      IF cardinality(drained) > 0 THEN
        UPDATE ledger_reservations lr
          SET scopes = ARRAY(SELECT a.scope FROM unnest((rs[t.j]).scopes, (rs[t.j]).amounts) WITH ORDINALITY AS a(scope, amount, o)
                             WHERE a.amount > 0 ORDER BY a.o),
              amounts = ARRAY(SELECT a.amount FROM unnest((rs[t.j]).amounts) WITH ORDINALITY AS a(amount, o)
                              WHERE a.amount > 0 ORDER BY a.o),
              grant_names = ARRAY(SELECT g.name FROM unnest((rs[t.j]).grant_names, (rs[t.j]).grant_amounts) WITH ORDINALITY AS g(name, amount, o)
                                  WHERE g.amount > 0 ORDER BY g.o),
              grant_periods = ARRAY(SELECT g.period FROM unnest((rs[t.j]).grant_periods, (rs[t.j]).grant_amounts) WITH ORDINALITY AS g(period, amount, o)
                                    WHERE g.amount > 0 ORDER BY g.o),
              grant_amounts = ARRAY(SELECT g.amount FROM unnest((rs[t.j]).grant_amounts) WITH ORDINALITY AS g(amount, o)
                                    WHERE g.amount > 0 ORDER BY g.o)
          FROM unnest(drained) AS t(j)
          WHERE lr.ref = (rs[t.j]).ref;
      END IF;
      UPDATE ledger_reservations lr
        SET status = (p_requests[t.i]).status, finished_at = (p_requests[t.i]).at,
            charged = CASE WHEN (p_requests[t.i]).status = 'settled' THEN (p_requests[t.i]).charged END,
            excess = CASE WHEN (p_requests[t.i]).status = 'settled' THEN (p_requests[t.i]).excess END
        FROM unnest(fin_req) AS t(i)
        WHERE lr.ref = (p_requests[t.i]).ref;
      -- Each call drawn: a settled reservation of what it drew, in the lease's budgets.
      IF cardinality(dr_req) > 0 THEN
        INSERT INTO ledger_reservations (ref, account_id, machine_id, scopes, amounts, status, created_at, expires_at,
                                         finished_at, charged, excess, budgets, budget_months,
                                         grant_names, grant_periods, grant_amounts)
          SELECT q.ref, (rs[t.j]).account_id, (rs[t.j]).machine_id, coalesce(q.drawn_scopes, '{}'), coalesce(q.drawn_amounts, '{}'),
                 'settled', q.at, (rs[t.j]).expires_at, q.at, q.charged, q.excess, (rs[t.j]).budgets, (rs[t.j]).budget_months,
                 coalesce(q.drawn_grants, '{}'), coalesce(q.drawn_grant_periods, '{}'), coalesce(q.drawn_grant_amounts, '{}')
          FROM unnest(dr_req, dr_lease) WITH ORDINALITY AS t(i, j, n)
          CROSS JOIN LATERAL (SELECT (p_requests[t.i]).*) AS q
          ORDER BY t.n;
      END IF;
      -- Budgets: a finish releases what the scopes held, a draw what its charge took off its lease (while its
      -- lease is pending); a settlement's or a draw's charge is spent. Grants: each hold released,
      -- a charge of it spent.
      UPDATE ledger_budget_months m SET held = m.held - d.held, spent = m.spent + d.spent
        FROM (SELECT x.account_id, x.month, x.name, sum(x.held) AS held, sum(x.spent) AS spent
              FROM (SELECT (rs[t.j]).account_id AS account_id, c.month, c.name,
                           (SELECT coalesce(sum(a), 0) FROM unnest((rs[t.j]).amounts) AS a)::bigint AS held,
                           CASE WHEN (p_requests[t.i]).status = 'settled' THEN (p_requests[t.i]).charged ELSE 0 END AS spent
                    FROM unnest(fin_req, fin_res) AS t(i, j),
                         unnest((rs[t.j]).budgets, (rs[t.j]).budget_months) AS c(name, month)
                    UNION ALL
                    SELECT (rs[t.j]).account_id, c.month, c.name, c.amount,
                           coalesce((SELECT sum(g.amount) FROM unnest((p_requests[t.i]).grants, (p_requests[t.i]).grant_periods,
                                                                      (p_requests[t.i]).grant_amounts) AS g(name, month, amount)
                                     WHERE (p_requests[t.i]).status = 'settled' AND g.name = c.name AND g.month = c.month), 0)
                    FROM unnest(fin_req, fin_res) AS t(i, j),
                         unnest((rs[t.j]).grant_names, (rs[t.j]).grant_periods, (rs[t.j]).grant_amounts) AS c(name, month, amount)
                    UNION ALL
                    SELECT (rs[t.j]).account_id, c.month, c.name, t.released, (p_requests[t.i]).charged
                    FROM unnest(dr_req, dr_lease, dr_released) AS t(i, j, released),
                         unnest((rs[t.j]).budgets, (rs[t.j]).budget_months) AS c(name, month)
                    UNION ALL
                    SELECT (rs[t.j]).account_id, g.month, g.name, CASE WHEN t.held THEN g.amount ELSE 0 END, g.amount
                    FROM unnest(dr_req, dr_lease, dr_held) AS t(i, j, held),
                         unnest((p_requests[t.i]).grants, (p_requests[t.i]).grant_periods,
                                (p_requests[t.i]).grant_amounts) AS g(name, month, amount)
                   ) AS x
              GROUP BY 1, 2, 3
              HAVING sum(x.held) <> 0 OR sum(x.spent) <> 0) AS d
        WHERE m.account_id = d.account_id AND m.month = d.month AND m.budget = d.name;
      -- Balances: holds released (rows that exist: a reservation only holds on one), charges
      -- posted (creating the scope for an excess). A new row has nothing to release.
      INSERT INTO ledger_balances AS b (account_id, scope, posted, held)
        SELECT x.account_id, x.scope, sum(x.posted), sum(x.released)
        FROM (SELECT (rs[t.j]).account_id AS account_id, a.scope, 0::bigint AS posted, a.amount AS released
              FROM unnest(fin_res) AS t(j), unnest((rs[t.j]).scopes, (rs[t.j]).amounts) AS a(scope, amount)
              UNION ALL
              SELECT a.account_id, a.scope, 0, a.amount
              FROM unnest(rel_accounts, rel_scopes, rel_amounts) AS a(account_id, scope, amount)
              UNION ALL
              SELECT (rs[t.j]).account_id, e.scope, e.amount, 0
              FROM unnest(fin_req || dr_req, fin_res || dr_lease) AS t(i, j),
                   unnest((p_requests[t.i]).scopes, (p_requests[t.i]).amounts) AS e(scope, amount)
              WHERE (p_requests[t.i]).status IN ('settled', 'drawn')) AS x
        GROUP BY x.account_id, x.scope
        HAVING sum(x.posted) <> 0 OR sum(x.released) <> 0
        ORDER BY x.account_id COLLATE "C", x.scope COLLATE "C"
        ON CONFLICT (account_id, scope) DO UPDATE SET posted = b.posted + excluded.posted, held = b.held - excluded.held;
      INSERT INTO ledger_entries (id, account_id, machine_id, amount, type, ref, created_at)
        SELECT e.id, (rs[t.j]).account_id, NULLIF(e.scope, ''), e.amount, 'usage', e.ref, e.created_at
        FROM unnest(fin_req || dr_req, fin_res || dr_lease) WITH ORDINALITY AS t(i, j, n),
             unnest((p_requests[t.i]).ids, (p_requests[t.i]).scopes, (p_requests[t.i]).amounts, (p_requests[t.i]).refs,
                    (p_requests[t.i]).created_at) WITH ORDINALITY AS e(id, scope, amount, ref, created_at, k)
        WHERE (p_requests[t.i]).status IN ('settled', 'drawn')
        ORDER BY t.n, e.k;
    END IF;
    RETURN QUERY SELECT * FROM unnest(outs);
  END
  $$`

/** 0017's signature and answer, as a batch of one (0024's, with the request's new attributes). */
const finish = `
  CREATE OR REPLACE FUNCTION ledger_finish(
    p_ref text, p_status text, p_at timestamptz, p_charged bigint, p_excess bigint,
    p_ids text[], p_account_ids text[], p_scopes text[], p_amounts bigint[], p_refs text[],
    p_created_at timestamptz[], p_grants text[], p_grant_periods text[], p_grant_amounts bigint[]
  ) RETURNS boolean LANGUAGE sql AS $$
    SELECT o.finished
    FROM ledger_finish_batch(ARRAY[ROW(p_ref, p_status, p_at, p_charged, p_excess, p_ids, p_account_ids, p_scopes,
                                       p_amounts, p_refs, p_created_at, p_grants, p_grant_periods,
                                       p_grant_amounts, NULL, NULL, NULL, NULL, NULL, NULL)::ledger_finish_request]) AS o
  $$`

/**
 * 0024's, but a metered call whose settlement names a lease is a draw: a call drawn is
 * "settled" (charged, its lease pending or not), a draw replayed "not_pending" with its charge.
 */
const commit = `
  CREATE OR REPLACE FUNCTION gateway_commit(p_items jsonb)
  RETURNS TABLE (n integer, settlement text, recorded boolean) LANGUAGE plpgsql
  ${BY_KEY} ${GENERIC} AS $$
  #variable_conflict use_column
  DECLARE
    sets ledger_finish_request[];
    recs usage_records[];
    requests ledger_finish_request[] := '{}';
    o_req integer[] := '{}';
    outs ledger_finish_outcome[];
    o ledger_finish_outcome;
    outcomes text[] := '{}';
    inserted text[];
    cnt integer;
    i integer;
  BEGIN
    SELECT array_agg(CASE WHEN jsonb_typeof(e.v->'settlement') = 'object'
                          THEN jsonb_populate_record(NULL::ledger_finish_request, e.v->'settlement' ||
                                 CASE WHEN e.v->'settlement' ? 'lease' THEN '{"status":"drawn"}' ELSE '{"status":"settled"}' END::jsonb) END
                     ORDER BY e.o),
           array_agg(jsonb_populate_record(NULL::usage_records, e.v->'record') ORDER BY e.o)
      INTO sets, recs
      FROM jsonb_array_elements(p_items) WITH ORDINALITY AS e(v, o);
    cnt := coalesce(cardinality(recs), 0);
    IF cnt = 0 THEN
      RETURN;
    END IF;
    FOR i IN 1 .. cnt LOOP
      IF (sets[i]).ref IS NOT NULL THEN
        requests := requests || sets[i];
        o_req[i] := cardinality(requests);
      END IF;
    END LOOP;
    IF cardinality(requests) > 0 THEN
      outs := ARRAY(SELECT f FROM ledger_finish_batch(requests) AS f ORDER BY f.n);
    END IF;
    FOR i IN 1 .. cnt LOOP
      IF o_req[i] IS NULL THEN
        outcomes := outcomes || 'none'::text;
        CONTINUE;
      END IF;
      o := outs[o_req[i]];
      IF o.finished THEN
        outcomes := outcomes || 'settled'::text;
      ELSE
        outcomes := outcomes || 'not_pending'::text;
        IF o.status = 'settled' THEN
          recs[i].credits := o.charged;
        ELSE
          recs[i].credits := 0;
          recs[i].from_allowance := 0;
          recs[i].from_trial := 0;
        END IF;
      END IF;
    END LOOP;
    WITH written AS (
      INSERT INTO usage_records SELECT * FROM unnest(recs) ON CONFLICT (ref) DO NOTHING RETURNING ref
    )
    SELECT COALESCE(array_agg(written.ref), '{}') INTO inserted FROM written;
    RETURN QUERY
      SELECT u.i::integer, outcomes[u.i], u.r = ANY (inserted) AND u.i = min(u.i) OVER (PARTITION BY u.r)
      FROM (SELECT g AS i, (recs[g]).ref AS r FROM generate_subscripts(recs, 1) AS g) AS u
      ORDER BY u.i;
  END
  $$`

/**
 * 0024's, but an admission takes `hits` hits of its rpm window at once (1 when absent: a lease
 * takes its calls' hits ahead), all counted, and is refused when its first hit passes the limit.
 */
const admitBatch = `
  CREATE OR REPLACE FUNCTION gateway_admit_batch(p_items jsonb)
  RETURNS TABLE (n integer, result text, hits integer, scopes text[], amounts bigint[], available bigint,
                 budget text, lim bigint, used bigint,
                 grant_names text[], grant_periods text[], grant_amounts bigint[]) LANGUAGE plpgsql
  ${BY_KEY} ${GENERIC} AS $$
  #variable_conflict use_column
  DECLARE
    its gateway_admission[];
    live boolean[];
    o_hits integer[];
    o_result text[] := '{}';
    o_req integer[] := '{}';
    requests ledger_reserve_request[] := '{}';
    outs ledger_reserve_outcome[];
    o ledger_reserve_outcome;
    cnt integer;
    touched boolean := false;
    i integer;
  BEGIN
    -- The items, and whether each one's key is live (of the account given).
    SELECT array_agg(x.a ORDER BY x.o),
           array_agg(EXISTS (SELECT 1 FROM api_keys k WHERE k.id = (x.a).key_id AND k.account_id = (x.a).account_id
                                                        AND k.revoked_at IS NULL) ORDER BY x.o)
      INTO its, live
      FROM (SELECT jsonb_populate_record(NULL::gateway_admission, e.v) AS a, e.o
            FROM jsonb_array_elements(p_items) WITH ORDINALITY AS e(v, o)) AS x;
    cnt := coalesce(cardinality(its), 0);
    IF cnt = 0 THEN
      RETURN;
    END IF;
    FOR i IN 1 .. cnt LOOP
      touched := touched OR (live[i] AND (its[i]).touch_at IS NOT NULL);
    END LOOP;
    -- last_used_at moved forward, never back, keys locked in id order first (two batches touching
    -- the same keys must not lock them in opposite orders).
    IF touched THEN
      PERFORM 1 FROM api_keys k
        WHERE k.id IN (SELECT u.key_id FROM unnest(its) WITH ORDINALITY AS u WHERE live[u.ordinality] AND u.touch_at IS NOT NULL)
        ORDER BY k.id COLLATE "C" FOR UPDATE;
      UPDATE api_keys k SET last_used_at = t.at
        FROM (SELECT u.key_id, max(u.touch_at) AS at FROM unnest(its) WITH ORDINALITY AS u
              WHERE live[u.ordinality] AND u.touch_at IS NOT NULL GROUP BY u.key_id) AS t
        WHERE k.id = t.key_id AND (k.last_used_at IS NULL OR k.last_used_at < t.at);
    END IF;
    -- The rpm counts: each window of the batch counted once, by its live admissions' hits (windows
    -- in lock order); each admission's count is the window's count before the batch plus the hits
    -- of the admissions before it in the batch and its own.
    WITH calls AS (
      SELECT u.ordinality AS o, u.bucket, u.window_start, u.window_end,
             sum(coalesce(u.hits, 1)) OVER (PARTITION BY u.bucket, u.window_start ORDER BY u.ordinality) AS place
      FROM unnest(its) WITH ORDINALITY AS u WHERE live[u.ordinality]),
    windows AS (
      SELECT c.bucket, c.window_start, (array_agg(c.window_end ORDER BY c.o))[1] AS window_end,
             max(c.place)::integer AS batch_calls
      FROM calls AS c GROUP BY c.bucket, c.window_start),
    counted AS (
      INSERT INTO rate_limit_windows AS w (bucket, window_start, window_end, count)
        SELECT ws.bucket, ws.window_start, ws.window_end, ws.batch_calls FROM windows AS ws
        ORDER BY ws.bucket COLLATE "C", ws.window_start
        ON CONFLICT (bucket, window_start) DO UPDATE SET count = w.count + excluded.count
        RETURNING w.bucket, w.window_start, w.count)
    SELECT array_agg((ct.count - ws.batch_calls + c.place)::integer ORDER BY g.o)
      INTO o_hits
      FROM generate_series(1, cnt) AS g(o)
      LEFT JOIN calls AS c ON c.o = g.o
      LEFT JOIN windows AS ws ON ws.bucket = c.bucket AND ws.window_start = c.window_start
      LEFT JOIN counted AS ct ON ct.bucket = c.bucket AND ct.window_start = c.window_start;
    FOR i IN 1 .. cnt LOOP
      IF NOT live[i] THEN
        o_result[i] := 'key_revoked';
      ELSIF o_hits[i] - coalesce((its[i]).hits, 1) + 1 > (its[i]).rpm_limit THEN
        o_result[i] := 'rate_limited';
      ELSIF ((its[i]).reservation).ref IS NULL THEN
        o_result[i] := 'admitted';
      ELSE
        requests := requests || (its[i]).reservation;
        o_req[i] := cardinality(requests);
      END IF;
    END LOOP;
    IF cardinality(requests) > 0 THEN
      outs := ARRAY(SELECT r FROM ledger_reserve_batch(requests) AS r ORDER BY r.n);
    END IF;
    FOR i IN 1 .. cnt LOOP
      n := i;
      hits := o_hits[i];
      IF o_req[i] IS NULL THEN
        result := o_result[i];
        scopes := NULL; amounts := NULL; available := NULL; budget := NULL; lim := NULL; used := NULL;
        grant_names := NULL; grant_periods := NULL; grant_amounts := NULL;
      ELSE
        o := outs[o_req[i]];
        result := o.result;
        scopes := o.scopes; amounts := o.amounts; available := o.available;
        budget := o.budget; lim := o.lim; used := o.used;
        grant_names := o.grant_names; grant_periods := o.grant_periods; grant_amounts := o.grant_amounts;
      END IF;
      RETURN NEXT;
    END LOOP;
  END
  $$`
