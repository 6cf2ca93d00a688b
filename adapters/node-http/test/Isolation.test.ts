/**
 * The isolation matrix (test-harness IsolationMatrix.ts) through the real Node server on the
 * embedded Postgres (PGlite), and on a PostgreSQL server when TEST_DATABASE_URL is set; the
 * catalogue's machines point at a reference machine so both accounts have usage.
 */
import { startReferenceMachine } from "@model-platform/reference-machine/ReferenceMachine"
import { fixtureCatalogue } from "@model-platform/test-harness/Fixtures"
import type { ShellUnderTest } from "@model-platform/test-harness/HttpSuite"
import { isolationMatrixSuite, withMachinesAt } from "@model-platform/test-harness/IsolationMatrix"
import { Layer } from "effect"
import { describe } from "vitest"
import { Database } from "@model-platform/postgres-stores/database"
import { PgPlatformStores } from "@model-platform/postgres-stores"
import { freshDatabaseUrl, startNodeServer } from "./support.ts"

const models = [{ id: "chat-small", kind: "chat" as const }, { id: "embed-small", kind: "embeddings" as const }]

const withMachine = async (start: (machineUrl: string) => Promise<ShellUnderTest>): Promise<ShellUnderTest> => {
  const machine = await startReferenceMachine({ port: 0, models })
  const shell = await start(machine.url)
  return { ...shell, close: async () => {
    await shell.close()
    await machine.close()
  } }
}

isolationMatrixSuite("node-http, embedded Postgres", () =>
  withMachine((url) =>
    startNodeServer(
      withMachinesAt(fixtureCatalogue, url),
      PgPlatformStores.pipe(Layer.provide(Database.layer({ dataDir: Database.MEMORY })))
    )
  ))

const serverUrl = process.env.TEST_DATABASE_URL
describe.skipIf(serverUrl === undefined)("on a PostgreSQL server (TEST_DATABASE_URL)", () => {
  isolationMatrixSuite("node-http, PostgreSQL server", () =>
    withMachine(async (url) =>
      startNodeServer(
        withMachinesAt(fixtureCatalogue, url),
        PgPlatformStores.pipe(Layer.provide(Database.layer({ databaseUrl: await freshDatabaseUrl(serverUrl!), dataDir: "" })))
      )
    ))
})
