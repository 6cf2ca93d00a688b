/**
 * Statements close month over month on the Postgres stores (StatementsProperty.ts): embedded
 * PGlite, and a real PostgreSQL server when TEST_DATABASE_URL is set, in a database of its own.
 */
import { describe, it } from "@effect/vitest"
import { statementsProperty } from "@model-platform/contract-kit/StatementsProperty"
import { Effect, Layer } from "effect"
import * as Database from "../src/database/Database.ts"
import { LedgerStorePg } from "../src/PgLedgerStore.ts"
import { UsageStorePg } from "../src/PgUsageStore.ts"
import { freshDatabaseUrl } from "./freshDatabase.ts"

const stores = (options: Database.Options) => Layer.mergeAll(LedgerStorePg, UsageStorePg).pipe(Layer.provide(Database.layer(options)))

statementsProperty("statements on in-memory PGlite", stores({ dataDir: Database.MEMORY }), 15)

const databaseUrl = process.env["TEST_DATABASE_URL"]
describe.skipIf(databaseUrl === undefined)("statements on PostgreSQL (TEST_DATABASE_URL)", () => {
  if (databaseUrl !== undefined) {
    statementsProperty(
      "property",
      Layer.unwrap(Effect.map(Effect.promise(() => freshDatabaseUrl(databaseUrl)), (url) => stores({ databaseUrl: url, dataDir: "unused" }))),
      25
    )
  }
  else it.skip("set TEST_DATABASE_URL=postgres://... to run the property on a PostgreSQL server", () => {})
})
