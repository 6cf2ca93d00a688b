/**
 * Each account's billing settings (PgBillingSettingsStore.ts): the record's encoded form
 * (core/src/billing/Settings.ts) as one jsonb object of sections, merged per update with `||`,
 * so a section added to the record later needs no migration.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export const billingSettings = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE billing_settings (
      account_id text PRIMARY KEY,
      settings jsonb NOT NULL CHECK (jsonb_typeof(settings) = 'object'),
      updated_at timestamptz NOT NULL
    )`
})
