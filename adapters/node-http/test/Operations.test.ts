/**
 * Probes and request ids (test-harness OperationsSuite) through the real Node server, on every
 * store the Node shell has.
 */
import { fixtureCatalogue } from "@model-platform/test-harness/Fixtures"
import { MemoryPlatformStores } from "@model-platform/memory-stores/MemoryPlatformStores"
import { operationsSuite } from "@model-platform/test-harness/OperationsSuite"
import { operatorSuite } from "@model-platform/test-harness/OperatorSuite"
import { Layer } from "effect"
import { describe } from "vitest"
import { Database } from "@model-platform/postgres-stores/database"
import { PgPlatformStores } from "@model-platform/postgres-stores"
import { freshDatabaseUrl, startNodeServer } from "./support.ts"

operationsSuite("node-http, memory stores", () => startNodeServer(fixtureCatalogue, MemoryPlatformStores))

operationsSuite("node-http, embedded Postgres", () =>
  startNodeServer(fixtureCatalogue, PgPlatformStores.pipe(Layer.provide(Database.layer({ dataDir: Database.MEMORY })))))

operatorSuite("node-http, memory stores", (operatorKeys) =>
  startNodeServer(fixtureCatalogue, MemoryPlatformStores, { platform: { operatorKeys } }))

operatorSuite("node-http, embedded Postgres", (operatorKeys) =>
  startNodeServer(fixtureCatalogue, PgPlatformStores.pipe(Layer.provide(Database.layer({ dataDir: Database.MEMORY }))), { platform: { operatorKeys } }))

const serverUrl = process.env.TEST_DATABASE_URL
describe.skipIf(serverUrl === undefined)("on a PostgreSQL server (TEST_DATABASE_URL)", () => {
  operationsSuite("node-http, PostgreSQL server", async () =>
    startNodeServer(
      fixtureCatalogue,
      PgPlatformStores.pipe(Layer.provide(Database.layer({ databaseUrl: await freshDatabaseUrl(serverUrl!), dataDir: "" })))
    ))
  operatorSuite("node-http, PostgreSQL server", async (operatorKeys) =>
    startNodeServer(
      fixtureCatalogue,
      PgPlatformStores.pipe(Layer.provide(Database.layer({ databaseUrl: await freshDatabaseUrl(serverUrl!), dataDir: "" }))),
      { platform: { operatorKeys } }
    ))
})
