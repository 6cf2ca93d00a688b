/**
 * Whether a receipt counts toward the usage tier (core/src/payments/OrderStore.ts
 * `ReceiptRecord.counts_toward_tier`): decided by core when the receipt is made and summed by
 * PgOrderStore.ts `purchasedCredits`. Receipts written before it are given the rule they were
 * counted by until now (credits and package receipts count), so no account's tier moves.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export const receiptTierFlag = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE receipts ADD COLUMN counts_toward_tier boolean`
  yield* sql`UPDATE receipts SET counts_toward_tier = kind IN ('credits', 'package')`
  yield* sql`ALTER TABLE receipts ALTER COLUMN counts_toward_tier SET NOT NULL`
})
