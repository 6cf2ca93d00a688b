/**
 * Concurrent renewal jobs charge a due card plan at most once on the Postgres stores
 * (RenewalProperty.ts): embedded PGlite, and a PostgreSQL server when TEST_DATABASE_URL is set
 * (there the processes' store operations race across a pool of connections), in a database of its own.
 */
import { describe, it } from "@effect/vitest"
import { AccountStoreMemory } from "@model-platform/memory-stores/MemoryStores"
import { renewalProperty } from "@model-platform/contract-kit/RenewalProperty"
import { Effect, Layer } from "effect"
import * as Database from "../src/database/Database.ts"
import { AlertStorePg } from "../src/PgAlertStore.ts"
import { BillingSettingsStorePg } from "../src/PgBillingSettingsStore.ts"
import { LedgerStorePg } from "../src/PgLedgerStore.ts"
import { OrderStorePg } from "../src/PgOrderStore.ts"
import { PlanStorePg } from "../src/PgPlanStore.ts"
import { freshDatabaseUrl } from "./freshDatabase.ts"

const stores = (options: Database.Options) =>
  Layer.mergeAll(PlanStorePg, AlertStorePg, LedgerStorePg, OrderStorePg, BillingSettingsStorePg).pipe(
    Layer.provide(Database.layer(options)),
    Layer.merge(AccountStoreMemory)
  )

renewalProperty("plan renewals on in-memory PGlite", stores({ dataDir: Database.MEMORY }), 15)

const databaseUrl = process.env["TEST_DATABASE_URL"]
describe.skipIf(databaseUrl === undefined)("plan renewals on PostgreSQL (TEST_DATABASE_URL)", () => {
  if (databaseUrl !== undefined) {
    renewalProperty(
      "property",
      Layer.unwrap(Effect.map(Effect.promise(() => freshDatabaseUrl(databaseUrl)), (url) => stores({ databaseUrl: url, dataDir: "unused" }))),
      30
    )
  }
  else it.skip("set TEST_DATABASE_URL=postgres://... to run the property on a PostgreSQL server", () => {})
})
