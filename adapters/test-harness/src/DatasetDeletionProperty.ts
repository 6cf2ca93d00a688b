/**
 * A dataset's deletion survives a crash at any point (docs/datasets.md "Deleting"): for every k,
 * the DELETE stops dead at its k-th store operation (a blob or a record), as a killed process
 * would; the sweeper every process runs (`finishDeletions`) then finishes it, and nothing of the
 * dataset is left: no blob under its prefix (not even one an upload cut short left unlisted), no
 * item, export or deletion record, no dataset. Every k up to the first at which the DELETE runs to
 * its end is tried. Each shell runs it on its stores.
 */
import { assert, describe, it } from "@effect/vitest"
import type { Caller } from "@model-platform/core/keys"
import { BlobStore, Datasets, DeletionDocuments, DELETIONS_OWNER, type ItemRecord } from "@model-platform/core/datasets"
import { DocumentStores, generateId, now } from "@model-platform/core/kernel"
import { Effect, Exit, Layer } from "effect"

class Crash extends Error {}

/** Counts store operations and dies at the armed one. */
const makeCrasher = () => {
  let count = 0
  let at = Number.POSITIVE_INFINITY
  const step = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.suspend(() => (++count === at ? Effect.die(new Crash(`crash at operation ${at}`)) : effect))
  const wrap = <S extends object>(service: S): S =>
    Object.fromEntries(Object.entries(service).map(([name, f]) => [
      name,
      typeof f === "function" ? (...args: Array<unknown>) => step((f as (...a: Array<unknown>) => Effect.Effect<unknown>)(...args)) : f
    ])) as S
  return {
    wrap,
    arm: (k: number) => {
      count = 0
      at = k
    },
    disarm: () => {
      at = Number.POSITIVE_INFINITY
    }
  }
}

export const datasetDeletionProperty = <E>(name: string, stores: Layer.Layer<DocumentStores | BlobStore, E>) =>
  describe(`a dataset's deletion resumed after a crash at any step, on ${name}`, () => {
    it.effect("every step: the sweeper leaves no blob and no record of the dataset", () =>
      Effect.gen(function*() {
        const crasher = makeCrasher()
        const crashing = Layer.mergeAll(
          Layer.effect(DocumentStores, Effect.map(DocumentStores, (s) => DocumentStores.of({ of: (kind) => crasher.wrap(s.of(kind)) }))),
          Layer.effect(BlobStore, Effect.map(BlobStore, (b) => BlobStore.of(crasher.wrap(b))))
        ).pipe(Layer.provide(stores))
        const { datasets, blobs, deletions } = yield* Effect.gen(function*() {
          return {
            datasets: yield* Datasets,
            blobs: yield* BlobStore,
            deletions: (yield* DocumentStores).of(DeletionDocuments)
          }
        }).pipe(Effect.provide(Datasets.layer.pipe(Layer.provideMerge(crashing))))

        const accountId = yield* generateId("acct")
        const caller = { account: { id: accountId } } as unknown as Caller
        let finished = false
        let gone = 0
        for (let k = 1; !finished && k < 200; k++) {
          const dataset = yield* datasets.create(caller, { name: `crash ${k}`, kind: "audio" })
          for (let i = 0; i < 3; i++) {
            const id = yield* generateId("it")
            const item: ItemRecord = {
              id, dataset_id: dataset.id, blob_key: `datasets/${dataset.id}/items/${id}`, name: `${i}.wav`, content_type: "audio/wav",
              bytes: 3, sha256: "0".repeat(64), duration_ms: null, participant_id: null, prompt_id: null, status: "pending_review",
              review_note: null, reviewed_at: null, meta: null, created_at: yield* now, version: 0
            }
            yield* datasets.addItem(item, new Uint8Array([1, 2, 3]))
          }
          yield* datasets.createExport(caller, dataset.id)
          // What an upload cut short leaves: bytes under the prefix that no record lists.
          yield* blobs.put(`datasets/${dataset.id}/items/orphan`, { body: new Uint8Array([9]), contentType: "audio/wav" })

          crasher.arm(k)
          const exit = yield* Effect.exit(datasets.remove(caller, dataset.id))
          crasher.disarm()
          finished = Exit.isSuccess(exit)
          if (!finished) {
            const crashed = Exit.isFailure(exit) && exit.cause.reasons.some((r) => r._tag === "Die" && r.defect instanceof Crash)
            assert.isTrue(crashed, `k=${k}: the DELETE failed otherwise: ${String(exit)}`)
          }
          yield* datasets.finishDeletions
          // Either the DELETE never took (it crashed before its deletion was recorded) and the
          // dataset is whole, or it is entirely gone: never anything in between.
          const left = yield* datasets.datasets.get(dataset.id)
          if (left !== undefined && left.deleting_at === null && !finished) {
            assert.lengthOf(yield* datasets.items.list(dataset.id), 3, `k=${k}: a dataset left whole has its items`)
            assert.lengthOf(yield* blobs.list(`datasets/${dataset.id}/`), 5, `k=${k}: a dataset left whole has its blobs`)
            continue
          }
          assert.deepStrictEqual(yield* blobs.list(`datasets/${dataset.id}/`), [], `k=${k}: blobs left`)
          assert.deepStrictEqual(yield* datasets.items.list(dataset.id), [], `k=${k}: items left`)
          assert.isUndefined(left, `k=${k}: the dataset is left`)
          const pending = (yield* deletions.list(DELETIONS_OWNER)).filter((d) => d.dataset_id === dataset.id)
          assert.deepStrictEqual(pending, [], `k=${k}: its deletion record is left`)
          const listed = yield* datasets.list(caller, {})
          assert.isFalse(listed.data.some((d) => d.id === dataset.id), `k=${k}: still listed`)
          gone++
        }
        assert.isTrue(finished, "the DELETE never ran to its end")
        // Crashes after the deletion was recorded were all finished by the sweeper.
        assert.isAbove(gone, 5)
      }).pipe(Effect.provide(stores)), 120_000)
  })
