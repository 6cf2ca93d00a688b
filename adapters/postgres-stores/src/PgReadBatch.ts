/**
 * Reads by id that many requests make at the same moment, one statement per batch: a key's agent
 * and plan are read at every inference call (core gateway/KeyStanding.ts), so under load 16 calls
 * would cost 16 round trips for each kind of record. Grouped by core's Batcher (kernel/Batcher.ts),
 * a read alone goes at once, and reads asked while one batch runs go together in the next: each
 * read is still made after it was asked, so it never answers from before its request.
 */
import { makeBatcher } from "@model-platform/core/kernel"
import { Effect } from "effect"

/** The most ids in one statement. */
const MAX_BATCH = 64

/** `readMany(ids)` (the records found, any order) as a read of one id; undefined when not found. */
export const batchedById = <A extends { readonly id: string }>(
  readMany: (ids: ReadonlyArray<string>) => Effect.Effect<ReadonlyArray<A>>
): (id: string) => Effect.Effect<A | undefined> => {
  const batcher = makeBatcher(
    (ids: ReadonlyArray<string>) =>
      Effect.map(readMany([...new Set(ids)]), (records) => {
        const byId = new Map(records.map((record) => [record.id, record]))
        return ids.map((id) => byId.get(id))
      }),
    MAX_BATCH
  )
  return batcher.submit
}
