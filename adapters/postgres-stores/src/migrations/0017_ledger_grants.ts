/**
 * The ledger's grants (core/src/ledger/LedgerStore.ts `GrantClaim`, docs/billing.md "Allowances
 * and the trial"; PgBudgets.ts reads them):
 * - Per (account, grant, period) `spent` and `held` are kept in `ledger_budget_months` (0012),
 *   the grant's name in `budget` ("allowance:<service>", "trial:<service>": never a budget's name)
 *   and its period in `month` (YYYY-MM, or "once"). So `ledger_budgets_lock` locks them, and the
 *   lock order of 0012 (a reservation row, then month rows by (account, month, budget) under "C",
 *   then balance rows) covers grants too: every function below locks its budget claims' rows AND
 *   its grants' rows in ONE call of `ledger_budgets_lock`, before any balance row.
 * - `ledger_reservations.grant_names` / `grant_periods` / `grant_amounts`: a reservation's grant
 *   holds in spending order, so finishing it knows what to release. Its allocations are what the
 *   scopes hold; its budget claims hold their sum only (budgets count credits, not grants), and a
 *   reservation the grants cover in full holds no allocation and claims 0.
 *
 * The functions (all replaced: new arguments or results, so the old ones are dropped):
 * - ledger_reserve: holds given grant amounts, admitted when spent + held + amount <= size for each
 *   (else 'insufficient'); budgets are checked first against the allocations' sum ('over_budget').
 * - ledger_reserve_in_order: takes the amount from the grants first, in the order given, each
 *   giving min(size - spent - held, what is left) when positive (core's takeGrants), checks the
 *   budgets against what is left for the scopes, then allocates that from the scopes as before.
 *   'insufficient' answers what the grants have left plus what the scopes have available.
 * - ledger_finish: releases the grant holds (void, expiry, settlement); a settlement's per-grant
 *   charges (at most each hold, only grants held: else it raises) move to `spent`.
 * - gateway_admit / gateway_admit_batch / gateway_commit (./0017_ledger_grants_gateway.ts): the
 *   grants passed through, the batches locking the grants' rows with the budgets' rows; a commit
 *   whose reservation is no longer pending records credits = what it was charged when it was
 *   settled (a replay), else credits, from_allowance and from_trial 0.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { gatewayAdmit, gatewayAdmitBatch, gatewayCommit } from "./0017_ledger_grants_gateway.ts"

export const ledgerGrants = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  // Existing rows hold no grants ('{}'), so the check needs no scan of a table with one row per
  // call: NOT VALID still holds every row written from now on.
  yield* sql`
    ALTER TABLE ledger_reservations
      ADD COLUMN grant_names text[] NOT NULL DEFAULT '{}',
      ADD COLUMN grant_periods text[] NOT NULL DEFAULT '{}',
      ADD COLUMN grant_amounts bigint[] NOT NULL DEFAULT '{}'`
  yield* sql`
    ALTER TABLE ledger_reservations ADD CONSTRAINT ledger_reservations_grants CHECK (
      cardinality(grant_names) = cardinality(grant_periods) AND cardinality(grant_names) = cardinality(grant_amounts)
    ) NOT VALID`
  // The month rows of budget claims and grants of one account, in one ordered lock (0012).
  yield* sql.unsafe(`
    CREATE FUNCTION ledger_months_lock(
      p_account_id text, p_budgets text[], p_budget_months text[], p_grants text[], p_grant_periods text[]
    ) RETURNS void LANGUAGE plpgsql AS $$
    DECLARE
      names text[] := coalesce(p_budgets, '{}') || coalesce(p_grants, '{}');
      months text[] := coalesce(p_budget_months, '{}') || coalesce(p_grant_periods, '{}');
    BEGIN
      IF cardinality(names) > 0 THEN
        PERFORM ledger_budgets_lock(array_fill(p_account_id, ARRAY[cardinality(names)]), names, months);
      END IF;
    END
    $$`)
  // Adds to the held and spent of grant rows locked already: per grant, held += p_held, spent +=
  // the charge of the same grant and period in p_charge_* (none: 0).
  yield* sql.unsafe(`
    CREATE FUNCTION ledger_grants_add(
      p_account_id text, p_grants text[], p_periods text[], p_held bigint[],
      p_charge_grants text[], p_charge_periods text[], p_charges bigint[]
    ) RETURNS void LANGUAGE sql AS $$
      UPDATE ledger_budget_months m SET held = m.held + h.held, spent = m.spent + coalesce(c.amount, 0)
        FROM unnest(p_grants, p_periods, p_held) AS h(name, period, held)
        LEFT JOIN unnest(p_charge_grants, p_charge_periods, p_charges) AS c(name, period, amount)
          ON c.name = h.name AND c.period = h.period
        WHERE m.account_id = p_account_id AND m.month = h.period AND m.budget = h.name
    $$`)
  yield* sql`
    DROP FUNCTION gateway_admit_batch(jsonb)`
  yield* sql`
    DROP FUNCTION gateway_admit(text, text, timestamptz, text, bigint, bigint, integer, text, text, text[], bigint,
                                timestamptz, timestamptz, text[], text[], bigint[])`
  yield* sql`
    DROP FUNCTION ledger_reserve_in_order(text, text, text, text[], bigint, timestamptz, timestamptz,
                                          text[], text[], bigint[])`
  yield* sql`
    DROP FUNCTION ledger_reserve(text, text, text, text[], bigint[], timestamptz, timestamptz, text[], text[], bigint[])`
  yield* sql`
    DROP FUNCTION ledger_finish(text, text, timestamptz, bigint, bigint, text[], text[], text[], bigint[], text[],
                                timestamptz[])`
  yield* sql.unsafe(ledgerReserve)
  yield* sql.unsafe(ledgerReserveInOrder)
  yield* sql.unsafe(ledgerFinish)
  yield* sql.unsafe(gatewayAdmit)
  yield* sql.unsafe(gatewayAdmitBatch)
  yield* sql.unsafe(gatewayCommit)
})

/** 0012's, with the grant holds checked (after the budgets, before the balance) and held. */
const ledgerReserve = `
  CREATE FUNCTION ledger_reserve(
    p_ref text, p_account_id text, p_machine_id text, p_scopes text[], p_amounts bigint[],
    p_created_at timestamptz, p_expires_at timestamptz,
    p_budgets text[], p_budget_months text[], p_budget_defaults bigint[],
    p_grants text[], p_grant_periods text[], p_grant_amounts bigint[], p_grant_sizes bigint[]
  ) RETURNS text LANGUAGE plpgsql AS $$
  DECLARE
    a record;
    total bigint := (SELECT coalesce(sum(x), 0) FROM unnest(p_amounts) AS x)::bigint;
  BEGIN
    IF EXISTS (SELECT 1 FROM ledger_reservations WHERE ref = p_ref) THEN
      RETURN 'duplicate';
    END IF;
    PERFORM ledger_months_lock(p_account_id, p_budgets, p_budget_months, p_grants, p_grant_periods);
    IF (SELECT c.budget FROM ledger_budgets_check(p_account_id, p_budgets, p_budget_months, p_budget_defaults, total) AS c)
       IS NOT NULL THEN
      RETURN 'over_budget';
    END IF;
    IF EXISTS (SELECT 1 FROM unnest(p_grants, p_grant_periods, p_grant_amounts, p_grant_sizes) AS t(name, period, amount, size)
               JOIN ledger_budget_months m ON m.account_id = p_account_id AND m.month = t.period AND m.budget = t.name
               WHERE m.spent + m.held + t.amount > t.size) THEN
      RETURN 'insufficient';
    END IF;
    FOR a IN SELECT t.scope, t.amount FROM unnest(p_scopes, p_amounts) AS t(scope, amount)
             ORDER BY t.scope COLLATE "C" LOOP
      PERFORM 1 FROM ledger_balances
        WHERE account_id = p_account_id AND scope = a.scope AND posted - held >= a.amount
        FOR UPDATE;
      IF NOT FOUND THEN
        RETURN 'insufficient';
      END IF;
    END LOOP;
    INSERT INTO ledger_reservations (ref, account_id, machine_id, scopes, amounts, status, created_at, expires_at,
                                     budgets, budget_months, grant_names, grant_periods, grant_amounts)
      VALUES (p_ref, p_account_id, p_machine_id, p_scopes, p_amounts, 'pending', p_created_at, p_expires_at,
              p_budgets, p_budget_months, p_grants, p_grant_periods, p_grant_amounts)
      ON CONFLICT (ref) DO NOTHING;
    IF NOT FOUND THEN
      RETURN 'duplicate';
    END IF;
    UPDATE ledger_balances b SET held = b.held + t.amount
      FROM unnest(p_scopes, p_amounts) AS t(scope, amount)
      WHERE b.account_id = p_account_id AND b.scope = t.scope;
    PERFORM ledger_budgets_add(p_account_id, p_budgets, p_budget_months, total, 0);
    IF coalesce(cardinality(p_grants), 0) > 0 THEN
      PERFORM ledger_grants_add(p_account_id, p_grants, p_grant_periods, p_grant_amounts, '{}', '{}', '{}');
    END IF;
    RETURN 'reserved';
  END
  $$`

/**
 * 0012's, taking from the grants first: their rows are locked with the claims' rows, each grant
 * gives what it has left (size - spent - held, when positive) up to what is left of the amount,
 * and the budgets are checked against the rest, which the scopes then give as before.
 */
const ledgerReserveInOrder = `
  CREATE FUNCTION ledger_reserve_in_order(
    p_ref text, p_account_id text, p_machine_id text, p_order text[], p_amount bigint,
    p_created_at timestamptz, p_expires_at timestamptz,
    p_budgets text[], p_budget_months text[], p_budget_defaults bigint[],
    p_grants text[], p_grant_periods text[], p_grant_sizes bigint[],
    OUT result text, OUT scopes text[], OUT amounts bigint[], OUT available bigint,
    OUT budget text, OUT lim bigint, OUT used bigint,
    OUT grant_names text[], OUT grant_periods text[], OUT grant_amounts bigint[]
  ) LANGUAGE plpgsql AS $$
  DECLARE
    b record;
    g record;
    locked_scopes text[] := '{}';
    locked_available bigint[] := '{}';
    i integer;
    here bigint;
    remaining bigint := p_amount;
    from_scopes bigint;
    take bigint;
  BEGIN
    scopes := '{}';
    amounts := '{}';
    available := 0;
    grant_names := '{}';
    grant_periods := '{}';
    grant_amounts := '{}';
    IF EXISTS (SELECT 1 FROM ledger_reservations WHERE ref = p_ref) THEN
      result := 'duplicate';
      RETURN;
    END IF;
    PERFORM ledger_months_lock(p_account_id, p_budgets, p_budget_months, p_grants, p_grant_periods);
    FOR g IN SELECT t.name, t.period, t.size - m.spent - m.held AS free
             FROM unnest(p_grants, p_grant_periods, p_grant_sizes) WITH ORDINALITY AS t(name, period, size, n)
             JOIN ledger_budget_months m ON m.account_id = p_account_id AND m.month = t.period AND m.budget = t.name
             ORDER BY t.n LOOP
      CONTINUE WHEN g.free <= 0;
      available := available + g.free;
      CONTINUE WHEN remaining = 0;
      take := LEAST(g.free, remaining);
      grant_names := grant_names || g.name;
      grant_periods := grant_periods || g.period;
      grant_amounts := grant_amounts || take;
      remaining := remaining - take;
    END LOOP;
    from_scopes := remaining;
    SELECT c.budget, c.lim, c.used INTO budget, lim, used
      FROM ledger_budgets_check(p_account_id, p_budgets, p_budget_months, p_budget_defaults, from_scopes) AS c;
    IF budget IS NOT NULL THEN
      result := 'over_budget';
      scopes := NULL;
      amounts := NULL;
      grant_names := NULL;
      grant_periods := NULL;
      grant_amounts := NULL;
      RETURN;
    END IF;
    FOR b IN SELECT scope, posted - held AS free FROM ledger_balances
             WHERE account_id = p_account_id AND scope = ANY (p_order)
             ORDER BY scope COLLATE "C"
             FOR UPDATE LOOP
      locked_scopes := locked_scopes || b.scope;
      locked_available := locked_available || b.free;
    END LOOP;
    FOR i IN 1 .. coalesce(cardinality(p_order), 0) LOOP
      here := locked_available[array_position(locked_scopes, p_order[i])];
      CONTINUE WHEN here IS NULL OR here <= 0;
      available := available + here;
      CONTINUE WHEN remaining = 0;
      take := LEAST(here, remaining);
      scopes := scopes || p_order[i];
      amounts := amounts || take;
      remaining := remaining - take;
    END LOOP;
    IF remaining > 0 THEN
      result := 'insufficient';
      scopes := NULL;
      amounts := NULL;
      grant_names := NULL;
      grant_periods := NULL;
      grant_amounts := NULL;
      RETURN;
    END IF;
    INSERT INTO ledger_reservations (ref, account_id, machine_id, scopes, amounts, status, created_at, expires_at,
                                     budgets, budget_months, grant_names, grant_periods, grant_amounts)
      VALUES (p_ref, p_account_id, p_machine_id, scopes, amounts, 'pending', p_created_at, p_expires_at,
              p_budgets, p_budget_months, grant_names, grant_periods, grant_amounts)
      ON CONFLICT (ref) DO NOTHING;
    IF NOT FOUND THEN
      result := 'duplicate';
      RETURN;
    END IF;
    UPDATE ledger_balances lb SET held = lb.held + t.amount
      FROM unnest(scopes, amounts) AS t(scope, amount)
      WHERE lb.account_id = p_account_id AND lb.scope = t.scope;
    PERFORM ledger_budgets_add(p_account_id, p_budgets, p_budget_months, from_scopes, 0);
    IF cardinality(grant_names) > 0 THEN
      PERFORM ledger_grants_add(p_account_id, grant_names, grant_periods, grant_amounts, '{}', '{}', '{}');
    END IF;
    result := 'reserved';
  END
  $$`

/**
 * 0012's, releasing the grant holds too and, on settlement, spending its per-grant charges
 * (p_grants, p_grant_periods, p_grant_amounts: each a grant the reservation holds, at most its
 * hold; else it raises). The month rows of its budgets and grants are locked in one call.
 */
const ledgerFinish = `
  CREATE FUNCTION ledger_finish(
    p_ref text, p_status text, p_at timestamptz, p_charged bigint, p_excess bigint,
    p_ids text[], p_account_ids text[], p_scopes text[], p_amounts bigint[], p_refs text[],
    p_created_at timestamptz[], p_grants text[], p_grant_periods text[], p_grant_amounts bigint[]
  ) RETURNS boolean LANGUAGE plpgsql AS $$
  DECLARE
    r record;
  BEGIN
    UPDATE ledger_reservations
      SET status = p_status, finished_at = p_at,
          charged = CASE WHEN p_status = 'settled' THEN p_charged END,
          excess = CASE WHEN p_status = 'settled' THEN p_excess END
      WHERE ref = p_ref AND status = 'pending'
      RETURNING account_id, machine_id, scopes, amounts, budgets, budget_months,
                grant_names, grant_periods, grant_amounts INTO r;
    IF NOT FOUND THEN
      RETURN false;
    END IF;
    IF EXISTS (SELECT 1 FROM unnest(p_account_ids) AS t(account_id) WHERE t.account_id <> r.account_id) THEN
      RAISE EXCEPTION 'LedgerStore.settle: an entry of another account';
    END IF;
    IF EXISTS (SELECT 1 FROM unnest(p_scopes) AS t(scope)
               WHERE t.scope <> '' AND t.scope IS DISTINCT FROM r.machine_id) THEN
      RAISE EXCEPTION 'LedgerStore.settle: charges credits pinned to another machine than the call''s';
    END IF;
    IF EXISTS (SELECT 1 FROM unnest(p_grants, p_grant_periods, p_grant_amounts) AS c(name, period, amount)
               WHERE NOT EXISTS (
                 SELECT 1 FROM unnest(r.grant_names, r.grant_periods, r.grant_amounts) AS h(name, period, amount)
                 WHERE h.name = c.name AND h.period = c.period AND c.amount <= h.amount)) THEN
      RAISE EXCEPTION 'LedgerStore.settle: charges a grant beyond what the reservation holds of it';
    END IF;
    PERFORM ledger_months_lock(r.account_id, r.budgets, r.budget_months, r.grant_names, r.grant_periods);
    IF cardinality(r.budgets) > 0 THEN
      PERFORM ledger_budgets_add(r.account_id, r.budgets, r.budget_months,
                                 -(SELECT coalesce(sum(x), 0) FROM unnest(r.amounts) AS x)::bigint,
                                 CASE WHEN p_status = 'settled' THEN p_charged ELSE 0 END);
    END IF;
    IF cardinality(r.grant_names) > 0 THEN
      PERFORM ledger_grants_add(r.account_id, r.grant_names, r.grant_periods,
                                ARRAY(SELECT -x FROM unnest(r.grant_amounts) WITH ORDINALITY AS t(x, k) ORDER BY t.k),
                                p_grants, p_grant_periods, p_grant_amounts);
    END IF;
    PERFORM 1 FROM ledger_balances
      WHERE account_id = r.account_id AND (scope = ANY (r.scopes) OR scope = ANY (p_scopes))
      ORDER BY scope COLLATE "C"
      FOR UPDATE;
    UPDATE ledger_balances b SET held = b.held - t.amount
      FROM unnest(r.scopes, r.amounts) AS t(scope, amount)
      WHERE b.account_id = r.account_id AND b.scope = t.scope;
    IF cardinality(p_ids) > 0 THEN
      INSERT INTO ledger_balances (account_id, scope, posted, held)
        SELECT r.account_id, t.scope, t.amount, 0 FROM unnest(p_scopes, p_amounts) AS t(scope, amount)
        ORDER BY t.scope COLLATE "C"
        ON CONFLICT (account_id, scope) DO UPDATE SET posted = ledger_balances.posted + EXCLUDED.posted;
      INSERT INTO ledger_entries (id, account_id, machine_id, amount, type, ref, created_at)
        SELECT t.id, r.account_id, NULLIF(t.scope, ''), t.amount, 'usage', t.ref, t.created_at
        FROM unnest(p_ids, p_scopes, p_amounts, p_refs, p_created_at) WITH ORDINALITY
          AS t(id, scope, amount, ref, created_at, n)
        ORDER BY t.n;
    END IF;
    RETURN true;
  END
  $$`
