/**
 * Whether a receipt counts toward the usage tier (core/src/payments/OrderStore.ts
 * `ReceiptRecord.counts_toward_tier`): decided by core when the receipt is made and summed by
 * PgOrderStore.ts `purchasedCredits`.
 * - Receipts written before it get the rule they were counted by until now (credits and package
 *   receipts count), so no account's tier moves.
 * - A writer that does not name the column — a server of the previous release still running while
 *   the next one starts — has its receipts flagged by that same rule (the trigger), rather than
 *   refused by NOT NULL; every release from this one on names it.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export const receiptTierFlag = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE receipts ADD COLUMN counts_toward_tier boolean`
  yield* sql`UPDATE receipts SET counts_toward_tier = kind IN ('credits', 'package')`
  yield* sql`ALTER TABLE receipts ALTER COLUMN counts_toward_tier SET NOT NULL`
  yield* sql`
    CREATE FUNCTION receipts_tier_flag_of_previous_release() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF NEW.counts_toward_tier IS NULL THEN
        NEW.counts_toward_tier := NEW.kind IN ('credits', 'package');
      END IF;
      RETURN NEW;
    END $$`
  yield* sql`
    CREATE TRIGGER receipts_tier_flag BEFORE INSERT ON receipts
      FOR EACH ROW EXECUTE FUNCTION receipts_tier_flag_of_previous_release()`
})
