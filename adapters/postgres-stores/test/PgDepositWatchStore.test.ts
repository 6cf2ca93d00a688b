/**
 * The deposit watch store contract on Postgres: embedded PGlite in memory, and a real PostgreSQL
 * server when TEST_DATABASE_URL is set (there the concurrency tests exercise real row locks across
 * a pool of connections).
 */
import { describe, it } from "@effect/vitest"
import { Layer } from "effect"
import { depositWatchStoreContract } from "@model-platform/contract-kit/DepositWatchContract"
import * as Database from "../src/database/Database.ts"
import { DepositWatchStorePg } from "../src/PgDepositWatchStore.ts"

const store = (options: Database.Options) => DepositWatchStorePg.pipe(Layer.provide(Database.layer(options)))

depositWatchStoreContract("DepositWatchStorePg on in-memory PGlite", store({ dataDir: Database.MEMORY }))

const databaseUrl = process.env["TEST_DATABASE_URL"]
describe.skipIf(databaseUrl === undefined)("DepositWatchStorePg on PostgreSQL (TEST_DATABASE_URL)", () => {
  if (databaseUrl !== undefined) depositWatchStoreContract("contract", store({ databaseUrl, dataDir: "unused" }))
  else it.skip("set TEST_DATABASE_URL=postgres://... to run the contract on a PostgreSQL server", () => {})
})
