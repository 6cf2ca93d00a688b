/**
 * Plans and rentals over time (test-harness PlansLifecycleSuite.ts) through the real Node server on
 * the embedded Postgres (PGlite), and on a PostgreSQL server when TEST_DATABASE_URL is set: the
 * clock moved past a plan's period, its renewal job running beside the server.
 */
import { plansLifecycleSuite } from "@model-platform/test-harness/PlansLifecycleSuite"
import { Layer } from "effect"
import { describe } from "vitest"
import { Database } from "@model-platform/postgres-stores/database"
import { PgPlatformStores } from "@model-platform/postgres-stores"
import { freshDatabaseUrl, startNodeServer } from "./support.ts"

const embedded = () => PgPlatformStores.pipe(Layer.provide(Database.layer({ dataDir: Database.MEMORY })))

plansLifecycleSuite("node-http, embedded Postgres", (catalogue, platform) => startNodeServer(catalogue, embedded(), { platform }))

const serverUrl = process.env.TEST_DATABASE_URL
describe.skipIf(serverUrl === undefined)("on a PostgreSQL server (TEST_DATABASE_URL)", () => {
  plansLifecycleSuite("node-http, PostgreSQL server", async (catalogue, platform) =>
    startNodeServer(
      catalogue,
      PgPlatformStores.pipe(Layer.provide(Database.layer({ databaseUrl: await freshDatabaseUrl(serverUrl!), dataDir: "" }))),
      { platform }
    ))
})
