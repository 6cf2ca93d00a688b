/**
 * The alert store contract on Postgres: embedded PGlite in memory, and a real PostgreSQL server
 * when TEST_DATABASE_URL is set (there concurrent raises and swaps race across a pool of
 * connections), in a database of its own.
 */
import { describe, it } from "@effect/vitest"
import { alertStoreContract } from "@model-platform/contract-kit/AlertContract"
import { Effect, Layer } from "effect"
import * as Database from "../src/database/Database.ts"
import { AlertStorePg } from "../src/PgAlertStore.ts"
import { freshDatabaseUrl } from "./freshDatabase.ts"

const store = (options: Database.Options) => AlertStorePg.pipe(Layer.provide(Database.layer(options)))

alertStoreContract("AlertStorePg on in-memory PGlite", store({ dataDir: Database.MEMORY }))

const databaseUrl = process.env["TEST_DATABASE_URL"]
describe.skipIf(databaseUrl === undefined)("AlertStorePg on PostgreSQL (TEST_DATABASE_URL)", () => {
  if (databaseUrl !== undefined) {
    alertStoreContract(
      "contract",
      Layer.unwrap(Effect.map(Effect.promise(() => freshDatabaseUrl(databaseUrl)), (url) => store({ databaseUrl: url, dataDir: "unused" })))
    )
  }
  else it.skip("set TEST_DATABASE_URL=postgres://... to run the contract on a PostgreSQL server", () => {})
})
