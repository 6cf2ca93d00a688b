/**
 * Fieldwork under any interleaving (test-harness FieldworkProperty.ts, WithdrawalExportProperty.ts) on the Node server's stores:
 * records in PGlite, blobs on disk in a fresh directory.
 */
import { fieldworkProperty } from "@model-platform/test-harness/FieldworkProperty"
import { withdrawalExportProperty } from "@model-platform/test-harness/WithdrawalExportProperty"
import { Effect, Layer } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { BlobStoreDisk } from "../src/DiskBlobStore.ts"
import * as Database from "@model-platform/postgres-stores/database"
import { DocumentStoresPg } from "@model-platform/postgres-stores"

const blobsOnDisk = Layer.unwrap(Effect.acquireRelease(
  Effect.sync(() => Fs.mkdtempSync(Path.join(Os.tmpdir(), "fieldwork-race-"))),
  (dir) => Effect.sync(() => Fs.rmSync(dir, { recursive: true, force: true }))
).pipe(Effect.map((dir) => BlobStoreDisk(dir, { fsync: false }))))

fieldworkProperty(
  "PGlite and blobs on disk",
  Layer.mergeAll(DocumentStoresPg.pipe(Layer.provide(Database.layer({ dataDir: Database.MEMORY }))), blobsOnDisk),
  25
)

withdrawalExportProperty(
  "PGlite and blobs on disk",
  Layer.mergeAll(DocumentStoresPg.pipe(Layer.provide(Database.layer({ dataDir: Database.MEMORY }))), blobsOnDisk),
  25
)
