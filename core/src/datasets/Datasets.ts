/**
 * The datasets use-cases (docs/datasets.md): an account's datasets with their counts, their items
 * (uploads and fieldwork takes) with the bytes in the BlobStore, reviews, version exports, and a
 * deletion that leaves nothing behind and that any process resumes after a crash.
 *
 * Where bytes live: everything of a dataset is under `datasets/<id>/` in the BlobStore
 * (`datasetPrefix`), so its deletion is one prefix, whatever a crash left half written.
 */
import { Context, Duration, Effect, Layer } from "effect"
import type { Caller } from "../keys/Caller.ts"
import { datasetError } from "./DatasetErrors.ts"
import { generateId } from "../kernel/Ids.ts"
import { BlobStore } from "./BlobStore.ts"
import { DocumentStores } from "../kernel/DocumentStores.ts"
import { updateDocument } from "../kernel/Documents.ts"
import { now } from "../kernel/Time.ts"
import { repeatInBackground } from "../kernel/BackgroundJobs.ts"
import { makeExports } from "./Exports.ts"
import {
  DatasetDocuments,
  type DatasetRecord,
  DELETIONS_OWNER,
  DeletionDocuments,
  type DeletionRecord,
  ExportDocuments,
  ItemDocuments,
  type ItemRecord
} from "./Records.ts"
import type {
  CreateDataset,
  Dataset,
  DatasetDeleted,
  DatasetItem,
  DatasetKind,
  DatasetSource,
  ReviewItem
} from "./Schemas.ts"

/** Where every blob of a dataset is kept. */
export const datasetPrefix = (datasetId: string) => `datasets/${datasetId}/`

export const toDatasetItem = (item: ItemRecord): DatasetItem => ({
  id: item.id,
  name: item.name,
  content_type: item.content_type,
  bytes: item.bytes,
  sha256: item.sha256,
  duration_ms: item.duration_ms,
  participant_id: item.participant_id,
  prompt_id: item.prompt_id,
  status: item.status,
  review_note: item.review_note,
  reviewed_at: item.reviewed_at,
  created_at: item.created_at
})

const notFound = (id: string) => datasetError("dataset_not_found", `No dataset ${id} in this account.`)

/** The dataset was deleted while an item was being added: the item is gone too. */
export const datasetDeleted = (id: string) =>
  datasetError("dataset_deleted", `Dataset ${id} has been deleted; nothing more can be added to it.`)

export interface DatasetFilters {
  readonly source?: DatasetSource | undefined
  readonly kind?: DatasetKind | undefined
}

const make = Effect.gen(function*() {
  const stores = yield* DocumentStores
  const blobs = yield* BlobStore
  const datasets = stores.of(DatasetDocuments)
  const items = stores.of(ItemDocuments)
  const exports = stores.of(ExportDocuments)
  const deletions = stores.of(DeletionDocuments)

  /** The dataset of `accountId`, not being deleted; 404 otherwise. */
  const owned = (accountId: string, id: string) =>
    Effect.flatMap(datasets.get(id), (d) =>
      d === undefined || d.account_id !== accountId || d.deleting_at !== null ? Effect.fail(notFound(id)) : Effect.succeed(d))

  const view = (d: DatasetRecord) =>
    Effect.map(items.list(d.id), (all): Dataset => ({
      id: d.id,
      name: d.name,
      source: d.source,
      kind: d.kind,
      project_id: d.project_id,
      items: all.length,
      bytes: all.reduce((sum, i) => sum + i.bytes, 0),
      created_at: d.created_at,
      // An item added is a change of the dataset too.
      updated_at: all.reduce((latest, i) => (i.created_at > latest ? i.created_at : latest), d.updated_at)
    }))

  /** A new dataset of the account (POST /datasets makes upload ones; fieldwork its own). */
  const insertDataset = (accountId: string, fields: Pick<DatasetRecord, "name" | "source" | "kind" | "project_id">) =>
    Effect.gen(function*() {
      const at = yield* now
      const record: DatasetRecord = {
        id: yield* generateId("ds"),
        account_id: accountId,
        ...fields,
        deleting_at: null,
        created_at: at,
        updated_at: at,
        version: 0
      }
      yield* datasets.insert(record)
      return record
    })

  const list = (caller: Caller, filters: DatasetFilters) =>
    Effect.gen(function*() {
      const mine = (yield* datasets.list(caller.account.id)).filter((d) =>
        d.deleting_at === null &&
        (filters.source === undefined || d.source === filters.source) &&
        (filters.kind === undefined || d.kind === filters.kind)
      )
      return { data: yield* Effect.forEach(mine, view, { concurrency: 8 }) }
    })

  const create = (caller: Caller, body: CreateDataset) =>
    Effect.flatMap(insertDataset(caller.account.id, { ...body, source: "upload", project_id: null }), view)

  const get = (caller: Caller, id: string) => Effect.flatMap(owned(caller.account.id, id), view)

  /**
   * Deletes what is left of a deleted dataset: every blob under its prefix (items, takes, exports,
   * and whatever a crash left unlisted), its item and export records, the dataset, then the
   * deletion record. Each step may run again: a resumed deletion repeats none of them wrongly.
   */
  const finishDeletion = (deletion: DeletionRecord) =>
    Effect.gen(function*() {
      const datasetId = deletion.dataset_id
      yield* blobs.deletePrefix(datasetPrefix(datasetId))
      for (const item of yield* items.list(datasetId)) yield* items.remove(item)
      for (const e of yield* exports.list(datasetId)) yield* exports.remove(e)
      const dataset = yield* datasets.get(datasetId)
      if (dataset !== undefined) yield* datasets.remove(dataset)
      yield* deletions.remove(deletion)
    })

  const remove = (caller: Caller, id: string) =>
    Effect.gen(function*() {
      const dataset = yield* owned(caller.account.id, id)
      // The deletion is recorded before anything goes, so a crash from here on is resumed by
      // `finishDeletions`; then the dataset is marked, so nothing more is added or shown.
      const at = yield* now
      const deletion: DeletionRecord = {
        id: yield* generateId("del"),
        dataset_id: id,
        account_id: dataset.account_id,
        owner: DELETIONS_OWNER,
        created_at: at,
        version: 0
      }
      yield* deletions.insert(deletion)
      yield* updateDocument(datasets, id, (d) => Effect.succeed(d.deleting_at === null ? { ...d, deleting_at: at } : undefined))
      yield* finishDeletion(deletion)
      return { id, deleted: true } as DatasetDeleted
    })

  /** Resumes every deletion a crash cut short; answers how many. */
  const finishDeletions = Effect.gen(function*() {
    const pending = yield* deletions.list(DELETIONS_OWNER)
    // A deletion another process is running now is run here too: every step is idempotent.
    for (const deletion of pending) yield* finishDeletion(deletion)
    return pending.length
  })

  const itemsOf = (caller: Caller, id: string) =>
    Effect.gen(function*() {
      yield* owned(caller.account.id, id)
      return { data: (yield* items.list(id)).map(toDatasetItem) }
    })

  const review = (caller: Caller, id: string, itemId: string, body: ReviewItem) =>
    Effect.gen(function*() {
      yield* owned(caller.account.id, id)
      const at = yield* now
      const reviewed = yield* updateDocument(items, itemId, (item) =>
        Effect.succeed(
          item.dataset_id !== id ? undefined : { ...item, status: body.status, review_note: body.note ?? null, reviewed_at: at }
        ))
      if (reviewed === undefined || reviewed.dataset_id !== id) {
        return yield* datasetError("item_not_found", `No item ${itemId} in dataset ${id}.`)
      }
      return toDatasetItem(reviewed)
    })

  const { createExport, listExports, exportManifest, scrubExports } = makeExports({
    blobs,
    datasets,
    items,
    exports,
    owned,
    datasetPrefix,
    toDatasetItem
  })

  /**
   * Stores an item's bytes then its record, then looks at the dataset again: if its deletion began
   * meanwhile, the item removes itself (the deletion may have listed before it was written).
   */
  const addItem = (item: ItemRecord, body: Uint8Array) =>
    Effect.flatMap(blobs.put(item.blob_key, { body, contentType: item.content_type }), () => recordItem(item))

  /** The record of an item whose bytes are stored, then the dataset looked at again (addItem). */
  const recordItem = (item: ItemRecord) =>
    Effect.gen(function*() {
      yield* items.insert(item)
      const dataset = yield* datasets.get(item.dataset_id)
      if (dataset === undefined || dataset.deleting_at !== null) {
        yield* blobs.delete(item.blob_key)
        yield* items.remove(item)
        return yield* Effect.fail(datasetDeleted(item.dataset_id))
      }
      return item
    })

  /**
   * Removes items of a dataset (their bytes first, then their records, then their lines in every
   * export manifest): a participant's takes on withdrawal. Each step may run again, so a removal
   * cut short is finished by removing again. Answers how many records it removed.
   */
  const removeItems = (datasetId: string, ids: ReadonlyArray<string>) =>
    Effect.gen(function*() {
      const removed = yield* Effect.forEach(ids, (id) =>
        Effect.gen(function*() {
          const item = yield* items.get(id)
          if (item === undefined || item.dataset_id !== datasetId) return 0 as number
          yield* blobs.delete(item.blob_key)
          return (yield* items.remove(item)) ? 1 : 0 as number
        }), { concurrency: 4 })
      yield* scrubExports(datasetId)
      return removed.reduce((a, b) => a + b, 0)
    })

  return {
    insertDataset,
    list,
    create,
    get,
    remove,
    finishDeletions,
    createExport,
    listExports,
    exportManifest,
    finishDeletion,
    itemsOf,
    review,
    addItem,
    recordItem,
    ownedRecord: owned,
    removeItems,
    items,
    datasets,
    blobs
  } as const
})

/** How often every process looks for deletions a crash cut short. */
const DELETION_SWEEP_INTERVAL = Duration.minutes(1)

export class Datasets extends Context.Service<Datasets, Effect.Success<typeof make>>()(
  "@model-platform/core/datasets/Datasets"
) {
  static readonly layer = Layer.effect(Datasets, make)

  /**
   * Resumes deletions a crash cut short, at start and then every minute, for as long as the layer
   * lives; a failure is logged, never fatal.
   */
  static readonly sweeper = Layer.effectDiscard(Effect.gen(function*() {
    const { finishDeletions } = yield* Datasets
    const once = finishDeletions.pipe(
      Effect.tap((n) => n > 0 ? Effect.logInfo(`finished ${n} dataset deletion(s)`) : Effect.void),
      Effect.catchCause((cause) => Effect.logWarning("could not finish dataset deletions; retrying later", cause))
    )
    yield* repeatInBackground(once, DELETION_SWEEP_INTERVAL)
  }))
}
