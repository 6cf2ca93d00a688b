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
  // The trigger's argument names the row's account column (a document's is owner_id: an agent is
  // owned by its account, core agents/Records.ts). Only on these rare writes is the row made jsonb.
  yield* sql.unsafe(`
    CREATE FUNCTION account_state_notice() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM pg_notify('${ACCOUNT_NOTICE_CHANNEL}', to_jsonb(CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END) ->> TG_ARGV[0]);
      RETURN NULL;
    END $$`)
  for (const table of ["billing_settings", "receipts", "subscriptions", "rentals"]) {
    yield* sql.unsafe(`
      CREATE TRIGGER ${table}_notice AFTER INSERT OR UPDATE OR DELETE ON ${table}
        FOR EACH ROW EXECUTE FUNCTION account_state_notice('account_id')`)
  }
  yield* sql`
    CREATE TRIGGER ledger_reversal_notice AFTER INSERT ON ledger_entries
      FOR EACH ROW WHEN (NEW.type = 'credit_reversed') EXECUTE FUNCTION account_state_notice('account_id')`
  yield* sql`
    CREATE TRIGGER agent_notice AFTER INSERT OR UPDATE ON documents
      FOR EACH ROW WHEN (NEW.kind = 'agent') EXECUTE FUNCTION account_state_notice('owner_id')`
  yield* sql`
    CREATE TRIGGER agent_deleted_notice AFTER DELETE ON documents
      FOR EACH ROW WHEN (OLD.kind = 'agent') EXECUTE FUNCTION account_state_notice('owner_id')`
})
