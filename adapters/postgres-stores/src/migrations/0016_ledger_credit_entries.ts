/**
 * An index of the ledger's credit entries only (PgLedgerStore.ts `creditTotals`, statements:
 * docs/billing.md "Statements"): an account's credits are few, its usage entries one per call
 * (millions), so the credit totals per month read this partial index and never the usage rows.
 * The query's `type <> 'usage'` must match the index's predicate for the planner to use it.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export const ledgerCreditEntries = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE INDEX ledger_credit_entries ON ledger_entries (account_id, created_at) WHERE type <> 'usage'`
})
