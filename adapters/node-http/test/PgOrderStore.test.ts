/**
 * The order store contract on Postgres: embedded PGlite in memory, and a real PostgreSQL server
 * when TEST_DATABASE_URL is set (there the concurrency tests exercise real row locks and unique
 * indexes across a pool of connections).
 */
import { describe, it } from "@effect/vitest"
import { Layer } from "effect"
import { orderStoreContract } from "@model-platform/test-harness/OrderContract"
import * as Database from "../src/postgres/Database.ts"
import { OrderStorePg } from "../src/postgres/PgOrderStore.ts"

const store = (options: Database.Options) => OrderStorePg.pipe(Layer.provide(Database.layer(options)))

orderStoreContract("OrderStorePg on in-memory PGlite", store({ dataDir: Database.MEMORY }))

const databaseUrl = process.env["TEST_DATABASE_URL"]
describe.skipIf(databaseUrl === undefined)("OrderStorePg on PostgreSQL (TEST_DATABASE_URL)", () => {
  if (databaseUrl !== undefined) orderStoreContract("contract", store({ databaseUrl, dataDir: "unused" }))
  else it.skip("set TEST_DATABASE_URL=postgres://... to run the contract on a PostgreSQL server", () => {})
})
