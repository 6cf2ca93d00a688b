/**
 * The billing settings store port (core/src/billing/BillingSettingsStore.ts) on Postgres; the table
 * comes from the `0013_billing_settings` migration (./migrations/0013_billing_settings.ts). A row
 * holds the record's encoded form (core/src/billing/Settings.ts) as a jsonb object of sections,
 * read back through the record's Schema. An update is one statement: an upsert whose conflict
 * branch merges the patch's sections into the row with jsonb `||` under the row's lock, so two
 * updates of different sections both land whatever their order.
 */
import { type BillingSettingsPatch, BillingSettingsStore, decodeStored, encodePatch } from "@model-platform/core/billing"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"

/** jsonb comes back parsed from the pg driver and PGlite; as text from anything else. */
const parsed = (value: unknown): Record<string, unknown> =>
  (typeof value === "string" ? JSON.parse(value) : value) as Record<string, unknown>

const readRows = (rows: ReadonlyArray<{ readonly settings: unknown }>) => {
  const settings = decodeStored(rows[0] === undefined ? undefined : parsed(rows[0].settings))
  return settings === undefined
    ? Effect.die(new Error("BillingSettingsStore: a stored record does not decode"))
    : Effect.succeed(settings)
}

export const BillingSettingsStorePg: Layer.Layer<BillingSettingsStore, never, SqlClient.SqlClient> = Layer.effect(
  BillingSettingsStore,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const get = (accountId: string) =>
      sql<{ readonly settings: unknown }>`SELECT settings FROM billing_settings WHERE account_id = ${accountId}`.pipe(
        Effect.orDie,
        Effect.flatMap(readRows),
        Effect.withSpan("BillingSettingsStore.get")
      )

    const update = (accountId: string, patch: BillingSettingsPatch) => {
      const encoded = encodePatch(patch)
      if (encoded._tag === "invalid") return Effect.die(new Error(`BillingSettingsStore.update: ${encoded.message}`))
      const sections = JSON.stringify(encoded.sections)
      return sql<{ readonly settings: unknown }>`
        INSERT INTO billing_settings (account_id, settings, updated_at)
        VALUES (${accountId}, ${sections}::jsonb, now())
        ON CONFLICT (account_id) DO UPDATE
          SET settings = billing_settings.settings || EXCLUDED.settings, updated_at = now()
        RETURNING settings`.pipe(
        Effect.orDie,
        Effect.flatMap(readRows),
        Effect.withSpan("BillingSettingsStore.update")
      )
    }

    return BillingSettingsStore.of({ get, update })
  })
)
