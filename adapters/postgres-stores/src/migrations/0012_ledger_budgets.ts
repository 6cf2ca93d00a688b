/**
 * The ledger's budgets (core/src/ledger/LedgerStore.ts `BudgetClaim`, docs/billing.md "Monthly
 * limits"; PgBudgets.ts reads and sets them):
 * - `ledger_budget_limits`: a budget's own limit (no row: the claim's default applies).
 * - `ledger_budget_months`: per budget and month, `spent` (what settlements charged) and `held`
 *   (the amounts of the pending reservations claiming it).
 * - `ledger_reservations.budgets` / `budget_months`: a reservation's claims, in claim order, so
 *   that finishing it knows what to release (its amount is the sum of its allocations).
 *
 * Check and hold are one step with the balance reservation: the claims' month rows are locked
 * (created at zero when absent), THEN the limits are read (a new statement, so a limit set before
 * the lock was taken is seen; one set later is serialised after this admission), then the first
 * claim over its limit answers 'over_budget' before the balance is looked at.
 *
 * Lock order, everywhere: a reservation row, then budget month rows by (account, month, budget)
 * under "C", then balance rows (as 0005). So:
 * - ledger_reserve / ledger_reserve_in_order lock the claims' month rows before the balances;
 * - ledger_finish locks the reservation (its conditional UPDATE), its month rows, its balances;
 * - gateway_commit (replaced here: 0011's, plus one step) locks the batch's reservations, then
 *   all their month rows, then their balances, before finishing any of them;
 * - gateway_admit_batch locks the month rows of the whole batch before admitting its calls one
 *   by one, since admitting a call locks its balances (a later call's month rows after an
 *   earlier call's balances would break the order).
 * `setBudgetLimit` writes only the limits table, which nothing locks.
 *
 * The old ledger_reserve, ledger_reserve_in_order and gateway_admit are dropped: they are called
 * with the claims now (PgLedgerStore.ts, PgGatewayStore.ts).
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { gatewayAdmit, gatewayAdmitBatch, gatewayCommit } from "./0012_ledger_budgets_gateway.ts"

export const ledgerBudgets = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE ledger_budget_limits (
      account_id text NOT NULL,
      budget text NOT NULL,
      monthly_limit bigint NOT NULL CHECK (monthly_limit >= 0),
      PRIMARY KEY (account_id, budget)
    )`
  yield* sql`
    CREATE TABLE ledger_budget_months (
      account_id text NOT NULL,
      month text NOT NULL,
      budget text NOT NULL,
      spent bigint NOT NULL CHECK (spent >= 0),
      held bigint NOT NULL CHECK (held >= 0),
      PRIMARY KEY (account_id, month, budget)
    )`
  yield* sql`
    ALTER TABLE ledger_reservations
      ADD COLUMN budgets text[] NOT NULL DEFAULT '{}',
      ADD COLUMN budget_months text[] NOT NULL DEFAULT '{}',
      ADD CHECK (cardinality(budgets) = cardinality(budget_months))`
  yield* sql.unsafe(`
    CREATE FUNCTION ledger_budgets_lock(p_account_ids text[], p_budgets text[], p_months text[])
    RETURNS void LANGUAGE plpgsql AS $$
    DECLARE
      c record;
    BEGIN
      FOR c IN SELECT d.account_id, d.month, d.budget FROM (
                 SELECT DISTINCT t.account_id, t.month, t.budget
                 FROM unnest(p_account_ids, p_budgets, p_months) AS t(account_id, budget, month)) AS d
               ORDER BY d.account_id COLLATE "C", d.month COLLATE "C", d.budget COLLATE "C" LOOP
        INSERT INTO ledger_budget_months (account_id, month, budget, spent, held)
          VALUES (c.account_id, c.month, c.budget, 0, 0)
          ON CONFLICT (account_id, month, budget) DO NOTHING;
        PERFORM 1 FROM ledger_budget_months m
          WHERE m.account_id = c.account_id AND m.month = c.month AND m.budget = c.budget
          FOR UPDATE;
      END LOOP;
    END
    $$`)
  // The first claim, in the order given, that p_amount would take past its limit in force.
  yield* sql.unsafe(`
    CREATE FUNCTION ledger_budgets_check(
      p_account_id text, p_budgets text[], p_months text[], p_defaults bigint[], p_amount bigint,
      OUT budget text, OUT lim bigint, OUT used bigint
    ) LANGUAGE plpgsql AS $$
    DECLARE
      c record;
    BEGIN
      IF coalesce(cardinality(p_budgets), 0) = 0 THEN
        RETURN;
      END IF;
      PERFORM ledger_budgets_lock(array_fill(p_account_id, ARRAY[cardinality(p_budgets)]), p_budgets, p_months);
      FOR c IN SELECT t.budget, coalesce(l.monthly_limit, t.default_limit) AS lim, m.spent + m.held AS used
               FROM unnest(p_budgets, p_months, p_defaults) WITH ORDINALITY AS t(budget, month, default_limit, n)
               JOIN ledger_budget_months m ON m.account_id = p_account_id AND m.month = t.month AND m.budget = t.budget
               LEFT JOIN ledger_budget_limits l ON l.account_id = p_account_id AND l.budget = t.budget
               ORDER BY t.n LOOP
        IF c.lim IS NOT NULL AND c.used + p_amount > c.lim THEN
          budget := c.budget;
          lim := c.lim;
          used := c.used;
          RETURN;
        END IF;
      END LOOP;
    END
    $$`)
  // Adds to held and spent of rows locked already (by ledger_budgets_check or ledger_finish).
  yield* sql.unsafe(`
    CREATE FUNCTION ledger_budgets_add(
      p_account_id text, p_budgets text[], p_months text[], p_held bigint, p_spent bigint
    ) RETURNS void LANGUAGE sql AS $$
      UPDATE ledger_budget_months m SET held = m.held + p_held, spent = m.spent + p_spent
        FROM unnest(p_budgets, p_months) AS t(budget, month)
        WHERE m.account_id = p_account_id AND m.month = t.month AND m.budget = t.budget
    $$`)
  yield* sql`DROP FUNCTION ledger_reserve(text, text, text, text[], bigint[], timestamptz, timestamptz)`
  yield* sql`DROP FUNCTION ledger_reserve_in_order(text, text, text, text[], bigint, timestamptz, timestamptz)`
  yield* sql`
    DROP FUNCTION gateway_admit(text, text, timestamptz, text, bigint, bigint, integer, text, text, text[], bigint,
                                timestamptz, timestamptz)`
  yield* sql.unsafe(ledgerReserve)
  yield* sql.unsafe(ledgerReserveInOrder)
  yield* sql.unsafe(ledgerFinish)
  yield* sql.unsafe(gatewayAdmit)
  yield* sql.unsafe(gatewayAdmitBatch)
  yield* sql.unsafe(gatewayCommit)
})

/** 0005's, with the claims checked first and held with the balance. */
const ledgerReserve = `
  CREATE FUNCTION ledger_reserve(
    p_ref text, p_account_id text, p_machine_id text, p_scopes text[], p_amounts bigint[],
    p_created_at timestamptz, p_expires_at timestamptz,
    p_budgets text[], p_budget_months text[], p_budget_defaults bigint[]
  ) RETURNS text LANGUAGE plpgsql AS $$
  DECLARE
    a record;
    total bigint := (SELECT coalesce(sum(x), 0) FROM unnest(p_amounts) AS x)::bigint;
  BEGIN
    IF EXISTS (SELECT 1 FROM ledger_reservations WHERE ref = p_ref) THEN
      RETURN 'duplicate';
    END IF;
    IF (SELECT c.budget FROM ledger_budgets_check(p_account_id, p_budgets, p_budget_months, p_budget_defaults, total) AS c)
       IS NOT NULL THEN
      RETURN 'over_budget';
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
                                     budgets, budget_months)
      VALUES (p_ref, p_account_id, p_machine_id, p_scopes, p_amounts, 'pending', p_created_at, p_expires_at,
              p_budgets, p_budget_months)
      ON CONFLICT (ref) DO NOTHING;
    IF NOT FOUND THEN
      RETURN 'duplicate';
    END IF;
    UPDATE ledger_balances b SET held = b.held + t.amount
      FROM unnest(p_scopes, p_amounts) AS t(scope, amount)
      WHERE b.account_id = p_account_id AND b.scope = t.scope;
    PERFORM ledger_budgets_add(p_account_id, p_budgets, p_budget_months, total, 0);
    RETURN 'reserved';
  END
  $$`

/** 0006's, with the claims checked first and held with the balance. */
const ledgerReserveInOrder = `
  CREATE FUNCTION ledger_reserve_in_order(
    p_ref text, p_account_id text, p_machine_id text, p_order text[], p_amount bigint,
    p_created_at timestamptz, p_expires_at timestamptz,
    p_budgets text[], p_budget_months text[], p_budget_defaults bigint[],
    OUT result text, OUT scopes text[], OUT amounts bigint[], OUT available bigint,
    OUT budget text, OUT lim bigint, OUT used bigint
  ) LANGUAGE plpgsql AS $$
  DECLARE
    b record;
    locked_scopes text[] := '{}';
    locked_available bigint[] := '{}';
    i integer;
    here bigint;
    remaining bigint := p_amount;
    take bigint;
  BEGIN
    scopes := '{}';
    amounts := '{}';
    available := 0;
    IF EXISTS (SELECT 1 FROM ledger_reservations WHERE ref = p_ref) THEN
      result := 'duplicate';
      RETURN;
    END IF;
    SELECT c.budget, c.lim, c.used INTO budget, lim, used
      FROM ledger_budgets_check(p_account_id, p_budgets, p_budget_months, p_budget_defaults, p_amount) AS c;
    IF budget IS NOT NULL THEN
      result := 'over_budget';
      scopes := NULL;
      amounts := NULL;
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
      RETURN;
    END IF;
    INSERT INTO ledger_reservations (ref, account_id, machine_id, scopes, amounts, status, created_at, expires_at,
                                     budgets, budget_months)
      VALUES (p_ref, p_account_id, p_machine_id, scopes, amounts, 'pending', p_created_at, p_expires_at,
              p_budgets, p_budget_months)
      ON CONFLICT (ref) DO NOTHING;
    IF NOT FOUND THEN
      result := 'duplicate';
      RETURN;
    END IF;
    UPDATE ledger_balances lb SET held = lb.held + t.amount
      FROM unnest(scopes, amounts) AS t(scope, amount)
      WHERE lb.account_id = p_account_id AND lb.scope = t.scope;
    PERFORM ledger_budgets_add(p_account_id, p_budgets, p_budget_months, p_amount, 0);
    result := 'reserved';
  END
  $$`

/** 0005's, releasing (and on settlement charging) the reservation's budgets too. */
const ledgerFinish = `
  CREATE OR REPLACE FUNCTION ledger_finish(
    p_ref text, p_status text, p_at timestamptz, p_charged bigint, p_excess bigint,
    p_ids text[], p_account_ids text[], p_scopes text[], p_amounts bigint[], p_refs text[],
    p_created_at timestamptz[]
  ) RETURNS boolean LANGUAGE plpgsql AS $$
  DECLARE
    r record;
  BEGIN
    UPDATE ledger_reservations
      SET status = p_status, finished_at = p_at,
          charged = CASE WHEN p_status = 'settled' THEN p_charged END,
          excess = CASE WHEN p_status = 'settled' THEN p_excess END
      WHERE ref = p_ref AND status = 'pending'
      RETURNING account_id, machine_id, scopes, amounts, budgets, budget_months INTO r;
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
    IF cardinality(r.budgets) > 0 THEN
      PERFORM ledger_budgets_lock(array_fill(r.account_id, ARRAY[cardinality(r.budgets)]), r.budgets, r.budget_months);
      PERFORM ledger_budgets_add(r.account_id, r.budgets, r.budget_months,
                                 -(SELECT coalesce(sum(x), 0) FROM unnest(r.amounts) AS x)::bigint,
                                 CASE WHEN p_status = 'settled' THEN p_charged ELSE 0 END);
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
