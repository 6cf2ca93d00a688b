/**
 * The plan store contract on Postgres: embedded PGlite in memory, and a real PostgreSQL server
 * when TEST_DATABASE_URL is set (there the concurrent inserts of one order race on the unique
 * indexes, and concurrent renewals on the plan's row lock, across a pool of connections). The
 * server suite runs on a new database each time: the server outlives a run, and the contract's
 * dueRenewals test reads every account's due plans, so plans left by an earlier run would come
 * first.
 */
import { describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { planStoreContract } from "@model-platform/contract-kit/PlanContract"
import * as Database from "../src/database/Database.ts"
import { PlanStorePg } from "../src/PgPlanStore.ts"
import { freshDatabaseUrl } from "./freshDatabase.ts"

const store = (options: Database.Options) => PlanStorePg.pipe(Layer.provide(Database.layer(options)))

planStoreContract("PlanStorePg on in-memory PGlite", store({ dataDir: Database.MEMORY }))

/** The store on a new database of the server at `serverUrl`, created when the layer is built. */
const onFreshDatabase = (serverUrl: string) =>
  Layer.unwrap(Effect.map(Effect.promise(() => freshDatabaseUrl(serverUrl)), (databaseUrl) => store({ databaseUrl, dataDir: "unused" })))

const databaseUrl = process.env["TEST_DATABASE_URL"]
describe.skipIf(databaseUrl === undefined)("PlanStorePg on PostgreSQL (TEST_DATABASE_URL)", () => {
  if (databaseUrl !== undefined) planStoreContract("contract", onFreshDatabase(databaseUrl))
  else it.skip("set TEST_DATABASE_URL=postgres://... to run the contract on a PostgreSQL server", () => {})
})
