/** The shared HTTP suite through the real Node server, on every store the Node shell has. */
import { boundarySuite, nodeRawSender } from "@model-platform/test-harness/BoundarySuite"
import { fixtureCatalogue } from "@model-platform/test-harness/Fixtures"
import { platformHttpSuite } from "@model-platform/test-harness/HttpSuite"
import { permissionMatrixSuite } from "@model-platform/test-harness/PermissionMatrix"
import { MemoryPlatformStores } from "@model-platform/test-harness/MemoryPlatformStores"
import { Layer } from "effect"
import { describe } from "vitest"
import { Database } from "../src/postgres/Database.ts"
import { PgPlatformStores } from "../src/postgres/PgPlatformStores.ts"
import { freshDatabaseUrl, startNodeServer } from "./support.ts"

platformHttpSuite("node-http, memory stores", () => startNodeServer(fixtureCatalogue, MemoryPlatformStores))

platformHttpSuite("node-http, embedded Postgres", () =>
  startNodeServer(fixtureCatalogue, PgPlatformStores.pipe(Layer.provide(Database.layer({ dataDir: Database.MEMORY })))))

permissionMatrixSuite("node-http, embedded Postgres", () =>
  startNodeServer(fixtureCatalogue, PgPlatformStores.pipe(Layer.provide(Database.layer({ dataDir: Database.MEMORY })))))

/** The Node server with a sender that puts the request target on the socket as given. */
const withRawSender = async (started: ReturnType<typeof startNodeServer>) => {
  const shell = await started
  return { ...shell, raw: nodeRawSender(shell.url) }
}

boundarySuite("node-http, embedded Postgres", () =>
  withRawSender(startNodeServer(fixtureCatalogue, PgPlatformStores.pipe(Layer.provide(Database.layer({ dataDir: Database.MEMORY }))))))

const serverUrl = process.env.TEST_DATABASE_URL
describe.skipIf(serverUrl === undefined)("on a PostgreSQL server (TEST_DATABASE_URL)", () => {
  platformHttpSuite("node-http, PostgreSQL server", async () =>
    startNodeServer(
      fixtureCatalogue,
      PgPlatformStores.pipe(Layer.provide(Database.layer({ databaseUrl: await freshDatabaseUrl(serverUrl!), dataDir: "" })))
    ))
  boundarySuite("node-http, PostgreSQL server", async () =>
    withRawSender(startNodeServer(
      fixtureCatalogue,
      PgPlatformStores.pipe(Layer.provide(Database.layer({ databaseUrl: await freshDatabaseUrl(serverUrl!), dataDir: "" })))
    )))
})
