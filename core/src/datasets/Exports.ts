/**
 * Version exports of a dataset (docs/datasets.md "Version exports"): a manifest of its items
 * frozen as a blob, and taken out of it, later, every item the dataset no longer has (a withdrawn
 * participant's takes).
 *
 * A manifest blob is never overwritten. Each version of it is a new blob,
 * `exports/<export id>/manifest.v<n>.<random>.json`, and the export record moves to it by
 * compare-and-set on its version (with its counts): of two rewrites at once one lands, the other
 * reads again, so a rewrite from an older read never puts back an item another one took out. A
 * version only ever lists fewer items than the one before. Blobs of the export older than its
 * current one are deleted after each move; what a crash left behind is deleted by the next.
 */
import { Effect } from "effect"
import type { Caller } from "../keys/Caller.ts"
import { datasetError, type DatasetErrorOf } from "./DatasetErrors.ts"
import { base64url, generateId, randomBytes } from "../kernel/Ids.ts"
import type { BlobStore } from "./BlobStore.ts"
import type { DocumentStore } from "../kernel/Documents.ts"
import { now } from "../kernel/Time.ts"
import type { DatasetRecord, ExportRecord, ItemRecord } from "./Records.ts"
import type { DatasetExport, DatasetItem } from "./Schemas.ts"

/** A frozen manifest as stored. */
interface Manifest {
  readonly dataset_id: string
  readonly export_id: string
  readonly created_at: string
  readonly items: ReadonlyArray<DatasetItem>
}

/** Moves of one export a scrub tries before it gives up (each lost to another rewrite). */
const MAX_SCRUB_ROUNDS = 20

const exportPrefix = (datasetPrefix: string, exportId: string) => `${datasetPrefix}exports/${exportId}/`

/** The version of a manifest blob from its key (`manifest.json`, of exports made before versions: 0). */
const manifestVersion = (key: string): number => Number(/\/manifest\.v(\d+)\.[^/]*\.json$/.exec(key)?.[1] ?? 0)

const countsOf = (items: ReadonlyArray<DatasetItem>) => ({ items: items.length, bytes: items.reduce((sum, i) => sum + i.bytes, 0) })

export const toExport = (e: ExportRecord): DatasetExport => ({
  id: e.id,
  dataset_id: e.dataset_id,
  items: e.items,
  bytes: e.bytes,
  created_at: e.created_at
})

export interface ExportDeps {
  readonly blobs: BlobStore["Service"]
  readonly datasets: DocumentStore<DatasetRecord>
  readonly items: DocumentStore<ItemRecord>
  readonly exports: DocumentStore<ExportRecord>
  /** The caller's dataset, not being deleted; 404 otherwise. */
  readonly owned: (accountId: string, id: string) => Effect.Effect<DatasetRecord, DatasetErrorOf<"dataset_not_found">>
  readonly datasetPrefix: (datasetId: string) => string
  readonly toDatasetItem: (item: ItemRecord) => DatasetItem
}

export const makeExports = ({ blobs, datasets, exports, items, owned, datasetPrefix, toDatasetItem }: ExportDeps) => {
  const notFound = (id: string, exportId: string) => datasetError("export_not_found", `No export ${exportId} of dataset ${id}.`)

  const writeManifest = (key: string, manifest: Manifest) =>
    blobs.put(key, { body: new TextEncoder().encode(JSON.stringify(manifest)), contentType: "application/json" })

  /** A new key for version `version` of the export's manifest. */
  const manifestKey = (record: Pick<ExportRecord, "dataset_id" | "id">, version: number) =>
    Effect.map(randomBytes(9), (random) => `${exportPrefix(datasetPrefix(record.dataset_id), record.id)}manifest.v${version}.${base64url(random)}.json`)

  /** The export's record and its manifest as they are now; undefined when the export is gone. */
  const current = (exportId: string) =>
    Effect.gen(function*() {
      // A rewrite may delete the blob just read from the record: read the record again.
      for (let round = 0; round < MAX_SCRUB_ROUNDS; round++) {
        const record = yield* exports.get(exportId)
        if (record === undefined) return undefined
        const blob = yield* blobs.get(record.manifest_key)
        if (blob !== undefined) return { record, manifest: JSON.parse(new TextDecoder().decode(blob.body)) as Manifest }
        const again = yield* exports.get(exportId)
        // Its blob gone and the record unmoved: the dataset is being deleted.
        if (again === undefined || again.version === record.version) return undefined
      }
      return yield* Effect.die(new Error(`the manifest of export ${exportId} kept moving under ${MAX_SCRUB_ROUNDS} reads`))
    })

  /** Deletes the blobs of the export older than its current manifest (left by a rewrite or a crash). */
  const deleteOlder = (record: ExportRecord) =>
    Effect.gen(function*() {
      const keys = yield* blobs.list(exportPrefix(datasetPrefix(record.dataset_id), record.id))
      // A newer one is a rewrite under way; it is its writer's to keep or delete.
      const older = keys.filter((k) => k !== record.manifest_key && manifestVersion(k) <= record.version)
      yield* Effect.forEach(older, blobs.delete, { concurrency: 4, discard: true })
    })

  /**
   * Takes out of the export's manifest every item the dataset no longer has, then deletes its
   * older manifests; answers the export as it is then (undefined: gone with its dataset).
   */
  const scrub = (exportId: string) =>
    Effect.gen(function*() {
      for (let round = 0; round < MAX_SCRUB_ROUNDS; round++) {
        const found = yield* current(exportId)
        if (found === undefined) return undefined
        const { manifest, record } = found
        const present = new Set((yield* items.list(record.dataset_id)).map((i) => i.id))
        const kept = manifest.items.filter((i) => present.has(i.id))
        if (kept.length === manifest.items.length) {
          yield* deleteOlder(record)
          return record
        }
        const version = record.version + 1
        const key = yield* manifestKey(record, version)
        yield* writeManifest(key, { ...manifest, items: kept })
        const next: ExportRecord = { ...record, ...countsOf(kept), manifest_key: key, version }
        if (yield* exports.swap(next)) {
          yield* deleteOlder(next)
          return next
        }
        yield* blobs.delete(key)
      }
      return yield* Effect.die(new Error(`export ${exportId} moved under ${MAX_SCRUB_ROUNDS} rewrites in a row`))
    })

  /** Every export of the dataset, scrubbed of the items the dataset no longer has. */
  const scrubExports = (datasetId: string) =>
    Effect.flatMap(exports.list(datasetId), (all) => Effect.forEach(all, (e) => scrub(e.id), { concurrency: 4, discard: true }))

  /**
   * A version export: the manifest of the items as they are now, frozen as a blob under the
   * dataset's prefix (so the dataset's deletion takes it too). Bytes are not copied: an item is
   * never changed once stored. Scrubbed once recorded: a withdrawal that listed the exports before
   * this one was recorded has not seen it.
   */
  const createExport = (caller: Caller, id: string) =>
    Effect.gen(function*() {
      yield* owned(caller.account.id, id)
      const all = (yield* items.list(id)).map(toDatasetItem)
      const exportId = yield* generateId("dx")
      const created_at = yield* now
      const record: ExportRecord = {
        id: exportId,
        dataset_id: id,
        manifest_key: yield* manifestKey({ dataset_id: id, id: exportId }, 0),
        ...countsOf(all),
        created_at,
        version: 0
      }
      yield* writeManifest(record.manifest_key, { dataset_id: id, export_id: exportId, created_at, items: all })
      yield* exports.insert(record)
      const after = yield* datasets.get(id)
      if (after === undefined || after.deleting_at !== null) {
        yield* blobs.delete(record.manifest_key)
        yield* exports.remove(record)
        return yield* Effect.fail(datasetError("dataset_not_found", `No dataset ${id} in this account.`))
      }
      return toExport((yield* scrub(exportId)) ?? record)
    })

  const listExports = (caller: Caller, id: string) =>
    Effect.gen(function*() {
      yield* owned(caller.account.id, id)
      return { data: (yield* exports.list(id)).map(toExport) }
    })

  const exportManifest = (caller: Caller, id: string, exportId: string) =>
    Effect.gen(function*() {
      yield* owned(caller.account.id, id)
      const found = (yield* exports.get(exportId))?.dataset_id === id ? yield* current(exportId) : undefined
      if (found === undefined) return yield* Effect.fail(notFound(id, exportId))
      const present = new Set((yield* items.list(id)).map((i) => i.id))
      return { ...toExport(found.record), manifest: found.manifest.items.map((i) => ({ ...i, available: present.has(i.id) })) }
    })

  return { createExport, listExports, exportManifest, scrubExports } as const
}
