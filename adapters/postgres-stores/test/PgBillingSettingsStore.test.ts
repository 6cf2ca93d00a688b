/**
 * The billing settings store contract on Postgres: embedded PGlite in memory, and a real
 * PostgreSQL server when TEST_DATABASE_URL is set (there concurrent updates race on one row across
 * a pool of connections), in a database of its own: a migration run on the server's shared
 * database ahead of the ones numbered before it would keep those from ever running there.
 */
import { describe, it } from "@effect/vitest"
import { billingSettingsStoreContract } from "@model-platform/contract-kit/BillingSettingsContract"
import { Effect, Layer } from "effect"
import * as Database from "../src/database/Database.ts"
import { BillingSettingsStorePg } from "../src/PgBillingSettingsStore.ts"
import { freshDatabaseUrl } from "./freshDatabase.ts"

const store = (options: Database.Options) => BillingSettingsStorePg.pipe(Layer.provide(Database.layer(options)))

billingSettingsStoreContract("BillingSettingsStorePg on in-memory PGlite", store({ dataDir: Database.MEMORY }))

const databaseUrl = process.env["TEST_DATABASE_URL"]
describe.skipIf(databaseUrl === undefined)("BillingSettingsStorePg on PostgreSQL (TEST_DATABASE_URL)", () => {
  if (databaseUrl !== undefined) {
    billingSettingsStoreContract(
      "contract",
      Layer.unwrap(Effect.map(Effect.promise(() => freshDatabaseUrl(databaseUrl)), (url) => store({ databaseUrl: url, dataDir: "unused" })))
    )
  }
  else it.skip("set TEST_DATABASE_URL=postgres://... to run the contract on a PostgreSQL server", () => {})
})
