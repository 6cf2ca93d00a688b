/**
 * The monthly limits' and the allowances' HTTP suites (test-harness BillingLimitsSuite.ts,
 * BillingAllowancesSuite.ts) through the real Node server:
 * on memory stores, on the embedded Postgres (PGlite), and on a PostgreSQL server when
 * TEST_DATABASE_URL is set, where 64 concurrent calls of a limited key (of an account living on its
 * allowance and trial) race across a pool of connections.
 */
import { billingAllowancesSuite } from "@model-platform/test-harness/BillingAllowancesSuite"
import { billingLimitsSuite } from "@model-platform/test-harness/BillingLimitsSuite"
import { MemoryPlatformStores } from "@model-platform/memory-stores/MemoryPlatformStores"
import { Layer } from "effect"
import { describe } from "vitest"
import { Database } from "@model-platform/postgres-stores/database"
import { PgPlatformStores } from "@model-platform/postgres-stores"
import { freshDatabaseUrl, startNodeServer } from "./support.ts"

const embedded = () => PgPlatformStores.pipe(Layer.provide(Database.layer({ dataDir: Database.MEMORY })))

billingLimitsSuite("node-http, memory stores", (catalogue) => startNodeServer(catalogue, MemoryPlatformStores))
billingLimitsSuite("node-http, embedded Postgres", (catalogue) => startNodeServer(catalogue, embedded()))
billingAllowancesSuite("node-http, embedded Postgres", (catalogue) => startNodeServer(catalogue, embedded()))

const serverUrl = process.env.TEST_DATABASE_URL
describe.skipIf(serverUrl === undefined)("on a PostgreSQL server (TEST_DATABASE_URL)", () => {
  const server = async () =>
    PgPlatformStores.pipe(Layer.provide(Database.layer({ databaseUrl: await freshDatabaseUrl(serverUrl!), dataDir: "" })))
  billingLimitsSuite("node-http, PostgreSQL server", async (catalogue) => startNodeServer(catalogue, await server()))
  billingAllowancesSuite("node-http, PostgreSQL server", async (catalogue) => startNodeServer(catalogue, await server()))
})
