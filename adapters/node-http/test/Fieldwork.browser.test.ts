/**
 * Fieldwork's participant page end to end on the Node server (the shared flow of
 * adapters/test-harness/src/FieldworkBrowserFlow.ts): PGlite, the takes on disk in a fresh
 * directory, which the flow looks into through a store of its own over the same directory.
 * Screenshots in adapters/node-http/test-artifacts/fieldwork/ (gitignored).
 */
import { BlobStore } from "@model-platform/core/datasets"
import { fieldworkBrowserFlow } from "@model-platform/test-harness/FieldworkBrowserFlow"
import { fixtureCatalogue } from "@model-platform/test-harness/Fixtures"
import { Effect, Layer } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { BlobStoreDisk } from "../src/DiskBlobStore.ts"
import { Database } from "@model-platform/postgres-stores/database"
import { PgPlatformStores } from "@model-platform/postgres-stores"
import { startNodeServer } from "./support.ts"

fieldworkBrowserFlow({
  shell: "node-http, PGlite, blobs on disk",
  artifacts: Path.resolve(import.meta.dirname, "../test-artifacts/fieldwork"),
  start: async ({ clock }) => {
    const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "fieldwork-browser-blobs-"))
    const stores = PgPlatformStores.pipe(Layer.provide(Database.layer({ dataDir: Database.MEMORY })))
    const server = await startNodeServer(fixtureCatalogue, stores, { platform: { clock, blobs: BlobStoreDisk(dir, { fsync: false }) } })
    const look = <A>(use: (blobs: BlobStore["Service"]) => Effect.Effect<A>) =>
      Effect.runPromise(Effect.flatMap(BlobStore, use).pipe(Effect.provide(BlobStoreDisk(dir, { fsync: false }))))
    return {
      url: server.url,
      accounts: `${server.url}/accounts`,
      ownerKey: server.ownerSecret,
      blobs: { list: (prefix) => look((b) => b.list(prefix)), get: (key) => look((b) => Effect.map(b.get(key), (blob) => blob?.body)) },
      stop: async () => {
        await server.close()
        Fs.rmSync(dir, { recursive: true, force: true })
      }
    }
  }
})
