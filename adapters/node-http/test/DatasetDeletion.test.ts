/**
 * A dataset's deletion resumed after a crash at any step (test-harness DatasetDeletionProperty.ts)
 * on the Node server's stores: records in PGlite, blobs on disk in a fresh directory.
 */
import { datasetDeletionProperty } from "@model-platform/test-harness/DatasetDeletionProperty"
import { Effect, Layer } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { BlobStoreDisk } from "../src/DiskBlobStore.ts"
import * as Database from "@model-platform/postgres-stores/database"
import { DocumentStoresPg } from "@model-platform/postgres-stores"

const blobsOnDisk = Layer.unwrap(Effect.acquireRelease(
  Effect.sync(() => Fs.mkdtempSync(Path.join(Os.tmpdir(), "deletion-blobs-"))),
  (dir) => Effect.sync(() => Fs.rmSync(dir, { recursive: true, force: true }))
).pipe(Effect.map((dir) => BlobStoreDisk(dir, { fsync: false }))))

datasetDeletionProperty(
  "PGlite and blobs on disk",
  Layer.mergeAll(DocumentStoresPg.pipe(Layer.provide(Database.layer({ dataDir: Database.MEMORY }))), blobsOnDisk)
)
