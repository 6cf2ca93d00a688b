/**
 * The gateway store contract on Postgres (`GatewayStorePg`: `gateway_admit` and `gateway_commit`
 * of migration 0007, checked through the other Pg stores of the same database): embedded PGlite
 * in memory, and a real PostgreSQL server when TEST_DATABASE_URL is set (there the concurrency
 * tests race on real row locks across a pool of connections).
 */
import { describe, it } from "@effect/vitest"
import { Layer } from "effect"
import { gatewayStoreContract } from "@model-platform/contract-kit/GatewayStoreContract"
import * as Database from "../src/database/Database.ts"
import { PgPlatformStores } from "../src/PgPlatformStores.ts"

const stores = (options: Database.Options) => PgPlatformStores.pipe(Layer.provide(Database.layer(options)))

gatewayStoreContract("GatewayStorePg on in-memory PGlite", stores({ dataDir: Database.MEMORY }))

const databaseUrl = process.env["TEST_DATABASE_URL"]
describe.skipIf(databaseUrl === undefined)("GatewayStorePg on PostgreSQL (TEST_DATABASE_URL)", () => {
  if (databaseUrl !== undefined) gatewayStoreContract("contract", stores({ databaseUrl, dataDir: "unused" }))
  else it.skip("set TEST_DATABASE_URL=postgres://... to run the contract on a PostgreSQL server", () => {})
})
