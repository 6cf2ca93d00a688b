/**
 * The plan store contract on Postgres: embedded PGlite in memory, and a real PostgreSQL server
 * when TEST_DATABASE_URL is set (there the concurrent inserts of one order race on the unique
 * indexes across a pool of connections).
 */
import { describe, it } from "@effect/vitest"
import { Layer } from "effect"
import { planStoreContract } from "@model-platform/test-harness/PlanContract"
import * as Database from "../src/postgres/Database.ts"
import { PlanStorePg } from "../src/postgres/PgPlanStore.ts"

const store = (options: Database.Options) => PlanStorePg.pipe(Layer.provide(Database.layer(options)))

planStoreContract("PlanStorePg on in-memory PGlite", store({ dataDir: Database.MEMORY }))

const databaseUrl = process.env["TEST_DATABASE_URL"]
describe.skipIf(databaseUrl === undefined)("PlanStorePg on PostgreSQL (TEST_DATABASE_URL)", () => {
  if (databaseUrl !== undefined) planStoreContract("contract", store({ databaseUrl, dataDir: "unused" }))
  else it.skip("set TEST_DATABASE_URL=postgres://... to run the contract on a PostgreSQL server", () => {})
})
