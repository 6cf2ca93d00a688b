/**
 * Credits taken back by a refund or a dispute (core/src/payments/Reversals.ts): a ledger entry of type
 * `credit_reversed`, negative, beside the positive credit entries and the negative usage entries.
 * The table's check on amount by type (migration 0001, unnamed) is replaced by a named one that
 * knows the new type.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export const ledgerReversals = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const checks = yield* sql<{ readonly conname: string }>`
    SELECT conname FROM pg_constraint
    WHERE conrelid = 'ledger_entries'::regclass AND contype = 'c' AND pg_get_constraintdef(oid) LIKE '%plan_credit_granted%'`
  for (const check of checks) yield* sql`ALTER TABLE ledger_entries DROP CONSTRAINT ${sql(check.conname)}`
  yield* sql`
    ALTER TABLE ledger_entries ADD CONSTRAINT ledger_entries_amount_by_type
      CHECK (CASE type WHEN 'usage' THEN amount < 0
                       WHEN 'credit_added' THEN amount > 0
                       WHEN 'plan_credit_granted' THEN amount > 0
                       WHEN 'credit_reversed' THEN amount < 0
                       ELSE false END)`
})
