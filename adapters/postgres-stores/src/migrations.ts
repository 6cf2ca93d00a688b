/**
 * The Postgres schema, as a record of migrations keyed `<id>_<name>` and run in id order by
 * Effect's migrator (`fromRecord`, so a bundle needs no migration files on disk). A migration
 * that has shipped is never edited: change the schema with a new entry.
 *
 * Conventions: timestamps are `timestamptz` (microseconds, so the ISO-with-milliseconds strings
 * of the API round-trip exactly); `seq` identity columns break ties between equal created_at so
 * "oldest first" is stable; no foreign keys between the tables of different ports, because each
 * port's store is tested (and may be deployed) on its own.
 */
import { Effect } from "effect"
import { Migrator, SqlClient } from "effect/sql"
import { usageRollups } from "./migrations/0011_usage_rollups.ts"
import { ledgerBudgets } from "./migrations/0012_ledger_budgets.ts"
import { billingSettings } from "./migrations/0013_billing_settings.ts"
import { alerts } from "./migrations/0014_alerts.ts"
import { usageRollupLevels } from "./migrations/0015_usage_rollup_levels.ts"
import { ledgerCreditEntries } from "./migrations/0016_ledger_credit_entries.ts"
import { ledgerGrants } from "./migrations/0017_ledger_grants.ts"
import { plans } from "./migrations/0018_plans.ts"
import { planRenewals } from "./migrations/0019_plan_renewals.ts"
import { documents } from "./migrations/0020_documents.ts"
import { idempotencyRetention } from "./migrations/0021_idempotency_retention.ts"
import { depositWatch } from "./migrations/0022_deposit_watch.ts"
import { ledgerReversals } from "./migrations/0023_ledger_reversals.ts"
import { ledgerBatches } from "./migrations/0024_ledger_batches.ts"
import { receiptTierFlag } from "./migrations/0025_receipt_tier_flag.ts"
import { genericPlans } from "./migrations/0026_generic_plans.ts"
import { accountNotices } from "./migrations/0027_account_notices.ts"
import { creditLeases } from "./migrations/0028_credit_leases.ts"

const accountsKeysIdempotency = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE accounts (
      id text PRIMARY KEY,
      email text NOT NULL UNIQUE,
      created_at timestamptz NOT NULL,
      seq bigint GENERATED ALWAYS AS IDENTITY
    )`
  yield* sql`CREATE INDEX accounts_created_at ON accounts (created_at, seq)`
  yield* sql`
    CREATE TABLE api_keys (
      id text PRIMARY KEY,
      account_id text NOT NULL,
      name text NOT NULL,
      prefix text NOT NULL,
      secret_hash text NOT NULL UNIQUE,
      permissions text[] NOT NULL,
      machine_id text,
      subscription_id text,
      rental_id text,
      agent_id text,
      created_at timestamptz NOT NULL,
      last_used_at timestamptz,
      revoked_at timestamptz,
      seq bigint GENERATED ALWAYS AS IDENTITY
    )`
  yield* sql`CREATE INDEX api_keys_account ON api_keys (account_id, created_at, seq)`
  yield* sql`
    CREATE TABLE idempotency_records (
      scope text NOT NULL,
      key text NOT NULL,
      fingerprint text NOT NULL,
      created_at timestamptz NOT NULL,
      response_status integer,
      response_body text,
      PRIMARY KEY (scope, key),
      CHECK ((response_status IS NULL) = (response_body IS NULL))
    )`
})

/**
 * The credit ledger (PgLedgerStore.ts). Amounts are int8 micro-credits. `ledger_balances` caches,
 * per (account, scope), the sum of the scope's entries (`posted`) and of its pending holds
 * (`held`); scope '' is account-wide, else the machine id (a primary key cannot hold NULL).
 */
const ledger = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE ledger_entries (
      id text PRIMARY KEY,
      account_id text NOT NULL,
      machine_id text CHECK (machine_id <> ''),
      amount bigint NOT NULL,
      type text NOT NULL,
      ref text NOT NULL,
      created_at timestamptz NOT NULL,
      seq bigint GENERATED ALWAYS AS IDENTITY,
      UNIQUE (account_id, ref),
      CHECK (CASE type WHEN 'usage' THEN amount < 0
                       WHEN 'credit_added' THEN amount > 0
                       WHEN 'plan_credit_granted' THEN amount > 0
                       ELSE false END)
    )`
  yield* sql`CREATE INDEX ledger_entries_newest ON ledger_entries (account_id, created_at DESC, seq DESC)`
  yield* sql`
    CREATE TABLE ledger_balances (
      account_id text NOT NULL,
      scope text NOT NULL,
      posted bigint NOT NULL,
      held bigint NOT NULL CHECK (held >= 0),
      PRIMARY KEY (account_id, scope)
    )`
  yield* sql`
    CREATE TABLE ledger_reservations (
      ref text PRIMARY KEY,
      account_id text NOT NULL,
      machine_id text CHECK (machine_id <> ''),
      scopes text[] NOT NULL,
      amounts bigint[] NOT NULL,
      status text NOT NULL CHECK (status IN ('pending', 'settled', 'voided', 'expired')),
      created_at timestamptz NOT NULL,
      expires_at timestamptz NOT NULL,
      finished_at timestamptz,
      charged bigint,
      excess bigint,
      seq bigint GENERATED ALWAYS AS IDENTITY,
      CHECK (cardinality(scopes) = cardinality(amounts)),
      CHECK ((status = 'pending') = (finished_at IS NULL)),
      CHECK ((status = 'settled') = (charged IS NOT NULL AND excess IS NOT NULL))
    )`
  yield* sql`CREATE INDEX ledger_reservations_due ON ledger_reservations (expires_at) WHERE status = 'pending'`
  yield* sql`
    CREATE INDEX ledger_reservations_pending ON ledger_reservations (account_id, created_at, seq)
    WHERE status = 'pending'`
})

/**
 * Orders, gift tickets, receipts and stablecoin deposits (PgOrderStore.ts). Money columns are
 * int8 (cents, micro-credits); token base units are numeric(78,0), because 18-decimal tokens
 * overflow int8 at a few USD thousand. The uniqueness rules of the port are constraints here:
 * one card session and one deposit address per order (and neither shared), one ticket and one
 * receipt per order, one deposit per (chain, tx).
 */
const orders = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE orders (
      id text PRIMARY KEY,
      account_id text NOT NULL,
      type text NOT NULL CHECK (type IN ('credits', 'package', 'rental', 'subscription')),
      title text NOT NULL,
      amount_cents bigint NOT NULL CHECK (amount_cents >= 0),
      currency text NOT NULL,
      credits bigint NOT NULL CHECK (credits >= 0),
      machine_id text,
      package_id text,
      gift boolean NOT NULL,
      status text NOT NULL CHECK (status IN ('pending', 'paid', 'cancelled', 'expired')),
      payment_method text CHECK (payment_method IN ('card', 'stablecoin')),
      card_session_id text UNIQUE,
      checkout_url text,
      deposit_address text UNIQUE,
      deposit_memo text,
      deposit_chain text,
      deposit_token text,
      deposit_decimals integer,
      deposit_amount numeric(78, 0),
      created_at timestamptz NOT NULL,
      expires_at timestamptz NOT NULL,
      paid_at timestamptz,
      paid_with text CHECK (paid_with IN ('card', 'stablecoin')),
      seq bigint GENERATED ALWAYS AS IDENTITY,
      CHECK ((card_session_id IS NULL) = (checkout_url IS NULL)),
      CHECK ((deposit_address IS NULL) = (deposit_chain IS NULL)
         AND (deposit_address IS NULL) = (deposit_token IS NULL)
         AND (deposit_address IS NULL) = (deposit_decimals IS NULL)
         AND (deposit_address IS NULL) = (deposit_amount IS NULL)),
      CHECK ((status = 'paid') = (paid_at IS NOT NULL AND paid_with IS NOT NULL))
    )`
  yield* sql`CREATE INDEX orders_newest ON orders (account_id, created_at DESC, seq DESC)`
  yield* sql`CREATE INDEX orders_paid ON orders (paid_at, seq) WHERE status = 'paid'`
  yield* sql`
    CREATE TABLE tickets (
      code text PRIMARY KEY,
      order_id text NOT NULL UNIQUE,
      account_id text NOT NULL,
      credits bigint NOT NULL CHECK (credits >= 0),
      machine_id text,
      created_at timestamptz NOT NULL,
      redeemed_by text,
      redeemed_at timestamptz,
      seq bigint GENERATED ALWAYS AS IDENTITY,
      CHECK ((redeemed_by IS NULL) = (redeemed_at IS NULL))
    )`
  yield* sql`CREATE INDEX tickets_buyer ON tickets (account_id, created_at DESC, seq DESC)`
  yield* sql`
    CREATE TABLE receipts (
      id text PRIMARY KEY,
      account_id text NOT NULL,
      order_id text NOT NULL UNIQUE,
      kind text NOT NULL CHECK (kind IN ('credits', 'package', 'rental', 'subscription')),
      title text NOT NULL,
      paid_at timestamptz NOT NULL,
      amount_cents bigint NOT NULL CHECK (amount_cents >= 0),
      currency text NOT NULL,
      credits bigint NOT NULL CHECK (credits >= 0),
      paid_with text NOT NULL CHECK (paid_with IN ('card', 'stablecoin')),
      auto_reload boolean NOT NULL,
      seq bigint GENERATED ALWAYS AS IDENTITY
    )`
  yield* sql`CREATE INDEX receipts_newest ON receipts (account_id, paid_at DESC, seq DESC)`
  yield* sql`
    CREATE TABLE stablecoin_deposits (
      chain text NOT NULL,
      tx text NOT NULL,
      token text NOT NULL,
      address text NOT NULL,
      amount numeric(78, 0) NOT NULL CHECK (amount > 0),
      order_id text,
      outcome text NOT NULL CHECK (outcome IN ('counted', 'late', 'wrong_asset', 'unmatched')),
      at timestamptz NOT NULL,
      recorded_at timestamptz NOT NULL,
      seq bigint GENERATED ALWAYS AS IDENTITY,
      PRIMARY KEY (chain, tx)
    )`
  yield* sql`CREATE INDEX stablecoin_deposits_address ON stablecoin_deposits (address, seq)`
})

/**
 * Usage records and rate-limit counters (PgUsageStore.ts, PgRateLimitStore.ts). A usage record's
 * ref is its primary key (a record is kept once per call); money columns are int8 micro-credits.
 * Rate-limit rows are one counter per (bucket, window start), dropped a few minutes after
 * `window_end` (epoch milliseconds).
 */
const usageRateLimits = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE usage_records (
      ref text PRIMARY KEY CHECK (ref <> ''),
      account_id text NOT NULL,
      at timestamptz NOT NULL,
      key_id text NOT NULL,
      agent_id text,
      machine_id text NOT NULL,
      service text NOT NULL,
      model text NOT NULL,
      unit text NOT NULL,
      quantity bigint NOT NULL CHECK (quantity >= 0),
      input_tokens bigint NOT NULL CHECK (input_tokens >= 0),
      output_tokens bigint NOT NULL CHECK (output_tokens >= 0),
      list_credits bigint NOT NULL CHECK (list_credits >= 0),
      credits bigint NOT NULL CHECK (credits >= 0),
      from_allowance bigint NOT NULL CHECK (from_allowance >= 0),
      from_trial bigint NOT NULL CHECK (from_trial >= 0)
    )`
  yield* sql`CREATE INDEX usage_records_account_at ON usage_records (account_id, at)`
  yield* sql`CREATE INDEX usage_records_account_key_at ON usage_records (account_id, key_id, at)`
  yield* sql`
    CREATE TABLE rate_limit_windows (
      bucket text NOT NULL,
      window_start bigint NOT NULL,
      window_end bigint NOT NULL,
      count integer NOT NULL CHECK (count > 0),
      PRIMARY KEY (bucket, window_start)
    )`
  yield* sql`CREATE INDEX rate_limit_windows_end ON rate_limit_windows (window_end)`
})

/**
 * The ledger's writes as functions (PgLedgerStore.ts), so each is ONE round trip: a function call
 * is one statement, atomic as a whole (an exception rolls all of it back), and its plans are
 * cached by the server. The rules stay those of 0002's comments:
 * - Lock order: at most one reservation row first, then balance rows in scope order under the
 *   "C" collation (byte order; every function sorts the same way, so two transactions never take
 *   one account's balance rows in opposite orders).
 * - `ledger_reserve` answers 'duplicate' when the ref exists; else it locks each allocated scope's
 *   row `FOR UPDATE` only if it has the amount available (`posted - held >= amount`; under READ
 *   COMMITTED, a row a concurrent transaction changed is re-checked as that transaction left it),
 *   answers 'insufficient' when one has not (nothing written), else inserts the reservation and
 *   adds the amounts to `held`.
 * - `ledger_finish` moves a pending reservation to settled, voided or expired exactly once (a
 *   conditional UPDATE) and releases its holds; settling also inserts the usage entries and adds
 *   them to `posted` (creating the account-wide scope for an excess). The entries' rules that need
 *   the reservation (same account, pinned credits only of the call's machine) raise an exception,
 *   which the store turns into a defect; the rest are checked by the store before the call.
 */
const ledgerFunctions = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql.unsafe(`
    CREATE FUNCTION ledger_reserve(
      p_ref text, p_account_id text, p_machine_id text, p_scopes text[], p_amounts bigint[],
      p_created_at timestamptz, p_expires_at timestamptz
    ) RETURNS text LANGUAGE plpgsql AS $$
    DECLARE
      a record;
    BEGIN
      IF EXISTS (SELECT 1 FROM ledger_reservations WHERE ref = p_ref) THEN
        RETURN 'duplicate';
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
      INSERT INTO ledger_reservations (ref, account_id, machine_id, scopes, amounts, status, created_at, expires_at)
        VALUES (p_ref, p_account_id, p_machine_id, p_scopes, p_amounts, 'pending', p_created_at, p_expires_at)
        ON CONFLICT (ref) DO NOTHING;
      IF NOT FOUND THEN
        RETURN 'duplicate';
      END IF;
      UPDATE ledger_balances b SET held = b.held + t.amount
        FROM unnest(p_scopes, p_amounts) AS t(scope, amount)
        WHERE b.account_id = p_account_id AND b.scope = t.scope;
      RETURN 'reserved';
    END
    $$`)
  yield* sql.unsafe(`
    CREATE FUNCTION ledger_finish(
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
        RETURNING account_id, machine_id, scopes, amounts INTO r;
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
    $$`)
})

/**
 * `ledger_reserve_in_order` (PgLedgerStore's `reserveInOrder`): the read of balances, the
 * allocation and the reservation in one call. It locks the rows of the scopes it may take from
 * (`FOR UPDATE`, scope order under "C" as everywhere), so what it reads is what it changes; then
 * takes `p_amount` from the scopes in the order given, each giving its available (posted - held)
 * when positive, up to what is left (core's `allocate`); 'insufficient' with the total available
 * when they cannot cover it, else inserts the reservation with those allocations and adds them to
 * `held`. Answers (result, scopes, amounts, available).
 */
const ledgerReserveInOrder = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql.unsafe(`
    CREATE FUNCTION ledger_reserve_in_order(
      p_ref text, p_account_id text, p_machine_id text, p_order text[], p_amount bigint,
      p_created_at timestamptz, p_expires_at timestamptz,
      OUT result text, OUT scopes text[], OUT amounts bigint[], OUT available bigint
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
      INSERT INTO ledger_reservations (ref, account_id, machine_id, scopes, amounts, status, created_at, expires_at)
        VALUES (p_ref, p_account_id, p_machine_id, scopes, amounts, 'pending', p_created_at, p_expires_at)
        ON CONFLICT (ref) DO NOTHING;
      IF NOT FOUND THEN
        result := 'duplicate';
        RETURN;
      END IF;
      UPDATE ledger_balances lb SET held = lb.held + t.amount
        FROM unnest(scopes, amounts) AS t(scope, amount)
        WHERE lb.account_id = p_account_id AND lb.scope = t.scope;
      result := 'reserved';
    END
    $$`)
})

/**
 * The gateway's writes per call as two functions (PgGatewayStore.ts), one statement each:
 * - `gateway_admit`: the key still live (else 'key_revoked', nothing written), its last_used_at
 *   moved forward when asked, the call counted in its rpm window (the same upsert as
 *   PgRateLimitStore; past `p_limit`: 'rate_limited', nothing reserved), then, when a ref is
 *   given, `ledger_reserve_in_order`. Answers (result, hits, scopes, amounts, available).
 * - `gateway_commit`: per item of a JSON array, in the order given (the store sorts them by
 *   account), `ledger_finish` of its settlement (when it has one), then its usage record
 *   (`ON CONFLICT (ref) DO NOTHING`), with credits 0 when the reservation was no longer pending.
 *   Answers (n, settlement, recorded). A batch holds several reservations, so before any of that
 *   it takes its locks in the one order every other writer keeps: the batch's reservation rows
 *   (by ref, "C"), then every balance row of their accounts (by account, then scope, "C").
 *   Finishing call by call instead would take one account's scopes in the order of its calls
 *   (a call charging only m, then one charging only ''), which deadlocks with a concurrent
 *   batch or reservation taking '' then m.
 */
const gatewayFunctions = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql.unsafe(`
    CREATE FUNCTION gateway_admit(
      p_account_id text, p_key_id text, p_touch_at timestamptz,
      p_bucket text, p_window_start bigint, p_window_end bigint, p_limit integer,
      p_ref text, p_machine_id text, p_order text[], p_amount bigint,
      p_created_at timestamptz, p_expires_at timestamptz,
      OUT result text, OUT hits integer, OUT scopes text[], OUT amounts bigint[], OUT available bigint
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
      SELECT r.result, r.scopes, r.amounts, r.available INTO result, scopes, amounts, available
        FROM ledger_reserve_in_order(p_ref, p_account_id, p_machine_id, p_order, p_amount,
                                     p_created_at, p_expires_at) AS r;
    END
    $$`)
  yield* sql.unsafe(`
    CREATE FUNCTION gateway_commit(p_items jsonb)
    RETURNS TABLE (n integer, settlement text, recorded boolean) LANGUAGE plpgsql AS $$
    DECLARE
      item record;
      s jsonb;
      rec usage_records;
      batch_refs text[];
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
      FOR item IN SELECT e.value, e.ordinality::integer AS i FROM jsonb_array_elements(p_items) WITH ORDINALITY AS e LOOP
        n := item.i;
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
        INSERT INTO usage_records SELECT rec.* ON CONFLICT (ref) DO NOTHING;
        recorded := FOUND;
        RETURN NEXT;
      END LOOP;
    END
    $$`)
})

/**
 * The account service's people (PgPeopleStore.ts, core/src/accounts/Records.ts): people with a
 * unique email, their passkeys (credential id unique across people), sessions and one-time tokens
 * kept by the SHA-256 of their secret. A person's passkeys and sessions are found by person_id;
 * expired sessions and tokens are found by expires_at to be pruned.
 */
const people = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE people (
      id text PRIMARY KEY,
      email text NOT NULL UNIQUE,
      email_confirmed_at timestamptz,
      account_id text,
      created_at timestamptz NOT NULL
    )`
  yield* sql`
    CREATE TABLE passkeys (
      credential_id text PRIMARY KEY CHECK (credential_id <> ''),
      person_id text NOT NULL,
      public_key text NOT NULL,
      counter bigint NOT NULL CHECK (counter >= 0 AND counter <= 4294967295),
      transports text[] NOT NULL,
      name text NOT NULL,
      created_at timestamptz NOT NULL,
      last_used_at timestamptz,
      seq bigint GENERATED ALWAYS AS IDENTITY
    )`
  yield* sql`CREATE INDEX passkeys_person ON passkeys (person_id, created_at, seq)`
  yield* sql`
    CREATE TABLE sessions (
      token_hash text PRIMARY KEY,
      person_id text NOT NULL,
      csrf_hash text NOT NULL,
      created_at timestamptz NOT NULL,
      expires_at timestamptz NOT NULL
    )`
  yield* sql`CREATE INDEX sessions_person ON sessions (person_id)`
  yield* sql`CREATE INDEX sessions_expires_at ON sessions (expires_at)`
  yield* sql`
    CREATE TABLE one_time_tokens (
      token_hash text PRIMARY KEY,
      purpose text NOT NULL,
      subject text NOT NULL,
      data text NOT NULL,
      created_at timestamptz NOT NULL,
      not_before timestamptz NOT NULL,
      expires_at timestamptz NOT NULL,
      used_at timestamptz
    )`
  yield* sql`CREATE INDEX one_time_tokens_expires_at ON one_time_tokens (expires_at)`
})

/** A person's outstanding tokens of one purpose (PeopleStore.listTokens, revokeTokens). */
const tokenSubjects = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE INDEX one_time_tokens_subject ON one_time_tokens (subject, purpose, created_at)`
})

/** An account's identity on the network, as it last answered (PeopleStore.saveIdentity). */
const identities = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE identities (
      account_id text PRIMARY KEY,
      person_id text NOT NULL,
      state text NOT NULL CHECK (state IN ('provisioning', 'ready', 'failed')),
      did text,
      wallet_address text,
      error text,
      updated_at timestamptz NOT NULL
    )`
})

export const migrations: Record<string, Effect.Effect<void, unknown, SqlClient.SqlClient>> = {
  "0001_accounts_keys_idempotency": accountsKeysIdempotency,
  "0002_ledger": ledger,
  "0003_orders": orders,
  "0004_usage_rate_limits": usageRateLimits,
  "0005_ledger_functions": ledgerFunctions,
  "0006_ledger_reserve_in_order": ledgerReserveInOrder,
  "0007_gateway_functions": gatewayFunctions,
  "0008_people": people,
  "0009_token_subjects": tokenSubjects,
  "0010_identities": identities,
  "0011_usage_rollups": usageRollups,
  "0012_ledger_budgets": ledgerBudgets,
  "0013_billing_settings": billingSettings,
  "0014_alerts": alerts,
  "0015_usage_rollup_levels": usageRollupLevels,
  "0016_ledger_credit_entries": ledgerCreditEntries,
  "0017_ledger_grants": ledgerGrants,
  "0018_plans": plans,
  "0019_plan_renewals": planRenewals,
  "0020_documents": documents,
  "0021_idempotency_retention": idempotencyRetention,
  "0022_deposit_watch": depositWatch,
  "0023_ledger_reversals": ledgerReversals,
  "0024_ledger_batches": ledgerBatches,
  "0025_receipt_tier_flag": receiptTierFlag,
  "0026_generic_plans": genericPlans,
  "0027_account_notices": accountNotices,
  "0028_credit_leases": creditLeases
}

/** Runs the pending migrations; several processes may race here, the migrator locks its table. */
export const migrate = Migrator.make({})({ loader: Migrator.fromRecord(migrations) })
