/**
 * The billing properties of the contract kit (BillingProperties.ts) on the Postgres stores:
 * embedded PGlite, and a PostgreSQL server when TEST_DATABASE_URL is set, in a database of its own.
 */
import { describe, it } from "@effect/vitest"
import { billingProperties } from "@model-platform/contract-kit/BillingProperties"
import { Effect, Layer } from "effect"
import * as Database from "../src/database/Database.ts"
import { LedgerStorePg } from "../src/PgLedgerStore.ts"
import { OrderStorePg } from "../src/PgOrderStore.ts"
import { freshDatabaseUrl } from "./freshDatabase.ts"

const stores = (options: Database.Options) => Layer.mergeAll(LedgerStorePg, OrderStorePg).pipe(Layer.provide(Database.layer(options)))

billingProperties("billing on in-memory PGlite", stores({ dataDir: Database.MEMORY }), { numRuns: 30 })

const databaseUrl = process.env["TEST_DATABASE_URL"]
describe.skipIf(databaseUrl === undefined)("billing on PostgreSQL (TEST_DATABASE_URL)", () => {
  if (databaseUrl !== undefined) {
    billingProperties(
      "PostgreSQL",
      Layer.unwrap(Effect.map(Effect.promise(() => freshDatabaseUrl(databaseUrl)), (url) => stores({ databaseUrl: url, dataDir: "unused" }))),
      { numRuns: 30 }
    )
  }
  else it.skip("set TEST_DATABASE_URL=postgres://... to run the properties on a PostgreSQL server", () => {})
})
