/**
 * The ledger's reservations and finishes as set-based batch functions (docs/performance.md
 * "Budgets without the cost"), and the gateway's two batch functions on them:
 *
 * - `ledger_reserve_batch(ledger_reserve_request[])`: reserves requests in the order given, each
 *   as `ledger_reserve_in_order` of 0017 does (grants first, then the budgets checked against what
 *   is left, then the scopes), each seeing the holds of the earlier ones. Each row it needs is
 *   locked ONCE per batch, in the one lock order (month rows by (account, month, name) under "C",
 *   then balance rows by (account, scope) under "C"), with one statement per table: where 0017
 *   locked every claim's month row up to five times per call (the batch, the reserve, the check;
 *   each an INSERT ... ON CONFLICT and a SELECT ... FOR UPDATE per row). The allocation is worked
 *   out in memory; then the reservations are inserted in one statement and the holds added with
 *   one UPDATE per table, only where something changes.
 * - `ledger_finish_batch(ledger_finish_request[])`: finishes reservations (settled, voided,
 *   expired) in the order given, each as `ledger_finish` of 0017 did, with the same rules raising
 *   the same exceptions; reservations, month rows and balance rows each locked once per batch in
 *   that order, then one UPDATE or INSERT per table.
 * - `ledger_reserve_in_order` and `ledger_finish` (PgLedgerStore.ts) are batches of one of them, so
 *   the rules are written once.
 * - `gateway_admit_batch` (PgGatewayStore.ts): the keys still live, their touches and the rpm
 *   counts of the whole batch in three statements, then `ledger_reserve_batch` of the calls
 *   admitted with a reservation. `gateway_commit`: `ledger_finish_batch` of the settlements, then
 *   the usage records in one INSERT (0011's rollup trigger runs once per batch).
 *
 * What a call does not have costs nothing: a grant spent out (spent >= size, which never goes
 * down) is read but neither locked nor held, and a claim with nothing to add writes no row (0017
 * wrote `held + 0`). Month rows are created only where a claim's row does not exist yet (a new
 * month, a first use): then, as before, row by row in lock order (`ledger_budgets_lock`), since
 * creating a row out of order could deadlock with a batch creating the same one.
 *
 * Rows the batch reads are found through jsonb objects keyed by `jsonb_build_array(...)::text`
 * (an unambiguous key), so a batch of any size costs one lookup per claim, not a scan.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export const ledgerBatches = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  for (const statement of [...types, reserveBatch, finishBatch, reserveInOrder, finish, admitBatch, commit]) {
    yield* sql.unsafe(statement)
  }
  // Admission is gateway_admit_batch alone now.
  yield* sql`
    DROP FUNCTION gateway_admit(text, text, timestamptz, text, bigint, bigint, integer, text, text, text[], bigint,
                                timestamptz, timestamptz, text[], text[], bigint[], text[], text[], bigint[])`
})

/**
 * Every statement of the batch functions finds its rows by key (each batch is a few rows of
 * tables that grow with every call and account). The planner cannot know a batch's size when it
 * plans them once for all calls (an array of unknown length, estimated at 100 elements), and chose
 * to read whole tables (a hash join, a sequential scan): per call, work that grew with the table.
 * So index lookups only (GatewayCost.test.ts counts the rows read by sequential scans: none).
 */
const BY_KEY = "SET enable_hashjoin = off SET enable_mergejoin = off SET enable_seqscan = off"

const types = [
  `
  CREATE TYPE ledger_reserve_request AS (
    ref text, account_id text, machine_id text, scope_order text[], amount bigint,
    created_at timestamptz, expires_at timestamptz,
    budgets text[], budget_months text[], budget_defaults bigint[],
    grants text[], grant_periods text[], grant_sizes bigint[]
  )`,
  `
  CREATE TYPE ledger_reserve_outcome AS (
    n integer, result text, scopes text[], amounts bigint[], available bigint,
    budget text, lim bigint, used bigint,
    grant_names text[], grant_periods text[], grant_amounts bigint[]
  )`,
  `
  CREATE TYPE ledger_finish_request AS (
    ref text, status text, at timestamptz, charged bigint, excess bigint,
    ids text[], account_ids text[], scopes text[], amounts bigint[], refs text[], created_at timestamptz[],
    grants text[], grant_periods text[], grant_amounts bigint[]
  )`,
  `
  CREATE TYPE ledger_finish_outcome AS (
    n integer, finished boolean, status text, charged bigint
  )`,
  `
  CREATE TYPE gateway_admission AS (
    account_id text, key_id text, touch_at timestamptz,
    bucket text, window_start bigint, window_end bigint, rpm_limit integer,
    reservation ledger_reserve_request
  )`
]

const reserveBatch = `
  CREATE FUNCTION ledger_reserve_batch(p_requests ledger_reserve_request[])
  RETURNS SETOF ledger_reserve_outcome LANGUAGE plpgsql
  ${BY_KEY} AS $$
  #variable_conflict use_column
  DECLARE
    cnt integer := coalesce(cardinality(p_requests), 0);
    q ledger_reserve_request;
    o ledger_reserve_outcome;
    outs ledger_reserve_outcome[] := '{}';
    c_account text[]; c_month text[]; c_name text[]; c_grant boolean[]; c_size bigint[];
    existing bigint;
    dup_refs text[];
    m_index jsonb; m_spent bigint[]; m_held bigint[];
    l_index jsonb;
    b_index jsonb; b_free bigint[];
    seen text[] := '{}';
    res_ref text[] := '{}'; res_from bigint[] := '{}'; res_n integer[] := '{}';
    inserted text[];
    any_hold boolean := false;
    i integer; k integer; j integer;
    remaining bigint; free bigint; take bigint; from_scopes bigint; avail bigint; lim_k bigint; used_k bigint;
    refused boolean;
  BEGIN
    IF cnt = 0 THEN
      RETURN;
    END IF;
    -- The claims' month rows, distinct; the refs that exist; how many of the rows exist.
    SELECT array_agg(d.account_id), array_agg(d.month), array_agg(d.name), array_agg(d.is_grant), array_agg(d.size)
      INTO c_account, c_month, c_name, c_grant, c_size
      FROM (SELECT r.account_id, t.month, t.name, bool_or(t.is_grant) AS is_grant, max(t.size) AS size
            FROM unnest(p_requests) AS r,
                 LATERAL (SELECT b.name, b.month, false AS is_grant, NULL::bigint AS size
                          FROM unnest(r.budgets, r.budget_months) AS b(name, month)
                          UNION ALL
                          SELECT g.name, g.month, true, g.size
                          FROM unnest(r.grants, r.grant_periods, r.grant_sizes) AS g(name, month, size)) AS t
            GROUP BY 1, 2, 3) AS d;
    SELECT ARRAY(SELECT lr.ref FROM ledger_reservations lr WHERE lr.ref = ANY (ARRAY(SELECT r.ref FROM unnest(p_requests) AS r))),
           (SELECT count(*) FROM ledger_budget_months m
            JOIN unnest(c_account, c_month, c_name) AS c(account_id, month, name)
              ON m.account_id = c.account_id AND m.month = c.month AND m.budget = c.name)
      INTO dup_refs, existing;
    -- Month rows: created where missing (row by row, in lock order), then locked once, in lock
    -- order; a grant spent out is left unlocked (it has nothing to give whatever happens meanwhile).
    IF coalesce(cardinality(c_account), 0) > 0 THEN
      IF existing < cardinality(c_account) THEN
        PERFORM ledger_budgets_lock(c_account, c_name, c_month);
      END IF;
      SELECT jsonb_object_agg(y.k, y.o), array_agg(y.spent ORDER BY y.o), array_agg(y.held ORDER BY y.o)
        INTO m_index, m_spent, m_held
        FROM (SELECT jsonb_build_array(x.account_id, x.month, x.budget)::text AS k, x.spent, x.held,
                     row_number() OVER (ORDER BY x.account_id COLLATE "C", x.month COLLATE "C", x.budget COLLATE "C") AS o
              FROM (SELECT m.account_id, m.month, m.budget, m.spent, m.held
                    FROM ledger_budget_months m
                    JOIN unnest(c_account, c_month, c_name, c_grant, c_size) AS c(account_id, month, name, is_grant, size)
                      ON m.account_id = c.account_id AND m.month = c.month AND m.budget = c.name
                    WHERE NOT c.is_grant OR m.spent < c.size
                    ORDER BY m.account_id COLLATE "C", m.month COLLATE "C", m.budget COLLATE "C"
                    FOR UPDATE OF m) AS x) AS y;
    END IF;
    -- After the month rows are locked (a new statement, so a limit set before is seen: 0012), the
    -- limits of the batch's accounts, and the balance rows the requests may take from, locked.
    SELECT (SELECT jsonb_object_agg(jsonb_build_array(l.account_id, l.budget)::text, l.monthly_limit)
            FROM ledger_budget_limits l WHERE l.account_id = ANY (ARRAY(SELECT r.account_id FROM unnest(p_requests) AS r))),
           jsonb_object_agg(y.k, y.o) FILTER (WHERE y.k IS NOT NULL), array_agg(y.free ORDER BY y.o)
      INTO l_index, b_index, b_free
      FROM (SELECT jsonb_build_array(x.account_id, x.scope)::text AS k, x.free,
                   row_number() OVER (ORDER BY x.account_id COLLATE "C", x.scope COLLATE "C") AS o
            FROM (SELECT b.account_id, b.scope, b.posted - b.held AS free
                  FROM ledger_balances b
                  WHERE (b.account_id, b.scope) IN (SELECT r.account_id, s.scope
                                                    FROM unnest(p_requests) AS r, unnest(r.scope_order) AS s(scope)
                                                    WHERE NOT (r.ref = ANY (dup_refs)))
                  ORDER BY b.account_id COLLATE "C", b.scope COLLATE "C"
                  FOR UPDATE OF b) AS x) AS y;
    -- Each request in order, against what the earlier ones left.
    FOR i IN 1 .. cnt LOOP
      q := p_requests[i];
      o := ROW(i, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)::ledger_reserve_outcome;
      IF q.ref = ANY (dup_refs) OR q.ref = ANY (seen) THEN
        o.result := 'duplicate';
        outs := outs || o;
        CONTINUE;
      END IF;
      remaining := q.amount;
      avail := 0;
      o.grant_names := '{}';
      o.grant_periods := '{}';
      o.grant_amounts := '{}';
      FOR k IN 1 .. coalesce(cardinality(q.grants), 0) LOOP
        j := (m_index ->> jsonb_build_array(q.account_id, q.grant_periods[k], q.grants[k])::text)::integer;
        CONTINUE WHEN j IS NULL;
        free := q.grant_sizes[k] - m_spent[j] - m_held[j];
        CONTINUE WHEN free <= 0;
        avail := avail + free;
        CONTINUE WHEN remaining = 0;
        take := LEAST(free, remaining);
        o.grant_names := o.grant_names || q.grants[k];
        o.grant_periods := o.grant_periods || q.grant_periods[k];
        o.grant_amounts := o.grant_amounts || take;
        remaining := remaining - take;
      END LOOP;
      from_scopes := remaining;
      refused := false;
      FOR k IN 1 .. coalesce(cardinality(q.budgets), 0) LOOP
        j := (m_index ->> jsonb_build_array(q.account_id, q.budget_months[k], q.budgets[k])::text)::integer;
        lim_k := coalesce((l_index ->> jsonb_build_array(q.account_id, q.budgets[k])::text)::bigint, q.budget_defaults[k]);
        used_k := m_spent[j] + m_held[j];
        IF lim_k IS NOT NULL AND used_k + from_scopes > lim_k THEN
          o.result := 'over_budget';
          o.budget := q.budgets[k];
          o.lim := lim_k;
          o.used := used_k;
          o.grant_names := NULL;
          o.grant_periods := NULL;
          o.grant_amounts := NULL;
          refused := true;
          EXIT;
        END IF;
      END LOOP;
      IF refused THEN
        outs := outs || o;
        CONTINUE;
      END IF;
      o.scopes := '{}';
      o.amounts := '{}';
      FOR k IN 1 .. coalesce(cardinality(q.scope_order), 0) LOOP
        j := (b_index ->> jsonb_build_array(q.account_id, q.scope_order[k])::text)::integer;
        CONTINUE WHEN j IS NULL;
        free := b_free[j];
        CONTINUE WHEN free <= 0;
        avail := avail + free;
        CONTINUE WHEN remaining = 0;
        take := LEAST(free, remaining);
        o.scopes := o.scopes || q.scope_order[k];
        o.amounts := o.amounts || take;
        remaining := remaining - take;
      END LOOP;
      IF remaining > 0 THEN
        o.result := 'insufficient';
        o.available := avail;
        o.scopes := NULL;
        o.amounts := NULL;
        o.grant_names := NULL;
        o.grant_periods := NULL;
        o.grant_amounts := NULL;
        outs := outs || o;
        CONTINUE;
      END IF;
      -- Reserved: its holds count for the requests after it.
      FOR k IN 1 .. cardinality(o.scopes) LOOP
        j := (b_index ->> jsonb_build_array(q.account_id, o.scopes[k])::text)::integer;
        b_free[j] := b_free[j] - o.amounts[k];
      END LOOP;
      FOR k IN 1 .. cardinality(o.grant_names) LOOP
        j := (m_index ->> jsonb_build_array(q.account_id, o.grant_periods[k], o.grant_names[k])::text)::integer;
        m_held[j] := m_held[j] + o.grant_amounts[k];
      END LOOP;
      IF from_scopes > 0 THEN
        FOR k IN 1 .. coalesce(cardinality(q.budgets), 0) LOOP
          j := (m_index ->> jsonb_build_array(q.account_id, q.budget_months[k], q.budgets[k])::text)::integer;
          m_held[j] := m_held[j] + from_scopes;
        END LOOP;
      END IF;
      any_hold := any_hold OR from_scopes > 0 OR cardinality(o.grant_names) > 0;
      o.result := 'reserved';
      o.available := avail;
      outs := outs || o;
      seen := seen || q.ref;
      res_ref := res_ref || q.ref;
      res_from := res_from || from_scopes;
      res_n := res_n || i;
    END LOOP;
    IF cardinality(res_ref) > 0 THEN
      WITH ins AS (
        INSERT INTO ledger_reservations (ref, account_id, machine_id, scopes, amounts, status, created_at, expires_at,
                                         budgets, budget_months, grant_names, grant_periods, grant_amounts)
          SELECT rq.ref, rq.account_id, rq.machine_id, ro.scopes, ro.amounts, 'pending', rq.created_at, rq.expires_at,
                 coalesce(rq.budgets, '{}'), coalesce(rq.budget_months, '{}'), ro.grant_names, ro.grant_periods, ro.grant_amounts
          FROM unnest(res_n) WITH ORDINALITY AS t(i, k)
          CROSS JOIN LATERAL (SELECT (p_requests[t.i]).*) AS rq
          CROSS JOIN LATERAL (SELECT (outs[t.i]).*) AS ro
          ORDER BY t.k
          ON CONFLICT (ref) DO NOTHING
          RETURNING ref)
      SELECT coalesce(array_agg(ins.ref), '{}') INTO inserted FROM ins;
      -- A ref inserted meanwhile by another transaction: that request is a duplicate, nothing held.
      IF cardinality(inserted) < cardinality(res_ref) THEN
        FOR k IN 1 .. cardinality(res_n) LOOP
          CONTINUE WHEN res_ref[k] = ANY (inserted);
          outs[res_n[k]] := ROW(res_n[k], 'duplicate', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)::ledger_reserve_outcome;
        END LOOP;
      END IF;
      UPDATE ledger_balances b SET held = b.held + d.amount
        FROM (SELECT (p_requests[t.i]).account_id AS account_id, a.scope, sum(a.amount) AS amount
              FROM unnest(res_n) AS t(i), unnest((outs[t.i]).scopes, (outs[t.i]).amounts) AS a(scope, amount)
              WHERE (outs[t.i]).result = 'reserved'
              GROUP BY 1, 2) AS d
        WHERE b.account_id = d.account_id AND b.scope = d.scope;
      IF any_hold THEN
        UPDATE ledger_budget_months m SET held = m.held + d.amount
          FROM (SELECT x.account_id, x.month, x.name, sum(x.amount) AS amount
                FROM (SELECT (p_requests[t.i]).account_id AS account_id, c.month, c.name, t.from_scopes AS amount
                      FROM unnest(res_n, res_from) AS t(i, from_scopes),
                           unnest((p_requests[t.i]).budgets, (p_requests[t.i]).budget_months) AS c(name, month)
                      WHERE (outs[t.i]).result = 'reserved'
                      UNION ALL
                      SELECT (p_requests[t.i]).account_id, c.month, c.name, c.amount
                      FROM unnest(res_n) AS t(i),
                           unnest((outs[t.i]).grant_names, (outs[t.i]).grant_periods, (outs[t.i]).grant_amounts)
                             AS c(name, month, amount)
                      WHERE (outs[t.i]).result = 'reserved') AS x
                GROUP BY 1, 2, 3
                HAVING sum(x.amount) <> 0) AS d
          WHERE m.account_id = d.account_id AND m.month = d.month AND m.budget = d.name;
      END IF;
    END IF;
    RETURN QUERY SELECT * FROM unnest(outs);
  END
  $$`

const finishBatch = `
  CREATE FUNCTION ledger_finish_batch(p_requests ledger_finish_request[])
  RETURNS SETOF ledger_finish_outcome LANGUAGE plpgsql
  ${BY_KEY} AS $$
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
    i integer; j integer; k integer; h integer;
    covered boolean;
  BEGIN
    IF cnt = 0 THEN
      RETURN;
    END IF;
    -- The reservations, locked first (by ref, "C"), whatever their status.
    SELECT array_agg(y.lr ORDER BY y.o), jsonb_object_agg((y.lr).ref, y.o), array_agg((y.lr).status ORDER BY y.o),
           array_agg((y.lr).charged ORDER BY y.o)
      INTO rs, rs_index, rs_status, rs_charged
      FROM (SELECT x.lr, row_number() OVER (ORDER BY (x.lr).ref COLLATE "C") AS o
            FROM (SELECT lr FROM ledger_reservations lr
                  WHERE lr.ref = ANY (ARRAY(SELECT q.ref FROM unnest(p_requests) AS q))
                  ORDER BY lr.ref COLLATE "C"
                  FOR UPDATE) AS x) AS y;
    FOR i IN 1 .. cnt LOOP
      s := p_requests[i];
      j := (rs_index ->> s.ref)::integer;
      IF j IS NULL OR rs_status[j] <> 'pending' THEN
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
    IF cardinality(fin_req) > 0 THEN
      -- Their budget and grant month rows, then every balance row of their accounts (a charge may
      -- go to a scope the reservation did not hold), each locked once, in lock order.
      PERFORM 1 FROM ledger_budget_months m
        WHERE (m.account_id, m.month, m.budget) IN (
          SELECT (rs[t.j]).account_id, c.month, c.name
          FROM unnest(fin_res) AS t(j),
               unnest((rs[t.j]).budgets || (rs[t.j]).grant_names, (rs[t.j]).budget_months || (rs[t.j]).grant_periods)
                 AS c(name, month))
        ORDER BY m.account_id COLLATE "C", m.month COLLATE "C", m.budget COLLATE "C"
        FOR UPDATE;
      PERFORM 1 FROM ledger_balances b
        WHERE b.account_id IN (SELECT (rs[t.j]).account_id FROM unnest(fin_res) AS t(j))
        ORDER BY b.account_id COLLATE "C", b.scope COLLATE "C"
        FOR UPDATE;
      UPDATE ledger_reservations lr
        SET status = (p_requests[t.i]).status, finished_at = (p_requests[t.i]).at,
            charged = CASE WHEN (p_requests[t.i]).status = 'settled' THEN (p_requests[t.i]).charged END,
            excess = CASE WHEN (p_requests[t.i]).status = 'settled' THEN (p_requests[t.i]).excess END
        FROM unnest(fin_req) AS t(i)
        WHERE lr.ref = (p_requests[t.i]).ref;
      -- Budgets: the hold (what the scopes held) released, a settlement's charge spent; grants:
      -- each hold released, a settlement's charge of it spent.
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
              SELECT (rs[t.j]).account_id, e.scope, e.amount, 0
              FROM unnest(fin_req, fin_res) AS t(i, j),
                   unnest((p_requests[t.i]).scopes, (p_requests[t.i]).amounts) AS e(scope, amount)
              WHERE (p_requests[t.i]).status = 'settled') AS x
        GROUP BY x.account_id, x.scope
        HAVING sum(x.posted) <> 0 OR sum(x.released) <> 0
        ORDER BY x.account_id COLLATE "C", x.scope COLLATE "C"
        ON CONFLICT (account_id, scope) DO UPDATE SET posted = b.posted + excluded.posted, held = b.held - excluded.held;
      INSERT INTO ledger_entries (id, account_id, machine_id, amount, type, ref, created_at)
        SELECT e.id, (rs[t.j]).account_id, NULLIF(e.scope, ''), e.amount, 'usage', e.ref, e.created_at
        FROM unnest(fin_req, fin_res) WITH ORDINALITY AS t(i, j, n),
             unnest((p_requests[t.i]).ids, (p_requests[t.i]).scopes, (p_requests[t.i]).amounts, (p_requests[t.i]).refs,
                    (p_requests[t.i]).created_at) WITH ORDINALITY AS e(id, scope, amount, ref, created_at, k)
        WHERE (p_requests[t.i]).status = 'settled'
        ORDER BY t.n, e.k;
    END IF;
    RETURN QUERY SELECT * FROM unnest(outs);
  END
  $$`

/** 0017's signature and answers, as a batch of one. */
const reserveInOrder = `
  CREATE OR REPLACE FUNCTION ledger_reserve_in_order(
    p_ref text, p_account_id text, p_machine_id text, p_order text[], p_amount bigint,
    p_created_at timestamptz, p_expires_at timestamptz,
    p_budgets text[], p_budget_months text[], p_budget_defaults bigint[],
    p_grants text[], p_grant_periods text[], p_grant_sizes bigint[],
    OUT result text, OUT scopes text[], OUT amounts bigint[], OUT available bigint,
    OUT budget text, OUT lim bigint, OUT used bigint,
    OUT grant_names text[], OUT grant_periods text[], OUT grant_amounts bigint[]
  ) LANGUAGE sql AS $$
    SELECT o.result, o.scopes, o.amounts, o.available, o.budget, o.lim, o.used, o.grant_names, o.grant_periods, o.grant_amounts
    FROM ledger_reserve_batch(ARRAY[ROW(p_ref, p_account_id, p_machine_id, p_order, p_amount, p_created_at, p_expires_at,
                                        p_budgets, p_budget_months, p_budget_defaults, p_grants, p_grant_periods,
                                        p_grant_sizes)::ledger_reserve_request]) AS o
  $$`

/** 0017's signature and answer, as a batch of one. */
const finish = `
  CREATE OR REPLACE FUNCTION ledger_finish(
    p_ref text, p_status text, p_at timestamptz, p_charged bigint, p_excess bigint,
    p_ids text[], p_account_ids text[], p_scopes text[], p_amounts bigint[], p_refs text[],
    p_created_at timestamptz[], p_grants text[], p_grant_periods text[], p_grant_amounts bigint[]
  ) RETURNS boolean LANGUAGE sql AS $$
    SELECT o.finished
    FROM ledger_finish_batch(ARRAY[ROW(p_ref, p_status, p_at, p_charged, p_excess, p_ids, p_account_ids, p_scopes,
                                       p_amounts, p_refs, p_created_at, p_grants, p_grant_periods,
                                       p_grant_amounts)::ledger_finish_request]) AS o
  $$`

const admitBatch = `
  CREATE OR REPLACE FUNCTION gateway_admit_batch(p_items jsonb)
  RETURNS TABLE (n integer, result text, hits integer, scopes text[], amounts bigint[], available bigint,
                 budget text, lim bigint, used bigint,
                 grant_names text[], grant_periods text[], grant_amounts bigint[]) LANGUAGE plpgsql
  ${BY_KEY} AS $$
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
    -- The rpm counts: each window of the batch counted once, by its live calls (windows in lock
    -- order); each call's count is the window's count before the batch plus its rank in it.
    WITH calls AS (
      SELECT u.ordinality AS o, u.bucket, u.window_start, u.window_end,
             row_number() OVER (PARTITION BY u.bucket, u.window_start ORDER BY u.ordinality) AS place
      FROM unnest(its) WITH ORDINALITY AS u WHERE live[u.ordinality]),
    windows AS (
      SELECT c.bucket, c.window_start, (array_agg(c.window_end ORDER BY c.o))[1] AS window_end, count(*)::integer AS batch_calls
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
      ELSIF o_hits[i] > (its[i]).rpm_limit THEN
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

/**
 * 0017's answers: the settlements finished as one batch, then the records in one INSERT; a call
 * whose reservation was no longer pending is recorded with what it was charged when settled (a
 * replay, or the same call twice in a batch), else with credits, from_allowance and from_trial 0.
 */
const commit = `
  CREATE OR REPLACE FUNCTION gateway_commit(p_items jsonb)
  RETURNS TABLE (n integer, settlement text, recorded boolean) LANGUAGE plpgsql
  ${BY_KEY} AS $$
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
                          THEN jsonb_populate_record(NULL::ledger_finish_request, e.v->'settlement' || '{"status":"settled"}'::jsonb) END
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
