/**
 * Datasets and the Fieldwork participant flow (test-harness FieldworkSuite.ts) through the real
 * Node server with its blobs on disk: on the embedded Postgres (PGlite), and on a PostgreSQL
 * server when TEST_DATABASE_URL is set. The suite looks into the blob directory through a store of
 * its own over the same directory, as a second process would.
 */
import { fieldworkSuite } from "@model-platform/test-harness/FieldworkSuite"
import type { Stores } from "../src/Server.ts"
import { BlobStore } from "@model-platform/core/datasets"
import { Effect, Layer } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { describe } from "vitest"
import { BlobStoreDisk } from "../src/DiskBlobStore.ts"
import { Database } from "@model-platform/postgres-stores/database"
import { PgPlatformStores } from "@model-platform/postgres-stores"
import { fixtureCatalogue } from "@model-platform/test-harness/Fixtures"
import { freshDatabaseUrl, startNodeServer } from "./support.ts"

const onDisk = async (stores: Layer.Layer<Stores, unknown>) => {
  const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "fieldwork-blobs-"))
  const server = await startNodeServer(fixtureCatalogue, stores, { platform: { blobs: BlobStoreDisk(dir, { fsync: false }) } })
  const look = BlobStoreDisk(dir, { fsync: false })
  return {
    ...server,
    blobs: (prefix: string) => Effect.runPromise(Effect.flatMap(BlobStore, (b) => b.list(prefix)).pipe(Effect.provide(look))),
    blob: (key: string) => Effect.runPromise(Effect.flatMap(BlobStore, (b) => b.get(key)).pipe(Effect.provide(look))).then((b) => b?.body),
    close: async () => {
      await server.close()
      Fs.rmSync(dir, { recursive: true, force: true })
    }
  }
}

fieldworkSuite("node-http, embedded Postgres, blobs on disk", () =>
  onDisk(PgPlatformStores.pipe(Layer.provide(Database.layer({ dataDir: Database.MEMORY })))))

const serverUrl = process.env.TEST_DATABASE_URL
describe.skipIf(serverUrl === undefined)("on a PostgreSQL server (TEST_DATABASE_URL)", () => {
  fieldworkSuite("node-http, PostgreSQL server, blobs on disk", async () =>
    onDisk(PgPlatformStores.pipe(Layer.provide(Database.layer({ databaseUrl: await freshDatabaseUrl(serverUrl!), dataDir: "" })))))
})
