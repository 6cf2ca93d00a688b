/**
 * Idempotency records at rest (test-harness IdempotencyRecordsSuite.ts) through the real Node
 * server, read straight from the `idempotency_records` table: on embedded Postgres (PGlite), and
 * on a PostgreSQL server when TEST_DATABASE_URL is set.
 */
import { fixtureCatalogue } from "@model-platform/test-harness/Fixtures"
import { idempotencyRecordsSuite } from "@model-platform/test-harness/IdempotencyRecordsSuite"
import { Effect, Layer, ManagedRuntime } from "effect"
import { SqlClient } from "effect/sql"
import { describe } from "vitest"
import { Database, type Options } from "@model-platform/postgres-stores/database"
import { PgPlatformStores } from "@model-platform/postgres-stores"
import type { ServerOptions } from "../src/Server.ts"
import { freshDatabaseUrl, startNodeServer } from "./support.ts"

/** The Node server on a database this test also reads, closed with the server. */
const onDatabase = async (options: Options, platform: ServerOptions["platform"]) => {
  const database = ManagedRuntime.make(Database.layer(options))
  const context = await database.context()
  const shell = await startNodeServer(fixtureCatalogue, PgPlatformStores.pipe(Layer.provide(Layer.succeedContext(context))), { platform })
  return {
    ...shell,
    idempotencyRecords: () =>
      database.runPromise(Effect.flatMap(SqlClient.SqlClient, (sql) => sql<Record<string, unknown>>`SELECT * FROM idempotency_records`)),
    close: async () => {
      await shell.close()
      await database.dispose()
    }
  }
}

idempotencyRecordsSuite("node-http, embedded Postgres", (platform) => onDatabase({ dataDir: Database.MEMORY }, platform))

const serverUrl = process.env.TEST_DATABASE_URL
describe.skipIf(serverUrl === undefined)("on a PostgreSQL server (TEST_DATABASE_URL)", () => {
  idempotencyRecordsSuite("node-http, PostgreSQL server", async (platform) =>
    onDatabase({ databaseUrl: await freshDatabaseUrl(serverUrl!), dataDir: "" }, platform))
})
