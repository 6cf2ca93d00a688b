/**
 * Automatic top-ups charge exactly once per crossing on the Postgres stores (TopUpProperty.ts):
 * embedded PGlite, and a real PostgreSQL server when TEST_DATABASE_URL is set (there the
 * processes' store operations race across a pool of connections), in a database of its own.
 */
import { describe, it } from "@effect/vitest"
import { AccountStoreMemory } from "@model-platform/memory-stores/MemoryStores"
import { topUpProperty } from "@model-platform/contract-kit/TopUpProperty"
import { Effect, Layer } from "effect"
import * as Database from "../src/database/Database.ts"
import { AlertStorePg } from "../src/PgAlertStore.ts"
import { BillingSettingsStorePg } from "../src/PgBillingSettingsStore.ts"
import { LedgerStorePg } from "../src/PgLedgerStore.ts"
import { OrderStorePg } from "../src/PgOrderStore.ts"
import { PlanStorePg } from "../src/PgPlanStore.ts"
import { freshDatabaseUrl } from "./freshDatabase.ts"

const stores = (options: Database.Options) =>
  Layer.mergeAll(AlertStorePg, LedgerStorePg, OrderStorePg, PlanStorePg, BillingSettingsStorePg).pipe(
    Layer.provide(Database.layer(options)),
    Layer.merge(AccountStoreMemory)
  )

topUpProperty("automatic top-ups on in-memory PGlite", stores({ dataDir: Database.MEMORY }), 8)

const databaseUrl = process.env["TEST_DATABASE_URL"]
describe.skipIf(databaseUrl === undefined)("automatic top-ups on PostgreSQL (TEST_DATABASE_URL)", () => {
  if (databaseUrl !== undefined) {
    topUpProperty(
      "property",
      Layer.unwrap(Effect.map(Effect.promise(() => freshDatabaseUrl(databaseUrl)), (url) => stores({ databaseUrl: url, dataDir: "unused" }))),
      25
    )
  }
  else it.skip("set TEST_DATABASE_URL=postgres://... to run the property on a PostgreSQL server", () => {})
})
