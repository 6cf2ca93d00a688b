/**
 * The usage store contract on Postgres: embedded PGlite in memory, and a real PostgreSQL server
 * when TEST_DATABASE_URL is set (there concurrent records of one ref race on the primary key
 * across a pool of connections).
 */
import { describe, it } from "@effect/vitest"
import { Layer } from "effect"
import { usageStoreContract } from "@model-platform/contract-kit/UsageContract"
import * as Database from "../src/database/Database.ts"
import { UsageStorePg } from "../src/PgUsageStore.ts"

const store = (options: Database.Options) => UsageStorePg.pipe(Layer.provide(Database.layer(options)))

usageStoreContract("UsageStorePg on in-memory PGlite", store({ dataDir: Database.MEMORY }))

const databaseUrl = process.env["TEST_DATABASE_URL"]
describe.skipIf(databaseUrl === undefined)("UsageStorePg on PostgreSQL (TEST_DATABASE_URL)", () => {
  if (databaseUrl !== undefined) usageStoreContract("contract", store({ databaseUrl, dataDir: "unused" }))
  else it.skip("set TEST_DATABASE_URL=postgres://... to run the contract on a PostgreSQL server", () => {})
})
