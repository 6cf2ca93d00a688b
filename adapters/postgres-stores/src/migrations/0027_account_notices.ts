/**
 * Notices of a change to an account's state, sent to every listening process as the change
 * commits (PgAccountNotices.ts; core/src/kernel/AccountNotices.ts says which changes): a
 * `pg_notify('account_state', account_id)` from each write that changes
 * - its billing settings (billing_settings),
 * - its tier: its receipts (PgOrderStore.ts `purchasedCredits` sums them) and the credits a refund
 *   or dispute took back (ledger_entries of type credit_reversed, PgLedgerStore.ts `creditTotals`);
 * - what stands behind its keys: its agents (documents of kind agent, owned by the account), plans
 *   (subscriptions) and rentals.
 * The ledger's and the documents' triggers fire only for those rows (their WHEN is checked before
 * any call), so a usage entry, the gateway's every call, pays no function call for it. PostgreSQL
 * folds a transaction's equal notices into one.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/** The channel the notices are sent on. */
export const ACCOUNT_NOTICE_CHANNEL = "account_state"

export const accountNotices = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql.unsafe(`
    CREATE FUNCTION account_state_notice() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM pg_notify('${ACCOUNT_NOTICE_CHANNEL}', CASE WHEN TG_OP = 'DELETE' THEN OLD.account_id ELSE NEW.account_id END);
      RETURN NULL;
    END $$`)
  yield* sql`
    CREATE TRIGGER billing_settings_notice AFTER INSERT OR UPDATE OR DELETE ON billing_settings
      FOR EACH ROW EXECUTE FUNCTION account_state_notice()`
  yield* sql`
    CREATE TRIGGER receipts_notice AFTER INSERT OR UPDATE OR DELETE ON receipts
      FOR EACH ROW EXECUTE FUNCTION account_state_notice()`
  yield* sql`
    CREATE TRIGGER ledger_reversal_notice AFTER INSERT ON ledger_entries
      FOR EACH ROW WHEN (NEW.type = 'credit_reversed') EXECUTE FUNCTION account_state_notice()`
  for (const table of ["subscriptions", "rentals"]) {
    yield* sql.unsafe(`
      CREATE TRIGGER ${table}_notice AFTER INSERT OR UPDATE OR DELETE ON ${table}
        FOR EACH ROW EXECUTE FUNCTION account_state_notice()`)
  }
  // A document's account is its owner_id (an agent is owned by its account: core agents/Records.ts).
  yield* sql.unsafe(`
    CREATE FUNCTION account_document_notice() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM pg_notify('${ACCOUNT_NOTICE_CHANNEL}', CASE WHEN TG_OP = 'DELETE' THEN OLD.owner_id ELSE NEW.owner_id END);
      RETURN NULL;
    END $$`)
  yield* sql`
    CREATE TRIGGER agent_notice AFTER INSERT OR UPDATE ON documents
      FOR EACH ROW WHEN (NEW.kind = 'agent') EXECUTE FUNCTION account_document_notice()`
  yield* sql`
    CREATE TRIGGER agent_deleted_notice AFTER DELETE ON documents
      FOR EACH ROW WHEN (OLD.kind = 'agent') EXECUTE FUNCTION account_document_notice()`
})
