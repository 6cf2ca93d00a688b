/**
 * Racing deposit watchers over reorgs pay once on the Postgres stores (DepositWatchProperty.ts):
 * embedded PGlite, and a real PostgreSQL server when TEST_DATABASE_URL is set (there the
 * processes' store operations race across a pool of connections), in a database of its own.
 */
import { describe, it } from "@effect/vitest"
import { depositWatchProperty } from "@model-platform/contract-kit/DepositWatchProperty"
import { Effect, Layer } from "effect"
import * as Database from "../src/database/Database.ts"
import { DepositWatchStorePg } from "../src/PgDepositWatchStore.ts"
import { LedgerStorePg } from "../src/PgLedgerStore.ts"
import { OrderStorePg } from "../src/PgOrderStore.ts"
import { PlanStorePg } from "../src/PgPlanStore.ts"
import { freshDatabaseUrl } from "./freshDatabase.ts"

const stores = (options: Database.Options) =>
  Layer.mergeAll(OrderStorePg, LedgerStorePg, PlanStorePg, DepositWatchStorePg).pipe(Layer.provide(Database.layer(options)))

depositWatchProperty("the deposit watcher on in-memory PGlite", stores({ dataDir: Database.MEMORY }), 10)

const databaseUrl = process.env["TEST_DATABASE_URL"]
describe.skipIf(databaseUrl === undefined)("the deposit watcher on PostgreSQL (TEST_DATABASE_URL)", () => {
  if (databaseUrl !== undefined) {
    depositWatchProperty(
      "property",
      Layer.unwrap(Effect.map(Effect.promise(() => freshDatabaseUrl(databaseUrl)), (url) => stores({ databaseUrl: url, dataDir: "unused" }))),
      25
    )
  }
  else it.skip("set TEST_DATABASE_URL=postgres://... to run the property on a PostgreSQL server", () => {})
})
